"""Celery adapters for the Label Studio sync. Thin: ids in, one service call. Label Studio down or
slow -> retry with exponential backoff and full jitter; the reconciliation (Celery beat) catches
anything a webhook hint or a retry missed, because its cursor only moves after a successful pass."""
from __future__ import annotations

import logging
import random
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import OperationalError, transaction
from kombu.exceptions import OperationalError as KombuOperationalError

from .labelstudio.client import LabelStudioNotConfigured, LabelStudioRejected, LabelStudioUnavailable

logger = logging.getLogger(__name__)


def retry_delay(retries: int) -> float:
    return random.uniform(0, min(settings.LABEL_STUDIO_RETRY_MAX_S, settings.LABEL_STUDIO_RETRY_BASE_S * 2 ** retries))


@shared_task(name="labelstudio.push_batch", bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def push_batch(self, batch_id: int) -> dict:
    from django.utils import timezone

    from .models import AnnotationBatch
    from .services.labelstudio import batch_push, sync_log

    batch = AnnotationBatch.objects.filter(pk=batch_id).first()
    if batch is None:
        return {"batch_id": batch_id, "status": "missing"}
    try:
        result = batch_push(batch=batch)
    except LabelStudioUnavailable as exc:
        if self.request.retries >= settings.LABEL_STUDIO_MAX_RETRIES:
            AnnotationBatch.objects.filter(pk=batch_id).update(status=AnnotationBatch.Status.FAILED)
            sync_log(batch=batch, direction="push", level="error", code="gave_up",
                     message=f"Label Studio still unavailable after {self.request.retries} retries: {exc}. "
                             "Push again once it is back; nothing already pushed is lost.")
            return {"batch_id": batch_id, "status": "failed"}
        delay = retry_delay(self.request.retries)
        AnnotationBatch.objects.filter(pk=batch_id).update(next_retry_at=timezone.now() + timedelta(seconds=delay))
        logger.warning("push batch %s: %s; retry %d in %.1f s", batch_id, exc, self.request.retries + 1, delay)
        raise self.retry(exc=exc, countdown=delay) from exc
    except (LabelStudioRejected, LabelStudioNotConfigured) as exc:
        logger.error("push batch %s failed: %s", batch_id, exc)
        return {"batch_id": batch_id, "status": "failed"}
    return {"batch_id": batch_id, "status": "pushed", "created": result.created}


@shared_task(name="labelstudio.sync_tasks", bind=True, acks_late=True, max_retries=None)
def sync_tasks(self, ls_task_ids: list[int]) -> dict:
    """A webhook hint: pull these tasks now; if Label Studio is unreachable retry a few times, and
    after that leave them to the reconciliation."""
    from .services.labelstudio import tasks_sync

    try:
        result = tasks_sync(ls_task_ids=ls_task_ids)
    except LabelStudioUnavailable as exc:
        if self.request.retries >= min(settings.LABEL_STUDIO_MAX_RETRIES, 5):
            logger.warning("webhook hint for tasks %s dropped after retries (%s); reconciliation will pull them",
                           ls_task_ids, exc)
            return {"status": "left_to_reconciliation"}
        raise self.retry(exc=exc, countdown=retry_delay(self.request.retries)) from exc
    return {"status": "synced", "created": result.annotations_created, "updated": result.annotations_updated,
            "retired": result.annotations_retired}


@shared_task(name="labelstudio.sync_batch", acks_late=True)
def sync_batch(batch_id: int, full: bool = False) -> dict:
    from .models import AnnotationBatch
    from .services.labelstudio import batch_sync

    batch = AnnotationBatch.objects.filter(pk=batch_id).first()
    if batch is None or batch.ls_project_id is None:
        return {"batch_id": batch_id, "status": "not_pushed"}
    try:
        result = batch_sync(batch=batch, full=full)
    except LabelStudioUnavailable:
        return {"batch_id": batch_id, "status": "unavailable"}  # logged on the batch; the next beat retries
    return {"batch_id": batch_id, "status": "synced", "tasks": result.tasks_seen}


@shared_task(name="labelstudio.reconcile", acks_late=True)
def reconcile() -> dict:
    """Celery beat, every LABEL_STUDIO_SYNC_INTERVAL_S: every pushed batch; re-push batches that
    are waiting for Label Studio; re-sign image URLs that will expire within a third of their life."""
    from .services.labelstudio import reconcile_all

    if not settings.LABEL_STUDIO_URL:
        return {"status": "disabled"}
    return reconcile_all()


def push_batch_later(batch_id: int) -> None:
    transaction.on_commit(lambda: push_batch.delay(batch_id))


def sync_tasks_later(ls_task_ids: list[int]) -> None:
    transaction.on_commit(lambda: sync_tasks.delay(ls_task_ids))


@shared_task(name="adjudication.detect", acks_late=True)
def detect_cases_task(run_id: int) -> dict:
    """After a run is scored: open (or update) adjudication cases from its predictions."""
    from .services.adjudication import cases_sync

    return vars(cases_sync(run_ids=[run_id]))


def detect_cases_later(run_id: int) -> None:
    transaction.on_commit(lambda: enqueue(detect_cases_task, run_id))


@shared_task(name="adjudication.rescore", acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(OperationalError,), retry_backoff=True, retry_jitter=True, max_retries=5)
def rescore_task(case_id: int) -> dict | None:
    """After a correction: rescore every prediction on the corrected item, then the affected runs.
    Idempotent: a second delivery finds nothing left to change."""
    from workers.models import PredictionRescore
    from workers.services.rescoring import predictions_rescore

    from .models import AdjudicationCase

    case = AdjudicationCase.objects.select_related("resolved_by").filter(pk=case_id).first()
    if case is None or not case.item_key or case.result_item_id is None:
        return None
    summary = predictions_rescore(item_key=case.item_key, actor=case.resolved_by, case=case,
                                  reason=f"adjudication case {case.pk}: gold corrected")
    # what the case changed, from the append-only history (a redelivery adds nothing and loses nothing)
    history = PredictionRescore.objects.filter(case=case)
    totals = {"predictions": summary.predictions, "changed": history.count(),
              "flipped_to_correct": history.filter(correct_before=False, correct_after=True).count(),
              "flipped_to_wrong": history.filter(correct_before=True, correct_after=False).count(),
              "runs": sorted(set(history.values_list("prediction__run_id", flat=True)))}
    AdjudicationCase.objects.filter(pk=case.pk).update(rescore=totals)
    return {**totals, "changed_now": summary.changed, "runs_rescored": summary.runs}


def rescore_later(case_id: int) -> None:
    transaction.on_commit(lambda: enqueue(rescore_task, case_id))


@shared_task(name="adjudication.rescore_pending")
def rescore_pending_task(older_than_s: float = 120) -> list[int]:
    """Celery beat: send the rescoring of every correction whose rescoring never ran (the broker was
    down when the verdict committed, or the message was lost). Idempotent like the task itself."""
    from django.utils import timezone

    from .models import AdjudicationCase

    ids = list(AdjudicationCase.objects.filter(
        status=AdjudicationCase.Status.RESOLVED, result_item__isnull=False, rescore__isnull=True,
        resolved_at__lt=timezone.now() - timedelta(seconds=older_than_s)).order_by("pk").values_list("pk", flat=True))
    for case_id in ids:
        rescore_task.delay(case_id)
    return ids


def enqueue(task, *args) -> bool:
    """Send a task after a commit. With the broker down the committed work stays (the request does
    not fail); the task is logged and left to a periodic sweep (`adjudication.rescore_pending`)."""
    try:
        task.delay(*args)
    except KombuOperationalError as exc:
        logger.warning("broker unavailable: %s%s not sent (%s); the periodic sweep sends it later",
                       task.name, args, type(exc).__name__)
        return False
    return True
