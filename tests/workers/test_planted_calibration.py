"""Calibration of the metrics with models of planted behaviour, through the platform's own path:
phantom images → chains → every variant kind → a run of the planted backends (workers/backends/planted.py)
executed by the real batch code → `run_score` → each metric must recover the value planted in the model
within its cluster-bootstrap interval, taken family-wise (Bonferroni over the checks, see
workers/scoring/calibration.py: with ~25 checks at 95% one miss is expected by chance alone). The same
checks at 1,000 images: `bench/planted.py`.

Anyone who changes a metric later runs this file: a metric that stops recovering what was planted is wrong."""
from __future__ import annotations

import pytest

from workers.scoring.calibration import PLANTED_MODELS, checks, familywise, recovered


@pytest.fixture
def scored_run(eval_content, make_endpoint):
    from django.utils import timezone

    from workers.models import EvaluationRun
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create, run_finalize
    from workers.services.scoring import run_score

    eval_content(images=36, seed=3)
    endpoints = {name: make_endpoint(name, backend, parameters=params) for name, backend, params in PLANTED_MODELS}
    run = run_create(name="planted", endpoints=list(endpoints.values()), actor=None, split="all", batch_size=500,
                     start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
    for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    run_finalize(run_id=run.pk)
    from workers.services.scoring import prediction_table

    run = EvaluationRun.objects.get(pk=run.pk)
    metrics = run_score(run=run, actor=None)
    pk = {name: str(e.pk) for name, e in endpoints.items()}
    wide = familywise(prediction_table(run=run), seed=run.pk, n_checks=len(checks(metrics, pk)))
    return metrics, wide, pk, run


# the planted draws key on row ids: reset sequences give fixed ids, so fixed draws whatever ran before
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_every_metric_recovers_the_behaviour_planted_in_the_model(scored_run):
    metrics, wide, pk, _ = scored_run
    missed = [f"{model}: {name}: planted {planted}, measured {stat}"
              for model, name, planted, stat in checks(wide, pk) if not recovered(stat, planted)]
    assert not missed, "\n".join(missed)
    # the stored (95%) values are the same point estimates, inside the family-wise intervals
    for (_, _, _, narrow), (_, _, _, fw) in zip(checks(metrics, pk), checks(wide, pk)):
        assert narrow["value"] == pytest.approx(fw["value"]) and fw["lo"] <= narrow["lo"] + 1e-9
    oracle = metrics["models"][pk["oracle"]]
    assert oracle["premise"]["discrimination"]["value"] == pytest.approx(1.0)
    text_only = metrics["models"][pk["text-only"]]["robustness"]["image_ablation"]
    assert text_only["flip_rate"]["value"] == 0      # identical prompts, identical answers: not one flip


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_a_table_of_some_kinds_is_the_full_tables_rows_of_those_kinds(scored_run):
    """What a report's clean breakdowns read (reports.selectors.run_breakdowns): the kinds filtered in SQL give
    the same rows, column for column, as the whole table filtered afterwards."""
    import numpy as np

    from workers.services.scoring import prediction_table

    *_, run = scored_run
    full = prediction_table(run=run)
    for kinds in (("clean",), ("clean", "misleading_hint")):
        part = prediction_table(run=run, kinds=kinds)
        expected = full.take(np.isin(full.kind, kinds))
        assert len(part) == len(expected) > 0
        _assert_same_rows(part, expected)


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_a_table_of_some_models_is_the_full_tables_rows_of_those_models(scored_run):
    """What a model comparison reads (finetune.comparison): the models filtered in SQL give the same rows,
    column for column, as the whole table filtered afterwards."""
    import numpy as np

    from workers.services.scoring import prediction_table

    *_, run = scored_run
    full = prediction_table(run=run)
    models = sorted({int(e) for e in full.endpoint})
    assert len(models) > 1
    for chosen in ([models[0]], models[1:]):
        part = prediction_table(run=run, endpoints=chosen)
        expected = full.take(np.isin(full.endpoint, chosen))
        assert len(part) == len(expected) > 0
        _assert_same_rows(part, expected)


def _assert_same_rows(part, expected) -> None:
    """Two PredictionTables hold the same rows, column for column, whatever their order."""
    import numpy as np

    from workers.services.scoring import TABLE_COLUMNS

    order_p = np.lexsort((part.variant, part.endpoint))
    order_e = np.lexsort((expected.variant, expected.endpoint))
    for name in TABLE_COLUMNS:
        got, want = getattr(part, name)[order_p], getattr(expected, name)[order_e]
        if got.dtype.kind == "f":
            assert np.array_equal(got, want, equal_nan=True), name
        elif name != "cluster":           # cluster codes are per table: only equality within one matters
            assert (got == want).all(), name
