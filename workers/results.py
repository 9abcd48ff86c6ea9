"""Shaping a run's stored metrics for pages and exports (pure: takes `run.metrics`)."""
from __future__ import annotations

import csv
import io

from annotation.models import VariantKind

KIND_LABELS = dict(VariantKind.choices)
CSV_COLUMNS = ("model", "stage", "category", "modality", "kind", "n", "correct", "accuracy", "acc_lo", "acc_hi",
               "abstention_rate", "unparseable_rate", "error_rate", "mean_iou", "iou_n")


def leaderboard(metrics: dict) -> list[dict]:
    """One row per model, best step accuracy first."""
    rows = []
    for pk, label in (metrics or {}).get("endpoints", {}).items():
        m = metrics.get("models", {}).get(pk)
        if not m:
            continue
        kinds = m.get("robustness", {})
        drops = [k["drop"] for k in kinds.values() if k.get("drop") is not None]
        rows.append({
            "endpoint": int(pk), "label": label, "step": m.get("step_accuracy", {}), "chain": m.get("chain_accuracy", {}),
            "guess": m.get("guess_rate", {}), "grounding": m.get("grounding", {}),
            "mean_drop": sum(drops) / len(drops) if drops else None,
            "hint_reliance": m.get("hint_reliance"), "visual_reliance": m.get("visual_reliance"),
            "abstention": m.get("abstention_rate", {}), "unparseable": m.get("unparseable_rate", {}),
            "errors": m.get("error_rate", {}),
        })
    rows.sort(key=lambda r: -(r["step"].get("value") or 0))
    return rows


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
    kinds = sorted({k for m in (metrics or {}).get("models", {}).values() for k in m.get("robustness", {})})
    rows = []
    for kind in kinds:
        cells = []
        for pk in labels:
            cells.append(metrics["models"].get(pk, {}).get("robustness", {}).get(kind))
        rows.append({"kind": kind, "label": KIND_LABELS.get(kind, kind), "cells": cells})
    return rows


def cells_csv(metrics: dict) -> str:
    labels = (metrics or {}).get("endpoints", {})
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(CSV_COLUMNS)
    for cell in (metrics or {}).get("cells", []):
        row = {**cell, "model": labels.get(str(cell.get("endpoint")), cell.get("endpoint"))}
        writer.writerow([_fmt(row.get(c)) for c in CSV_COLUMNS])
    return buf.getvalue()


def _fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
