"""Acceptance criteria evaluated against a model's numbers: pass, fail, or not evaluable with a reason —
never a silent pass (reports/criteria.py)."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from reports.criteria import evaluate, metric_catalogue, metric_kind, normalise_criteria, summary

MODELS = [{"key": "1:1", "name": "good", "label": "Good model"}, {"key": "1:2", "name": "weak", "label": "Weak"}]


def _stat(value, lo, hi, n=40):
    return {"value": value, "lo": lo, "hi": hi, "n": n, "k": round(value * n)}


CATALOGUES = {
    "1:1": {"chain_accuracy": _stat(0.7, 0.55, 0.82), "step_accuracy": _stat(0.9, 0.85, 0.94),
            "robustness.misleading_hint.drop": {"value": 0.04, "lo": -0.01, "hi": 0.09, "n": 40}},
    "1:2": {"chain_accuracy": _stat(0.4, 0.3, 0.5), "step_accuracy": _stat(0.6, 0.5, 0.7),
            "robustness.misleading_hint.drop": {"value": None, "lo": None, "hi": None, "n": 0}},
}


def test_each_model_passes_or_fails_each_criterion_on_its_own_number():
    rules = normalise_criteria([{"metric": "chain_accuracy", "model": "*", "op": ">=", "threshold": 0.6}])
    results = evaluate(rules, MODELS, CATALOGUES)
    assert [(r["model"], r["status"], r["observed"]) for r in results] == [("1:1", "pass", 0.7), ("1:2", "fail", 0.4)]
    assert summary(results) == {"passed": 1, "failed": 1, "not_evaluable": 0, "verdict": "fail"}


def test_the_lower_interval_bound_can_be_required():
    rules = normalise_criteria([{"metric": "chain_accuracy", "model": "good", "op": ">=", "threshold": 0.6,
                                 "on": "lo"}])
    (result,) = evaluate(rules, MODELS, CATALOGUES)
    assert result["status"] == "fail" and result["observed"] == 0.55   # 70% observed, but the interval reaches 55%


def test_unknown_metrics_models_and_missing_values_are_not_evaluable_never_a_pass():
    rules = normalise_criteria([
        {"metric": "sensitivity", "op": ">=", "threshold": 0.8},                               # no such metric
        {"metric": "step_accuracy", "model": "someone-else", "op": ">=", "threshold": 0.5},    # no such model
        {"metric": "robustness.misleading_hint.drop", "op": "<=", "threshold": 0.1},           # weak has no pairs
    ])
    results = evaluate(rules, MODELS, CATALOGUES)
    statuses = [(r["criterion"], r["model"], r["status"]) for r in results]
    assert statuses == [(1, "1:1", "not evaluable"), (1, "1:2", "not evaluable"), (2, "someone-else", "not evaluable"),
                        (3, "1:1", "pass"), (3, "1:2", "not evaluable")]
    assert "unknown metric" in results[0]["reason"] and "no model named" in results[2]["reason"]
    assert summary(results)["verdict"] == "incomplete"
    assert summary([])["verdict"] == "no criteria"


@pytest.mark.parametrize("bad", [
    {"metric": "chain_accuracy", "op": "=>", "threshold": 0.6},
    {"metric": "chain_accuracy", "op": ">=", "threshold": "0.6"},
    {"metric": "chain_accuracy", "op": ">=", "threshold": float("nan")},
    {"metric": "", "op": ">=", "threshold": 0.6},
    {"metric": "chain_accuracy", "op": ">=", "threshold": 0.6, "on": "median"},
    {"metric": "chain_accuracy", "op": ">=", "threshold": 0.6, "unit": "%"},
])
def test_malformed_criteria_are_refused_with_the_reason(bad):
    with pytest.raises(ValidationError):
        normalise_criteria([bad])


def test_the_catalogue_names_breakdowns_stages_and_kinds_and_kinds_format_as_the_report_does():
    perf = {"step_accuracy": _stat(0.5, 0.4, 0.6), "stage_degradation": {
        "clean": {"4": {"accuracy": _stat(0.3, 0.2, 0.4)}}, "drop": {"4": {"value": 0.2, "lo": 0.1, "hi": 0.3}}},
        "grounding": {"mean_iou_ci": {"value": 0.61, "lo": 0.5, "hi": 0.7, "n": 9}}}
    robust = {"kinds": {"misleading_hint": {"drop": {"value": 0.1, "lo": 0.0, "hi": 0.2, "n": 9}}}}
    rows = {"modality": [{"group": "CT", "value": 0.5, "lo": 0.4, "hi": 0.6, "n": 10}]}
    catalogue = metric_catalogue(perf, robust, rows)
    assert {"stage.S4.accuracy", "stage.S4.drop", "grounding.mean_iou", "robustness.misleading_hint.drop",
            "modality.CT.accuracy", "step_accuracy"} <= set(catalogue)
    assert (metric_kind("grounding.mean_iou"), metric_kind("stage.S4.drop"), metric_kind("chain_accuracy")) == \
        ("num", "pp", "pct")
