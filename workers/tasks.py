"""Celery adapters for evaluation runs. Thin: ids in, one service call, quiet when there is
nothing to do. Batch tasks are idempotent, so they are acked late and rejected (redelivered) when
the worker dies; a backend that is down is retried with backoff and jitter."""
from __future__ import annotations

import logging
import random

from celery import shared_task
from django.conf import settings

from common.dispatch import send_after_commit

from .backends import BackendError, BackendUnavailable
from .selectors import run_find
from .services.execution import batch_execute, batch_fail
from .services.runs import run_advance, run_finalize, runs_reconcile
from .services.scoring import run_score

logger = logging.getLogger(__name__)


def _retry_delay(retries: int) -> float:
    cap = settings.MEDR2_EVAL_RETRY_MAX_S
    return random.uniform(0, min(cap, settings.MEDR2_EVAL_RETRY_BASE_S * 2 ** retries))


@shared_task(name="workers.eval_batch", bind=True, acks_late=True, reject_on_worker_lost=True,
             max_retries=None)
def eval_batch(self, batch_id: int) -> dict:
    try:
        outcome = batch_execute(batch_id=batch_id)
    except BackendUnavailable as exc:
        if self.request.retries >= settings.MEDR2_EVAL_MAX_RETRIES:
            _advance(batch_fail(batch_id=batch_id,
                                error=f"backend unavailable after {self.request.retries} retries: {exc}"))
            return {"batch_id": batch_id, "status": "failed"}
        delay = _retry_delay(self.request.retries)
        logger.warning("batch %s: backend unavailable (%s); retry %d in %.1fs", batch_id, exc,
                       self.request.retries + 1, delay)
        raise self.retry(exc=exc, countdown=delay) from exc
    except BackendError as exc:  # a configuration error: retrying cannot help
        _advance(batch_fail(batch_id=batch_id, error=str(exc)))
        return {"batch_id": batch_id, "status": "failed"}
    _advance(outcome.run_id)
    return {"batch_id": batch_id, "status": outcome.status, "written": outcome.written}


def _advance(run_id: int | None) -> None:
    """The next batches of the run's window, or its finalization after the last one."""
    if run_id is not None:
        run_advance(run_id=run_id)


@shared_task(name="workers.runs_reconcile")
def runs_reconcile_task() -> dict:
    """Celery beat: re-send batches the broker lost; finish runs whose last batch is done."""
    return runs_reconcile()


@shared_task(name="workers.run_finalize", acks_late=True)   # sent by runs dispatched before windows
def run_finalize_task(run_id: int) -> None:
    run_finalize(run_id=run_id)


@shared_task(name="workers.run_score", acks_late=True)
def run_score_task(run_id: int) -> None:
    run = run_find(pk=run_id)
    if run is not None:
        run_score(run=run, actor=None)


def run_score_later(run_id: int) -> None:
    """Queue scoring once the current transaction commits (never before the change it scores). With the
    broker down the miss is logged and the request still succeeds; the rescore action sends it again."""
    send_after_commit(run_score_task, run_id)
