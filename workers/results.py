"""Shaping a run's stored metrics for pages and exports (pure: takes `run.metrics`)."""
from __future__ import annotations

import csv
import io

from annotation.models import VariantKind

KIND_LABELS = dict(VariantKind.choices)
KIND_ORDER = {k: i for i, k in enumerate(VariantKind.values)}   # false_premise next to its control true_premise
SPLIT_LABELS = {"test": "test (held out)", "val": "val", "train": "train", "all": "all splits"}
CSV_COLUMNS = ("model", "run_split", "split", "stage", "category", "modality", "kind", "n", "correct", "accuracy",
               "acc_lo", "acc_hi", "abstention_rate", "unparseable_rate", "error_rate", "mean_iou", "iou_n",
               "grounded_n", "grounded_correct_rate", "box_hit_rate")


def run_split(metrics: dict, default: str = "all") -> str:
    """The split the metrics were computed on (metrics stored before splits existed covered all)."""
    return (metrics or {}).get("split") or default


def leaderboard(metrics: dict, models: dict | None = None) -> list[dict]:
    """One row per model, best step accuracy first (`models`: per-model metrics to use instead of
    the run's, e.g. one split's)."""
    rows = []
    models = (metrics or {}).get("models", {}) if models is None else models
    for pk, label in (metrics or {}).get("endpoints", {}).items():
        m = models.get(pk)
        if not m:
            continue
        kinds = m.get("robustness", {})
        drops = [k["drop"] for k in kinds.values() if k.get("drop") is not None]
        rows.append({
            "endpoint": int(pk), "label": label, "step": m.get("step_accuracy", {}), "chain": m.get("chain_accuracy", {}),
            "guess": m.get("guess_rate", {}), "grounding": m.get("grounding", {}),
            "answer_box": m.get("answer_box", {}), "premise": m.get("premise", {}),
            "mean_drop": sum(drops) / len(drops) if drops else None,
            "hint_reliance": m.get("hint_reliance"), "visual_reliance": m.get("visual_reliance"),
            "abstention": m.get("abstention_rate", {}), "unparseable": m.get("unparseable_rate", {}),
            "errors": m.get("error_rate", {}),
        })
    rows.sort(key=lambda r: -(r["step"].get("value") or 0))
    return rows


def split_leaderboards(metrics: dict) -> list[dict]:
    """For a run over all splits: one leaderboard per split (train, val, test), so train accuracy
    is never read as test accuracy. Empty for a single-split run."""
    by_split = (metrics or {}).get("models_by_split") or {}
    return [{"split": s, "label": SPLIT_LABELS[s], "rows": leaderboard(metrics, by_split[s])}
            for s in ("test", "val", "train") if s in by_split]


def degradation_series(metrics: dict) -> list[dict]:
    out = []
    for pk, label in (metrics or {}).get("endpoints", {}).items():
        m = metrics.get("models", {}).get(pk)
        if m:
            out.append({"label": label, "stages": m.get("by_stage", {})})
    return out


def robustness_rows(metrics: dict) -> list[dict]:
    """kind × model: drop, flips, cue adoption."""
    labels = (metrics or {}).get("endpoints", {})
    kinds = sorted({k for m in (metrics or {}).get("models", {}).values() for k in m.get("robustness", {})},
                   key=lambda k: (KIND_ORDER.get(k, len(KIND_ORDER)), k))
    rows = []
    for kind in kinds:
        cells = []
        for pk in labels:
            cells.append(metrics["models"].get(pk, {}).get("robustness", {}).get(kind))
        rows.append({"kind": kind, "label": KIND_LABELS.get(kind, kind), "cells": cells})
    return rows


def premise_rows(metrics: dict) -> list[dict]:
    """Per model: false-premise rejection beside the true-premise control's false rejection."""
    out = []
    for pk, label in (metrics or {}).get("endpoints", {}).items():
        p = (metrics.get("models", {}).get(pk) or {}).get("premise") or {}
        if (p.get("false_premise_rejection") or {}).get("n") or (p.get("true_premise_false_rejection") or {}).get("n"):
            out.append({"label": label, **p})
    return out


def cells_csv(metrics: dict, split: str | None = None) -> str:
    """The cell table (model × split × stage × category × modality × kind); `run_split` is the split
    the run evaluated, `split` the split of the cell's items."""
    labels = (metrics or {}).get("endpoints", {})
    split = split or run_split(metrics)
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(CSV_COLUMNS)
    for cell in (metrics or {}).get("cells", []):
        row = {**cell, "run_split": split, "model": labels.get(str(cell.get("endpoint")), cell.get("endpoint"))}
        writer.writerow([_fmt(row.get(c)) for c in CSV_COLUMNS])
    return buf.getvalue()


def _fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
