"""Scoring one model at a time (issue 19: 15 M predictions in bounded memory) gives the metrics of the
whole table, and a rescore after a correction scores again only the models whose predictions changed.

The run is made by the platform's own path (phantom images → chains → every variant kind → planted
backends through the real batch code), so every metric family has rows: pairs, cues, boxes, dose levels,
premises, splits. The reference is what `run_score` computed before issue 19: `model_metrics`,
`cell_table` and `compare_models` over the run's whole `PredictionTable`."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from workers.scoring.calibration import PLANTED_MODELS

MODELS = [m for m in PLANTED_MODELS if m[0] in ("oracle", "follow-0.5-base-0.6", "text-only", "box-shifter-0.6")]


def _same(got, want, path="") -> list[str]:
    """Paths where two metric documents differ (floats up to summation order: 1e-9 relative)."""
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return [f"{path}: keys {sorted(got) if isinstance(got, dict) else got} != {sorted(want)}"]
        return [d for k in want for d in _same(got[k], want[k], f"{path}/{k}")]
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{path}: length"]
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in _same(g, w, f"{path}[{i}]")]
    if isinstance(want, float) and isinstance(got, (int, float)):
        return [] if math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12) else [f"{path}: {got} != {want}"]
    return [] if got == want else [f"{path}: {got!r} != {want!r}"]


def _without_time(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k != "scored_at"}


@pytest.fixture
def planted_run(eval_content, make_endpoint):
    from django.utils import timezone

    from workers.models import EvaluationRun
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create

    eval_content(images=8, seed=3)
    endpoints = [make_endpoint(name, backend, parameters=params) for name, backend, params in MODELS]
    run = run_create(name="by-model", endpoints=endpoints, actor=None, split="all", batch_size=500, start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
    for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.COMPLETED)
    return EvaluationRun.objects.get(pk=run.pk)


def _whole_table_metrics(run) -> dict:
    """What run_score stored before issue 19 (everything from one PredictionTable of the whole run)."""
    from annotation.splits import SPLITS
    from workers.scoring.coded import json_safe
    from workers.scoring.metrics import cell_table, compare_models, model_metrics
    from workers.services.scoring import BREAKDOWNS, prediction_table

    table = prediction_table(run=run)
    ids = sorted(e.pk for e in run.endpoints.all())
    return json_safe({
        "models": model_metrics(table, seed=run.pk),
        "models_by_split": {s: model_metrics(table, rows=table.split == s, seed=run.pk) for s in SPLITS
                            if np.any(table.split == s)},
        **{name: cell_table(table, by, seed=run.pk) for name, by in BREAKDOWNS.items()},
        "comparisons": [{"a": a, "b": b, **compare_models(table, a, b, seed=run.pk, answered_only=False)}
                        for a, b in itertools.combinations(ids, 2)],
    })


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_scoring_model_by_model_stores_the_metrics_of_the_whole_table(planted_run):
    from workers.services.scoring import run_score

    stored = run_score(run=planted_run, actor=None)
    want = _whole_table_metrics(planted_run)
    assert len(stored["models"]) == len(MODELS) and stored["n_predictions"] > 1000
    assert len(stored["models_by_split"]) >= 2 and len(stored["comparisons"]) == 6
    robust = stored["models"][str(planted_run.endpoints.order_by("pk").first().pk)]["robustness"]
    assert {"wrong_visual_cue", "box_dose_response", "image_ablation"} <= set(robust)
    differ = _same({k: stored[k] for k in want}, want)
    assert not differ, differ[:10]


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_a_rescore_of_one_changed_model_equals_a_full_rescore_and_keeps_the_others(planted_run, monkeypatch):
    from audit.models import AuditEvent
    from workers.models import Prediction
    from workers.services import scoring

    first = scoring.run_score(run=planted_run, actor=None)
    ids = sorted(int(e) for e in first["models"])
    changed = ids[1]
    # what a correction does: some predictions of one model flip
    flip = list(Prediction.objects.filter(run=planted_run, endpoint_id=changed, variant__kind="clean")
                .order_by("pk").values_list("pk", flat=True)[:25])
    for p in Prediction.objects.filter(pk__in=flip):
        Prediction.objects.filter(pk=p.pk).update(correct=not p.correct)

    scored = []
    real = scoring._score_endpoint
    monkeypatch.setattr(scoring, "_score_endpoint", lambda run, table, e, n: scored.append(e) or real(run, table, e, n))
    planted_run.refresh_from_db()
    partial = scoring.run_score(run=planted_run, actor=None, changed_endpoints={changed})
    assert scored == [changed], "only the changed model is scored again"
    event = AuditEvent.objects.filter(action="workers.run.score").order_by("-pk").first()
    assert event.after["models_rescored"] == [changed]
    assert partial["models"][str(changed)] != first["models"][str(changed)]
    for e in ids:
        if e != changed:
            assert partial["models"][str(e)] == first["models"][str(e)]
    kept = [c for c in partial["comparisons"] if changed not in (c["a"], c["b"])]
    assert kept == [c for c in first["comparisons"] if changed not in (c["a"], c["b"])]

    scored.clear()
    planted_run.refresh_from_db()
    full = scoring.run_score(run=planted_run, actor=None)
    assert scored == ids
    differ = _same(_without_time(partial), _without_time(full))
    assert not differ, differ[:10]


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_a_rescore_scores_every_model_when_the_stored_metrics_no_longer_describe_the_others(planted_run,
                                                                                             monkeypatch):
    from workers.models import Prediction
    from workers.services import scoring

    first = scoring.run_score(run=planted_run, actor=None)
    ids = sorted(int(e) for e in first["models"])
    # a prediction of another model is gone since the scoring: its stored metrics are stale
    Prediction.objects.filter(pk=Prediction.objects.filter(run=planted_run, endpoint_id=ids[0]).order_by("pk")
                              .values_list("pk", flat=True)[:1]).delete()
    scored = []
    real = scoring._score_endpoint
    monkeypatch.setattr(scoring, "_score_endpoint", lambda run, table, e, n: scored.append(e) or real(run, table, e, n))
    planted_run.refresh_from_db()
    again = scoring.run_score(run=planted_run, actor=None, changed_endpoints={ids[1]})
    assert scored == ids
    assert again["n_predictions"] == first["n_predictions"] - 1
    assert again["models"][str(ids[0])]["n_predictions"] == first["models"][str(ids[0])]["n_predictions"] - 1
    # never scored before: nothing to keep either
    scored.clear()
    planted_run.metrics = None
    scoring.run_score(run=planted_run, actor=None, changed_endpoints={ids[1]})
    assert scored == ids


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_the_predictions_are_held_in_narrow_columns_split_by_model(planted_run):
    from workers.models import Prediction
    from workers.services.scoring import CHUNK, _prediction_rows, _read_predictions, _variant_table

    variants = _variant_table(planted_run)
    parts, seen = _read_predictions(_prediction_rows(planted_run).iterator(chunk_size=CHUNK), variants)
    counts = dict(Prediction.objects.filter(run=planted_run).values_list("endpoint_id").order_by()
                  .annotate(n=__import__("django.db.models", fromlist=["Count"]).Count("id")))
    assert {e: sum(map(len, p["vpos"])) for e, p in parts.items()} == counts
    widths = {name: chunks[0].dtype.itemsize for name, chunks in next(iter(parts.values())).items()}
    assert widths == {"vpos": 4, "correct": 1, "iou": 8, "cue_adopted": 4, "outcome": 4, "answer": 4, "family": 4}
    assert sum(widths.values()) <= 32, "bytes held per prediction while the run is read"
    # a box's coordinates are no answer key: only choice answers reach the dictionary
    assert all(not str(k).startswith("[") or str(k).strip("[]").replace('"', "").replace(",", "").replace(" ", "")
               .isalpha() for k in seen["answer"] if k)


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_a_gold_correction_rescores_the_run_only_for_the_models_whose_predictions_it_changed(planted_run):
    from adjudication.models import PredictionRescore
    from adjudication.services.rescoring import predictions_rescore
    from annotation.models import QAItem
    from audit.models import AuditEvent
    from workers.models import EvaluationRun
    from workers.services.scoring import run_score

    run_score(run=planted_run, actor=None)
    item = (QAItem.objects.filter(is_current=True, category__answer_type="single_choice",
                                  predictions__run=planted_run).distinct().order_by("pk").first())
    new_gold = next(o for o in item.options if o != item.gold_answer)
    QAItem.objects.filter(pk=item.pk).update(gold_answer=new_gold)     # what a corrected version holds
    summary = predictions_rescore(item_key=item.item_key, actor=None, reason="corrected gold")
    changed = set(PredictionRescore.objects.filter(prediction__run=planted_run)
                  .values_list("prediction__endpoint_id", flat=True))
    assert summary.changed > 0 and summary.runs == [planted_run.pk] and changed
    event = AuditEvent.objects.filter(action="workers.run.score").order_by("-pk").first()
    assert event.after["models_rescored"] == sorted(changed)
    partial = EvaluationRun.objects.get(pk=planted_run.pk)
    full = run_score(run=partial, actor=None)
    differ = _same(_without_time(partial.metrics), _without_time(full))
    assert not differ, differ[:10]
