"""Shaping a run's stored metrics for pages and exports (pure: takes `run.metrics`)."""
from __future__ import annotations

import csv
import io

from annotation.models import VariantKind
from annotation.variants.titles import kind_title
from common.palette import model_colour
from common.titles import filters_text

from .parsing import FAMILIES

KIND_LABELS = {kind: kind_title(kind) for kind in VariantKind.values}   # annotation/variants/titles.py
KIND_ORDER = {k: i for i, k in enumerate(VariantKind.values)}   # false_premise next to its control true_premise
SPLIT_LABELS = {"test": "test (held out)", "val": "val", "train": "train", "all": "all splits"}
CSV_COLUMNS = ("model", "run_split", "split", "stage", "category", "modality", "kind", "n", "correct", "accuracy",
               "acc_lo", "acc_hi", "answered", "answered_accuracy", "chance", "abstention_rate", "unparseable_rate",
               "error_rate", "mean_iou", "iou_n",
               "grounded_n", "grounded_correct_rate", "box_hit_rate")


def run_split(metrics: dict, default: str = "all") -> str:
    """The split the metrics were computed on (metrics stored before splits existed covered all)."""
    return (metrics or {}).get("split") or default


def leaderboard(metrics: dict, models: dict | None = None) -> list[dict]:
    """One row per model, best step accuracy first (`models`: per-model metrics to use instead of
    the run's, e.g. one split's). There is no mean robustness drop: kinds differ in what a drop means
    (a correct hint helps, image ablation should hurt), so robustness is reported kind by kind."""
    rows = []
    models = (metrics or {}).get("models", {}) if models is None else models
    for pk, label in (metrics or {}).get("endpoints", {}).items():
        m = models.get(pk)
        if not m:
            continue
        rows.append({
            "endpoint": int(pk), "label": label, "step": m.get("step_accuracy", {}),
            "answered": m.get("answered_accuracy", {}), "chain": m.get("chain_accuracy", {}),
            "guess": m.get("guess_rate", {}), "grounding": m.get("grounding", {}),
            "circular": (m.get("circular_eval") or {}).get("accuracy") or {},
            "answer_box": m.get("answer_box", {}), "premise": m.get("premise", {}),
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


def _models(metrics: dict) -> list[tuple[str, str, dict]]:
    """(endpoint pk, label, that model's metrics) in the run's model order."""
    models = (metrics or {}).get("models", {})
    return [(pk, label, models.get(pk) or {}) for pk, label in (metrics or {}).get("endpoints", {}).items()]


def _kind_order(kinds) -> list[str]:
    return sorted(kinds, key=lambda k: (k != "clean", KIND_ORDER.get(k, len(KIND_ORDER)), k))


def _keyed(d: dict, key):
    """Stage- or level-keyed entries: stored metrics have string keys, fresh ones int keys."""
    return (d or {}).get(key, (d or {}).get(str(key)))


def degradation_series(metrics: dict) -> list[dict]:
    """For the stage chart: each model's stage degradation (same chains, per kind), with its endpoint id (its
    colour, common.palette)."""
    return [{"endpoint": int(pk), "label": label, "degradation": m.get("stage_degradation") or {}}
            for pk, label, m in _models(metrics) if m]


def dose_series(metrics: dict) -> list[dict]:
    return [{"endpoint": int(pk), "label": label, "dose": m.get("dose_response") or {}}
            for pk, label, m in _models(metrics) if m.get("dose_response")]


def model_columns(metrics: dict) -> list[dict]:
    """The run's models in table order: endpoint id, label and colour (the same on every page and plot)."""
    return [{"id": int(pk), "label": label, "colour": model_colour(int(pk))}
            for pk, label in (metrics or {}).get("endpoints", {}).items()]


def filter_summary(item_filters: dict | None) -> str:
    """A run's item filters in words (common.titles.filters_text): "status: approved; category: Margin";
    "approved items" when there are none."""
    return filters_text(item_filters, "approved items")


def pivot(cells: list[dict], key: str, labels: dict) -> dict:
    """rows keyed by `key`, one accuracy cell per model (in label order)."""
    table: dict = {}
    for c in cells:  # cell rows carry accuracy / acc_lo / acc_hi; the template shows stats
        stat = {"k": c["correct"], "n": c["n"], "value": c["accuracy"], "lo": c["acc_lo"], "hi": c["acc_hi"]}
        table.setdefault(c[key], {})[str(c["endpoint"])] = stat
    return {"models": list(labels.values()),
            "rows": [(k, [row.get(pk) for pk in labels])
                     for k, row in sorted(table.items(), key=lambda kv: str(kv[0]))]}


def grounded_rows(metrics: dict, labels: dict) -> dict:
    """Joint answer + box items by stage and by category, CLEAN variants only (summed from the cell
    table, so no variant kind is mixed in): grounded-correct and box hit per model."""
    out = {"models": list(labels.values()), "rows": []}
    cells = [c for c in metrics.get("cells", []) if c.get("kind") == "clean" and c.get("grounded_n")]
    for key in ("stage", "category"):
        table: dict = {}
        for c in cells:
            slot = table.setdefault(c[key], {}).setdefault(str(c["endpoint"]), {"n": 0, "k": 0, "hits": 0})
            slot["n"] += c["grounded_n"]
            slot["k"] += c["grounded_correct"]
            slot["hits"] += c["box_hits"]
        for k, row in sorted(table.items(), key=lambda kv: str(kv[0])):
            shown = [None if pk not in row else {
                "n": row[pk]["n"], "grounded": {"k": row[pk]["k"], "n": row[pk]["n"],
                                                "value": row[pk]["k"] / row[pk]["n"], "lo": None, "hi": None},
                "hit": row[pk]["hits"] / row[pk]["n"]} for pk in labels]
            out["rows"].append((f"S{k}" if key == "stage" else k, shown))
    return out


def stage_tables(metrics: dict) -> list[dict]:
    """One table per variant kind (clean first): stage × model, accuracy on the same chains (those with
    clean predictions at all four stages), the chance of a uniform guess and the chance-corrected accuracy."""
    models = _models(metrics)
    kinds = _kind_order({k for _, _, m in models for k in ((m.get("stage_degradation") or {}).get("by_kind") or {})})
    tables = []
    for kind in kinds:
        rows = []
        for stage in (1, 2, 3, 4):
            cells = [_keyed(((m.get("stage_degradation") or {}).get("by_kind") or {}).get(kind), stage)
                     for _, _, m in models]
            if any(cells):
                rows.append({"stage": stage, "cells": cells})
        if rows:
            tables.append({"kind": kind, "label": KIND_LABELS.get(kind, kind), "rows": rows})
    return tables


def stage_chains(metrics: dict) -> list[dict]:
    """Per model: how many chains reach S4 (the chains every stage table is computed on) and the
    paired drop from S1 at each later stage (clean)."""
    out = []
    for _, label, m in _models(metrics):
        deg = m.get("stage_degradation") or {}
        out.append({"label": label, "chains": deg.get("chains"),
                    "drop": [_keyed(deg.get("drop") or {}, s) for s in (2, 3, 4)]})
    return out


def robustness_groups(metrics: dict) -> list[dict]:
    """Kinds grouped by what their drop means: harmful (a drop is a failure), helpful (the cue is right:
    a gain is expected) and diagnostic (image ablation: a large drop shows the model uses the image;
    true premise: the control of false premise). One row per kind, one cell per model."""
    models = _models(metrics)
    groups = {"harmful": [], "helpful": [], "diagnostic": []}
    kinds = _kind_order({k for _, _, m in models for k in m.get("robustness", {})})
    for kind in kinds:
        cells = [m.get("robustness", {}).get(kind) for _, _, m in models]
        effect = next((c.get("effect") for c in cells if c and c.get("effect")), "harmful")
        groups.setdefault(effect, []).append({"kind": kind, "label": KIND_LABELS.get(kind, kind), "cells": cells,
                                              "by_stage": [[_keyed((c or {}).get("by_stage") or {}, s)
                                                            for s in (1, 2, 3, 4)] for c in cells]})
    titles = {"harmful": "Harmful perturbations (a drop is a failure)",
              "helpful": "Helpful cues (a correct hint or box: a gain is expected)",
              "diagnostic": "Diagnostic kinds (image ablation: a large drop shows the image is used)"}
    return [{"effect": e, "title": titles.get(e, e), "rows": rows} for e, rows in groups.items() if rows]


def robustness_rows(metrics: dict) -> list[dict]:
    """kind × model (every kind, one list): drop, flips, cue adoption."""
    return [row for group in robustness_groups(metrics) for row in group["rows"]]


def cue_rows(metrics: dict) -> list[dict]:
    """Cue adoption per cue kind (and per sub-kind of visual cues): raw, chance-corrected (minus how often
    the clean answer already was the cue's) and normalised, one cell per model."""
    models = _models(metrics)
    out = []
    for kind in _kind_order({k for _, _, m in models for k in m.get("robustness", {})}):
        cells = [m.get("robustness", {}).get(kind) for _, _, m in models]
        if any(c and (c.get("cue_adoption_rate") or {}).get("n") for c in cells):
            out.append({"label": KIND_LABELS.get(kind, kind), "cells": cells})
        subs = sorted({s for c in cells if c for s in (c.get("subkinds") or {})})
        for sub in subs:
            sub_cells = [((c or {}).get("subkinds") or {}).get(sub) for c in cells]
            if any(c and (c.get("cue_adoption_rate") or {}).get("n") for c in sub_cells):
                out.append({"label": f"{KIND_LABELS.get(kind, kind)}: {sub}", "cells": sub_cells})
    return out


def dose_rows(metrics: dict) -> list[dict]:
    """Box dose-response: level × model (clean image, then boxes drawn at IoU 0.7, 0.5, 0.3)."""
    models = _models(metrics)
    rows = []
    for level, label in (("clean", "clean image"), ("0.7", "box drawn at IoU 0.7"), ("0.5", "box drawn at IoU 0.5"),
                         ("0.3", "box drawn at IoU 0.3")):
        cells = [(m.get("dose_response") or {}).get(level) for _, _, m in models]
        if any(cells):
            rows.append({"level": level, "label": label, "cells": cells})
    return rows


def parse_rows(metrics: dict) -> list[dict]:
    """Per model: the share of its predictions read by each parse-method family."""
    return [{"label": label, "families": [(f, FAMILY_LABELS.get(f, f), (m.get("parse_families") or {}).get(f))
                                          for f in FAMILIES]}
            for _, label, m in _models(metrics) if m]


FAMILY_LABELS = {"letter": "letter", "option_text": "option text", "json": "JSON", "box": "box",
                 "free_text": "free text", "abstained": "abstained", "ambiguous": "ambiguous",
                 "unparseable": "unparseable", "error": "error"}
MODEL_CSV_COLUMNS = ("model", "run_split", "metric", "value", "lo", "hi", "k", "n")


def models_csv(metrics: dict, split: str | None = None) -> str:
    """One row per model and headline metric (with its interval): accuracy, answered accuracy, chain,
    CircularEval, grounding, premise, every kind's drop and chance-corrected cue adoption, stage accuracy on
    the same chains, dose-response, and the rate of each parse-method family."""
    split = split or run_split(metrics)
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(MODEL_CSV_COLUMNS)
    for _, label, m in _models(metrics):
        for name, stat in _model_stats(m):
            if stat:
                writer.writerow([label, split, name, *(_fmt(stat.get(c)) for c in ("value", "lo", "hi", "k", "n"))])
    return buf.getvalue()


def _model_stats(m: dict):
    yield "step_accuracy", m.get("step_accuracy")
    yield "answered_accuracy", m.get("answered_accuracy")
    yield "chain_accuracy", m.get("chain_accuracy")
    yield "circular_eval", (m.get("circular_eval") or {}).get("accuracy")
    yield "circular_eval_clean_accuracy", (m.get("circular_eval") or {}).get("clean_accuracy")
    yield "guess_rate", m.get("guess_rate")
    yield "grounding_hit_rate", (m.get("grounding") or {}).get("hit_rate")
    yield "answer_box_grounded_correct", (m.get("answer_box") or {}).get("grounded_correct")
    for key, stat in (m.get("premise") or {}).items():
        if isinstance(stat, dict):
            yield f"premise.{key}", stat
    yield "hint_reliance", m.get("hint_reliance")
    yield "visual_reliance", m.get("visual_reliance")
    for kind, r in (m.get("robustness") or {}).items():
        for key in ("drop", "cue_adoption_rate", "cue_adoption_corrected", "cue_adoption_normalised"):
            yield f"robustness.{kind}.{key}", r.get(key)
        for sub, sr in (r.get("subkinds") or {}).items():
            for key in ("drop", "cue_adoption_corrected"):
                yield f"robustness.{kind}.{sub}.{key}", sr.get(key)
    deg = m.get("stage_degradation") or {}
    for kind, stages in (deg.get("by_kind") or {}).items():
        for stage, cell in sorted(stages.items(), key=lambda kv: str(kv[0])):
            yield f"stage.{kind}.S{stage}.accuracy", (cell or {}).get("accuracy")
            yield f"stage.{kind}.S{stage}.chance_corrected", (cell or {}).get("chance_corrected")
    for level, cell in (m.get("dose_response") or {}).items():
        yield f"dose_response.{level}.mean_iou", (cell or {}).get("mean_iou")
        yield f"dose_response.{level}.accuracy", (cell or {}).get("accuracy")
    for family, stat in (m.get("parse_families") or {}).items():
        yield f"parse_family.{family}", stat
    yield "abstention_rate", m.get("abstention_rate")
    yield "unparseable_rate", m.get("unparseable_rate")
    yield "error_rate", m.get("error_rate")


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
