"""Celery adapters for adjudication: open cases after a run is scored, rescore after a correction,
and a periodic sweep that sends a rescoring the broker missed. Thin: ids in, one service call."""
from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.db import OperationalError
from django.utils import timezone

from adjudication.models import AdjudicationCase, PredictionRescore
from adjudication.services import cases_sync
from adjudication.services.rescoring import predictions_rescore
from common.dispatch import send, send_after_commit

logger = logging.getLogger(__name__)


@shared_task(name="adjudication.detect", acks_late=True)
def detect_cases_task(run_id: int) -> dict:
    """After a reference run is scored, marked or unmarked: re-sync the cases around it (open,
    re-prioritise, withdraw; adjudication.services.cases). Idempotent."""
    return vars(cases_sync(run_ids=[run_id]))


@shared_task(name="adjudication.rescore", acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(OperationalError,), retry_backoff=True, retry_jitter=True, max_retries=5)
def rescore_task(case_id: int) -> dict | None:
    """After a correction: rescore every prediction on the corrected item, then the affected runs.
    Idempotent: a second delivery finds nothing left to change."""
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
    """Rescore after the verdict commits; a broker outage leaves it to `rescore_pending_task`."""
    send_after_commit(rescore_task, case_id)


@shared_task(name="adjudication.rescore_pending")
def rescore_pending_task(older_than_s: float = 120) -> list[int]:
    """Celery beat: send the rescoring of every correction whose rescoring never ran (the broker was
    down when the verdict committed, or the message was lost). Idempotent like the task itself."""
    ids = list(AdjudicationCase.objects.filter(
        status=AdjudicationCase.Status.RESOLVED, result_item__isnull=False, rescore__isnull=True,
        resolved_at__lt=timezone.now() - timedelta(seconds=older_than_s)).order_by("pk").values_list("pk", flat=True))
    for case_id in ids:
        send(rescore_task, case_id)
    return ids
