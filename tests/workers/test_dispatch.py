"""Dispatch a window at a time and the sweep that finds lost batches (workers/services/dispatch.py), in
process against the test suite's real Redis broker; tests/workers/test_eval_worker.py runs the same with
real workers, a private Redis that is restarted, and a message deleted from the broker."""
from __future__ import annotations

from datetime import timedelta

import pytest
from celery import current_app
from django.utils import timezone

from audit.models import AuditEvent
from tests.procs import purge_queue as _purge
from workers.models import EvaluationRun, RunBatch
from workers.services.dispatch import batches_lost, run_dispatch
from workers.services.execution import batch_execute
from workers.services.runs import run_advance, run_create, runs_reconcile

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker(settings):
    """A real broker (the suite's Redis), tasks not eager, a window of 3; the `cpu` queue emptied around."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.MEDR2_EVAL_DISPATCH_WINDOW = 3
    eager, current_app.conf.task_always_eager = current_app.conf.task_always_eager, False
    _purge()
    yield
    _purge()
    current_app.conf.task_always_eager = eager


def _running(make_endpoint, eval_content, n_models: int = 2) -> EvaluationRun:
    eval_content(2, kinds=["clean", "misleading_hint"])
    endpoints = [make_endpoint(f"random-{k}", "random", parameters={"seed": k}) for k in range(n_models)]
    run = run_create(name="w", endpoints=endpoints, actor=None, start=False, batch_size=2, split="all")
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
    return run


def test_a_run_is_sent_a_window_at_a_time_interleaved_across_models(broker, make_endpoint, eval_content):
    run = _running(make_endpoint, eval_content)
    assert run.batches.count() > 3
    assert run_dispatch(run_id=run.pk) == 3
    sent = list(run.batches.filter(dispatched_at__isnull=False).order_by("index", "endpoint_id")
                .values_list("index", "endpoint_id"))
    models = sorted(run.endpoints.values_list("pk", flat=True))
    assert sent == [(0, models[0]), (0, models[1]), (1, models[0])]   # every model's queue has work
    assert run_dispatch(run_id=run.pk) == 0                            # the window is full
    first = run.batches.filter(dispatched_at__isnull=False).order_by("index", "endpoint_id").first()
    batch_execute(batch_id=first.pk)
    run_advance(run_id=run.pk)                                         # what the task does after a batch
    assert run.batches.filter(dispatched_at__isnull=False).exclude(status="done").count() == 3
    assert run.batches.filter(dispatched_at__isnull=False).count() == 4


def test_a_cancelled_run_sends_nothing(broker, make_endpoint, eval_content):
    run = _running(make_endpoint, eval_content)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.CANCELLED)
    assert run_dispatch(run_id=run.pk) == 0
    assert not run.batches.filter(dispatched_at__isnull=False).exists()


def test_the_sweep_finds_batches_the_broker_lost_and_leaves_waiting_and_live_ones(broker, make_endpoint,
                                                                                   eval_content):
    run = _running(make_endpoint, eval_content)
    run_dispatch(run_id=run.pk)
    now = timezone.now()
    long_ago = now - timedelta(seconds=3600)
    waiting, silent, live = run.batches.filter(dispatched_at__isnull=False).order_by("index", "endpoint_id")
    RunBatch.objects.filter(pk=waiting.pk).update(dispatched_at=long_ago)
    RunBatch.objects.filter(pk=silent.pk).update(dispatched_at=long_ago, status="running", heartbeat_at=long_ago)
    RunBatch.objects.filter(pk=live.pk).update(dispatched_at=long_ago, status="running", heartbeat_at=now)
    # the queue still holds messages: a batch not started may simply be waiting its turn
    assert [(pk, why.split()[0]) for pk, _, why in batches_lost(now=now)] == [(silent.pk, "no")]
    _purge()                      # the broker lost them: an empty queue and a batch sent an hour ago
    lost = {pk: why for pk, _, why in batches_lost(now=now)}
    assert set(lost) == {waiting.pk, silent.pk}
    assert "queue 'cpu' is empty" in lost[waiting.pk] and "no heartbeat" in lost[silent.pk]
    # a recent send is within the grace period
    RunBatch.objects.filter(pk=waiting.pk).update(dispatched_at=now)
    assert waiting.pk not in {pk for pk, _, _ in batches_lost(now=now)}


def test_the_sweep_sends_lost_batches_again_audited_and_finishes_a_run_whose_last_advance_was_lost(
        broker, make_endpoint, eval_content):
    run = _running(make_endpoint, eval_content)
    run_dispatch(run_id=run.pk)
    RunBatch.objects.filter(run=run, dispatched_at__isnull=False).update(
        dispatched_at=timezone.now() - timedelta(seconds=3600))
    _purge()
    summary = runs_reconcile()
    assert summary["lost"] == 3 and summary["resent"] == 3
    event = AuditEvent.objects.get(action="workers.run.resend", object_id=str(run.pk))
    assert event.after["n"] == 3
    assert run.batches.filter(dispatched_at__gte=timezone.now() - timedelta(seconds=60)).count() == 3
    # every batch done, the run still `running` (its last advance was lost): the sweep finalizes and scores it
    for pk in run.batches.values_list("pk", flat=True):
        batch_execute(batch_id=pk)
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.RUNNING
    runs_reconcile()
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.COMPLETED and run.scored_at is not None


def test_a_resumed_run_starts_its_window_afresh(broker, make_endpoint, eval_content):
    from workers.services.runs import run_cancel, run_resume

    run = _running(make_endpoint, eval_content)
    run_dispatch(run_id=run.pk)
    run_cancel(run=run, actor=None)
    run_resume(run=run, actor=None)      # dispatch happens after commit (pytest-django: not in this test)
    assert not run.batches.filter(dispatched_at__isnull=False).exists()
