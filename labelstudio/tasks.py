"""Celery adapters for the Label Studio sync. Thin: ids in, one service call. Label Studio down or
slow -> retry with exponential backoff and full jitter; the reconciliation (Celery beat) catches
anything a webhook hint or a retry missed, because its cursor only moves after a successful pass."""
from __future__ import annotations

import logging
import random
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from common.dispatch import send_after_commit
from labelstudio.client import LabelStudioNotConfigured, LabelStudioRejected, LabelStudioUnavailable
from labelstudio.models import AnnotationBatch
from labelstudio.services import batch_push, batch_sync, reconcile_all, sync_log, tasks_sync

logger = logging.getLogger(__name__)


def retry_delay(retries: int) -> float:
    return random.uniform(0, min(settings.LABEL_STUDIO_RETRY_MAX_S, settings.LABEL_STUDIO_RETRY_BASE_S * 2 ** retries))


@shared_task(name="labelstudio.push_batch", bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def push_batch(self, batch_id: int) -> dict:
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
    batch = AnnotationBatch.objects.filter(pk=batch_id).first()
    if batch is None or not batch.in_label_studio:
        return {"batch_id": batch_id, "status": "not_pushed"}
    try:
        result = batch_sync(batch=batch, full=full)
    except LabelStudioUnavailable:
        return {"batch_id": batch_id, "status": "unavailable"}  # logged on the batch; the next beat retries
    return {"batch_id": batch_id, "status": "synced", "tasks": result.tasks_seen}


@shared_task(name="labelstudio.reconcile", acks_late=True)
def reconcile() -> dict:
    """Celery beat, every LABEL_STUDIO_SYNC_INTERVAL_S: pull every pushed batch; re-sign image URLs
    that will expire within a third of their life."""
    if not settings.LABEL_STUDIO_URL:
        return {"status": "disabled"}
    return reconcile_all()


def push_batch_later(batch_id: int) -> None:
    """Push after commit; with the broker down the batch stays a draft and the batch page's (or the
    API's) push action sends it again (the reconciliation pulls pushed batches only)."""
    send_after_commit(push_batch, batch_id)


def sync_tasks_later(ls_task_ids: list[int]) -> None:
    """Pull these tasks after commit; a missed hint is pulled by the next reconciliation."""
    send_after_commit(sync_tasks, ls_task_ids)


def sync_batch_later(batch_id: int, *, full: bool = False) -> None:
    """Pull one batch after commit (the page's sync actions); a miss is pulled by the reconciliation."""
    send_after_commit(sync_batch, batch_id, full=full)
