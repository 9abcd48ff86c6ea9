"""Sending a run's batches to the workers, a window at a time, and finding the ones the broker lost.

A paper-scale run is tens of thousands of batches (14 models × ~1M variants at 256 per batch). They
are not sent as one chord: a chord's header of 60k signatures is one huge message, its counter lives
in the result backend, and a Redis restart between a pop and an ack loses a batch for good. Instead:

- `run_dispatch` sends at most `MEDR2_EVAL_DISPATCH_WINDOW` batches of a run at a time (marked with
  `dispatched_at` under the run's row lock, sent after commit, one plain message each, interleaved
  across models so every model's queue has work); each finished batch tops the window up
  (`workers.services.runs.run_advance`), and the last one finalizes the run. The broker never holds
  more than a window per run, and nothing about the run's progress lives in the broker.
- `batches_lost` finds what the broker dropped, from the database alone plus each queue's depth: a
  batch sent more than `MEDR2_EVAL_LOST_GRACE_S` ago that no worker has started while its queue is
  empty (a Redis list is first in, first out: a message still waiting keeps its queue non-empty), and a
  batch whose worker has not reported for `MEDR2_EVAL_STALE_S` (killed with its whole worker). The
  sweep (`workers.services.runs.runs_reconcile`, Celery beat every `MEDR2_EVAL_RECONCILE_S`, and the
  waiting `run_evaluation` command) sends them again. Batch execution is idempotent, so a batch sent
  twice writes each prediction once (workers/services/execution.py).
"""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from audit.services import audit_record
from common.dispatch import queue_depths, send

from ..models import EvaluationRun, RunBatch

log = logging.getLogger(__name__)
IN_FLIGHT = (RunBatch.Status.PENDING, RunBatch.Status.RUNNING)


def dispatch_window() -> int | None:
    """How many batches of one run may be sent and not done at a time; None (no limit) when tasks run
    eagerly in the sending process (a window there would only deepen the recursion)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return None
    return max(1, int(settings.MEDR2_EVAL_DISPATCH_WINDOW))


def _send(rows: list[tuple[int, str]]) -> int:
    """Send each (batch id, queue) as one `workers.eval_batch` message (through `common.dispatch.send`).
    With the broker down the batches not sent are marked unsent again, for the next top-up or sweep.
    Returns how many were sent."""
    from ..tasks import eval_batch  # lazy: tasks.py imports the services (a real cycle)

    for k, (pk, queue) in enumerate(rows):
        if not send(eval_batch, pk, queue=queue):
            RunBatch.objects.filter(pk__in=[p for p, _ in rows[k:]], status=RunBatch.Status.PENDING) \
                .update(dispatched_at=None)
            return k
    return len(rows)


def run_dispatch(*, run_id: int) -> int:
    """Top the run's window up: mark the next unsent batches (by index, then model) as sent and send
    them once the marking commits. Returns how many were sent. A run that is not running sends
    nothing; with the broker down nothing is sent and the batches stay unsent (logged)."""
    window = dispatch_window()
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().filter(pk=run_id).only("status").first()
        if run is None or run.status != EvaluationRun.Status.RUNNING:
            return 0
        batches = RunBatch.objects.filter(run_id=run_id, status__in=IN_FLIGHT)
        room = None if window is None else window - batches.filter(dispatched_at__isnull=False).count()
        if room is not None and room <= 0:
            return 0
        chosen = batches.filter(dispatched_at__isnull=True).order_by("index", "endpoint_id")
        rows = list(chosen.values_list("pk", "endpoint__queue")[:room] if room is not None
                    else chosen.values_list("pk", "endpoint__queue"))
        if not rows:
            return 0
        RunBatch.objects.filter(pk__in=[pk for pk, _ in rows]).update(dispatched_at=timezone.now())
    return _send(rows)


def batches_lost(*, now=None) -> list[tuple[int, int, str]]:
    """(batch id, run id, why) of the batches of running runs that were sent but will never run unless
    sent again: sent more than the grace period ago, not started, with their queue empty; or running
    with no heartbeat for `MEDR2_EVAL_STALE_S`. Empty when the broker cannot be asked."""
    now = now or timezone.now()
    grace, stale = timedelta(seconds=settings.MEDR2_EVAL_LOST_GRACE_S), timedelta(seconds=settings.MEDR2_EVAL_STALE_S)
    running = RunBatch.objects.filter(run__status=EvaluationRun.Status.RUNNING, dispatched_at__isnull=False)
    unstarted = list(running.filter(status=RunBatch.Status.PENDING, dispatched_at__lt=now - grace)
                     .values_list("pk", "run_id", "endpoint__queue"))
    silent = list(running.filter(status=RunBatch.Status.RUNNING, dispatched_at__lt=now - stale)
                  .filter(Q(heartbeat_at__lt=now - stale) | Q(heartbeat_at__isnull=True))
                  .values_list("pk", "run_id"))
    lost = [(pk, run_id, f"no heartbeat for {settings.MEDR2_EVAL_STALE_S} s") for pk, run_id in silent]
    if unstarted:
        depths = queue_depths({queue for _, _, queue in unstarted})
        if depths is not None:
            lost += [(pk, run_id, f"not started and queue {queue!r} is empty")
                     for pk, run_id, queue in unstarted if depths.get(queue) == 0]
    return lost


def batches_resend(lost: list[tuple[int, int, str]]) -> int:
    """Send these (batch id, run id, why) again: `dispatched_at` renewed and one audit event per run in one
    transaction, then the messages. Returns how many were sent (fewer with the broker down)."""
    why = {pk: reason for pk, _, reason in lost}
    with transaction.atomic():
        rows = list(RunBatch.objects.filter(pk__in=list(why), status__in=IN_FLIGHT)
                    .values_list("pk", "run_id", "endpoint__queue"))
        RunBatch.objects.filter(pk__in=[pk for pk, _, _ in rows]).update(dispatched_at=timezone.now())
        by_run: dict[int, list[int]] = {}
        for pk, run_id, _ in rows:
            log.warning("run %s: batch %s sent again (%s)", run_id, pk, why[pk])
            by_run.setdefault(run_id, []).append(pk)
        for run_id, pks in by_run.items():
            audit_record(actor=None, action="workers.run.resend", object_type="workers.evaluationrun",
                         object_id=run_id, after={"n": len(pks), "batches": sorted(pks)[:1000],
                                                  "why": sorted({why[pk] for pk in pks})})
    return _send([(pk, queue) for pk, _, queue in rows])
