"""Acceptance criteria: thresholds per metric, evaluated against the report's numbers (pure: no database).

A criterion is ``{"metric": "chain_accuracy", "model": "*", "op": ">=", "threshold": 0.6}``, optionally with
``"on": "lo"`` (judge the lower end of the 95% interval, the cautious reading of ">=") or ``"hi"``. `model`
is ``"*"`` (every model in the report) or a model's name or label. Each (criterion, model) gets one
result: ``pass``, ``fail``, or ``not evaluable`` with the reason (an unknown metric, a model not in the
report, a metric without a value, e.g. no items of that kind): never a silent pass.

The metric names are those of `metric_catalogue`: the headline stats, ``stage.S<n>.accuracy`` and
``stage.S<n>.drop`` (clean, on the same chains), ``robustness.<kind>.<field>``, ``dose_response.<level>.mean_iou``,
``image_necessary.accuracy`` and the breakdowns ``modality.<value>.accuracy``, ``body_region.<value>.accuracy``,
``category.<code>.accuracy`` (clean)."""
from __future__ import annotations

import math
import operator

from django.core.exceptions import ValidationError

OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq}
ON = ("value", "lo", "hi")
PASS, FAIL, NOT_EVALUABLE = "pass", "fail", "not evaluable"
HEADLINE = ("step_accuracy", "answered_accuracy", "chain_accuracy", "guess_rate", "abstention_rate",
            "unparseable_rate", "error_rate")
ROBUSTNESS_FIELDS = ("drop", "flip_rate", "harmful_flip_rate", "helpful_flip_rate", "cue_adoption_rate",
                     "cue_adoption_corrected", "cue_adoption_normalised", "adversarial_accuracy")
DIFFERENCES = ("drop", "reliance", "corrected", "normalised", "discrimination")


def metric_kind(name: str) -> str:
    """How the metric's numbers are written (reports.formatting): IoU plain, differences in points."""
    if "mean_iou" in name:
        return "num"
    if any(part in name for part in DIFFERENCES):
        return "pp"
    return "pct"


def _as_stat(stat: dict | None) -> dict | None:
    if not isinstance(stat, dict):
        return None
    return {"value": stat.get("value"), "lo": stat.get("lo"), "hi": stat.get("hi"), "n": stat.get("n")}


def metric_catalogue(perf: dict, robust: dict, breakdowns: dict) -> dict[str, dict]:
    """Every named metric of one model: name -> {"value", "lo", "hi", "n"}, from its performance entry,
    its robustness entry and its clean breakdowns (sections of the report document)."""
    out = {name: _as_stat(perf.get(name)) for name in HEADLINE}
    out["circular_eval"] = _as_stat((perf.get("circular_eval") or {}).get("accuracy"))
    grounding = perf.get("grounding") or {}
    out["grounding.mean_iou"] = _as_stat(grounding.get("mean_iou_ci"))
    out["grounding.hit_rate"] = _as_stat(grounding.get("hit_rate"))
    out["grounding.grounded_correct"] = _as_stat(grounding.get("grounded_correct"))
    box = perf.get("answer_box") or {}
    out["answer_box.mean_iou"] = _as_stat(box.get("mean_iou_ci"))
    out["answer_box.grounded_correct"] = _as_stat(box.get("grounded_correct"))
    degradation = perf.get("stage_degradation") or {}
    for stage, cell in (degradation.get("clean") or {}).items():
        out[f"stage.S{stage}.accuracy"] = _as_stat(cell.get("accuracy"))
    for stage, drop in (degradation.get("drop") or {}).items():
        out[f"stage.S{stage}.drop"] = _as_stat(drop)
    out["image_necessary.accuracy"] = _as_stat(perf.get("image_necessary"))
    for kind, entry in (robust.get("kinds") or {}).items():
        for field in ROBUSTNESS_FIELDS:
            out[f"robustness.{kind}.{field}"] = _as_stat(entry.get(field))
    for name in ("hint_reliance", "visual_reliance"):
        out[name] = _as_stat(robust.get(name))
    out["premise.discrimination"] = _as_stat((robust.get("premise") or {}).get("discrimination"))
    out["premise.false_premise_rejection"] = _as_stat((robust.get("premise") or {}).get("false_premise_rejection"))
    for level, cell in (robust.get("dose_response") or {}).items():
        out[f"dose_response.{level}.mean_iou"] = _as_stat((cell or {}).get("mean_iou"))
    for dimension, rows in breakdowns.items():   # this model's clean rows: {"group", "value", "lo", "hi", ...}
        for row in rows:
            out[f"{dimension}.{row['group']}.accuracy"] = _as_stat(row)
    return {k: v for k, v in sorted(out.items()) if v is not None}


def normalise_criteria(criteria) -> list[dict]:
    """The criteria as a list of complete dicts (defaults filled), or a ValidationError naming the first
    malformed one. Order is kept: it is the order the requester wrote them in."""
    if criteria in (None, ""):
        return []
    if isinstance(criteria, dict) and "criteria" in criteria:
        criteria = criteria["criteria"]
    if not isinstance(criteria, list):
        raise ValidationError("acceptance criteria must be a list of {metric, model, op, threshold}")
    out = []
    for i, c in enumerate(criteria, start=1):
        if not isinstance(c, dict):
            raise ValidationError(f"criterion {i} is not an object")
        unknown = sorted(set(c) - {"metric", "model", "op", "threshold", "on", "note"})
        if unknown:
            raise ValidationError(f"criterion {i}: unknown keys {unknown}")
        metric, model, op = c.get("metric"), c.get("model", "*"), c.get("op")
        threshold, on = c.get("threshold"), c.get("on", "value")
        if not isinstance(metric, str) or not metric.strip():
            raise ValidationError(f"criterion {i}: metric must be a name")
        if not isinstance(model, str) or not model.strip():
            raise ValidationError(f"criterion {i}: model must be \"*\" or a model's name")
        if op not in OPS:
            raise ValidationError(f"criterion {i}: op must be one of {', '.join(OPS)}")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
            raise ValidationError(f"criterion {i}: threshold must be a finite number")
        if on not in ON:
            raise ValidationError(f"criterion {i}: on must be one of {', '.join(ON)}")
        out.append({"metric": metric.strip(), "model": model.strip(), "op": op, "threshold": float(threshold),
                    "on": on, "note": str(c.get("note", ""))})
    return out


def evaluate(criteria: list[dict], models: list[dict], catalogues: dict[str, dict]) -> list[dict]:
    """One result per criterion and model it names. `models`: the document's model entries; `catalogues`:
    model key -> metric_catalogue. Unknown metrics and models are reported, never dropped."""
    known = {name for cat in catalogues.values() for name in cat}
    results = []
    for index, c in enumerate(criteria, start=1):
        chosen = models if c["model"] == "*" else [m for m in models if c["model"] in (m["name"], m["label"], m["key"])]
        base = {"criterion": index, "metric": c["metric"], "op": c["op"], "threshold": c["threshold"], "on": c["on"],
                "kind": metric_kind(c["metric"])}
        if not chosen:
            results.append({**base, "model": c["model"], "observed": None, "status": NOT_EVALUABLE,
                            "reason": f"no model named {c['model']!r} in this report"})
            continue
        for m in chosen:
            stat = catalogues.get(m["key"], {}).get(c["metric"])
            observed = (stat or {}).get(c["on"])
            row = {**base, "model": m["key"], "observed": observed, "stat": stat}
            if c["metric"] not in known:
                row.update(status=NOT_EVALUABLE, reason=f"unknown metric {c['metric']!r}")
            elif stat is None or observed is None:
                row.update(status=NOT_EVALUABLE,
                           reason=f"no {c['on']} for this model (no items of that kind, or too few clusters)")
            else:
                ok = OPS[c["op"]](observed, c["threshold"])
                row.update(status=PASS if ok else FAIL, reason="")
            results.append(row)
    return results


def summary(results: list[dict]) -> dict:
    """Counts per status and the verdict: fail if any fails, incomplete if any is not evaluable."""
    counts = {key: sum(r["status"] == s for r in results)
              for key, s in (("passed", PASS), ("failed", FAIL), ("not_evaluable", NOT_EVALUABLE))}
    if not results:
        verdict = "no criteria"
    elif counts["failed"]:
        verdict = "fail"
    elif counts["not_evaluable"]:
        verdict = "incomplete"
    else:
        verdict = "pass"
    return {**counts, "verdict": verdict}
