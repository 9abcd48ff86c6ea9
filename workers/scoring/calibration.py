"""Models of planted behaviour and what each metric must recover from them (pure numpy: no Django).

Used by the calibration test (tests/workers/test_planted_calibration.py) and by `bench/planted.py`
(the same check at 1,000 phantom images), so both hold the metrics to the same list. The backends are
in workers/backends/planted.py; the metrics in workers/scoring/metrics.py.

Multiplicity: each interval is a 95% interval, so among K checks about 5% of K miss by chance alone
even when every metric is right. A calibration therefore judges "recovered" on family-wise intervals:
the same metrics recomputed at confidence 1 − 0.05 / K (Bonferroni), so that a correct set of metrics
passes all K checks with probability ≥ 95%, and reports the 95% misses beside the number expected.
"""
from __future__ import annotations

from .metrics import model_metrics
from .table import PredictionTable

FAMILY_ALPHA = 0.05

STAGE_ACC = (0.9, 0.75, 0.6, 0.45)
PLANTED_MODELS = (   # (endpoint name, backend, parameters)
    ("oracle", "oracle", {}),
    ("follow-0.3", "cue_follower", {"p": 0.3, "accuracy": 1.0, "seed": 1}),
    ("follow-0.7", "cue_follower", {"p": 0.7, "accuracy": 1.0, "seed": 2}),
    ("follow-0.5-base-0.6", "cue_follower", {"p": 0.5, "accuracy": 0.6, "seed": 3}),
    ("text-only", "text_only", {"accuracy": 0.5, "seed": 4}),
    ("box-shifter-0.6", "box_shifter", {"iou": 0.6, "seed": 5}),
    ("stage-decay", "stage_decay", {"accuracies": list(STAGE_ACC), "seed": 6}),
    ("box-copier", "cue_follower", {"p": 1.0, "accuracy": 1.0, "seed": 7}),
)


def checks(metrics: dict, pk: dict[str, str]) -> list[tuple[str, str, float, dict | None]]:
    """(model, metric, planted value, the measured value with its interval)."""
    m = {name: metrics["models"].get(p) or {} for name, p in pk.items()}
    out = []
    o = m["oracle"]
    out += [("oracle", "step accuracy", 1.0, o.get("step_accuracy")),
            ("oracle", "CircularEval accuracy", 1.0, (o.get("circular_eval") or {}).get("accuracy")),
            ("oracle", "false-premise rejection", 1.0, (o.get("premise") or {}).get("false_premise_rejection"))]
    for name, p in (("follow-0.3", 0.3), ("follow-0.7", 0.7)):
        r = m[name].get("robustness") or {}
        out.append((name, "misleading hint: chance-corrected adoption", p,
                    (r.get("misleading_hint") or {}).get("cue_adoption_corrected")))
        subs = (r.get("wrong_visual_cue") or {}).get("subkinds") or {}
        out.append((name, "mislabeled cue: chance-corrected adoption", p,
                    (subs.get("mislabeled") or {}).get("cue_adoption_corrected")))
        out.append((name, "wrong-region cue: chance-corrected adoption", p,
                    (subs.get("wrong_region") or {}).get("cue_adoption_corrected")))
    r = m["follow-0.5-base-0.6"].get("robustness") or {}
    out.append(("follow-0.5-base-0.6", "misleading hint: normalised adoption", 0.5,
                (r.get("misleading_hint") or {}).get("cue_adoption_normalised")))
    r = m["text-only"].get("robustness") or {}
    out.append(("text-only", "image ablation drop (visual reliance)", 0.0, (r.get("image_ablation") or {}).get("drop")))
    g = m["box-shifter-0.6"].get("grounding") or {}
    out.append(("box-shifter-0.6", "box items: mean IoU", 0.6, g.get("mean_iou_ci") or
                {"value": g.get("mean_iou"), "lo": None, "hi": None}))
    ab = m["box-shifter-0.6"].get("answer_box") or {}
    out.append(("box-shifter-0.6", "answer + box items: mean IoU", 0.6, ab.get("mean_iou_ci") or
                {"value": ab.get("mean_iou"), "lo": None, "hi": None}))
    deg = (m["stage-decay"].get("stage_degradation") or {}).get("by_kind", {}).get("clean") or {}
    for s, a in zip((1, 2, 3, 4), STAGE_ACC):
        cell = deg.get(str(s)) or deg.get(s) or {}
        out.append(("stage-decay", f"S{s} accuracy (same chains, clean)", a, cell.get("accuracy")))
    dose = m["box-copier"].get("dose_response") or {}
    for level in ("0.7", "0.5", "0.3"):
        out.append(("box-copier", f"dose-response at IoU {level}: mean IoU with gold", float(level),
                    (dose.get(level) or {}).get("mean_iou")))
    return out



def recovered(stat: dict | None, planted: float) -> bool:
    """Whether the 95% interval of a measured value contains the planted value."""
    return bool(stat) and stat.get("lo") is not None and stat.get("hi") is not None \
        and stat["lo"] - 1e-9 <= planted <= stat["hi"] + 1e-9


def familywise(table: PredictionTable, *, seed: int, n_checks: int) -> dict:
    """model_metrics at Bonferroni-corrected confidence 1 − 0.05 / n_checks, shaped like stored metrics
    (``{"models": {str(endpoint): ...}}``) so that `checks` reads it."""
    confidence = 1.0 - FAMILY_ALPHA / max(1, n_checks)
    return {"models": {str(k): v for k, v in model_metrics(table, seed=seed, confidence=confidence).items()}}
