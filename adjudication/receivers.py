"""What adjudication does when a lower layer announces something (signals, never imports upward)."""
from __future__ import annotations

from django.dispatch import receiver

from common.dispatch import send_after_commit
from workers.models import EvaluationRun
from workers.signals import run_reference_changed, run_scored

from .tasks import detect_cases_task


@receiver(run_scored, dispatch_uid="adjudication.detect_cases_after_scoring")
def detect_cases_after_scoring(sender, *, run, n_predictions: int, **kwargs) -> None:
    """A scored reference run feeds the adjudication queue: open (or re-prioritise) cases from the
    reference runs after commit. A run that is not a reference run changes nothing in the queue."""
    if n_predictions and EvaluationRun.objects.filter(pk=run.pk, is_reference=True).exists():
        send_after_commit(detect_cases_task, run.pk)


@receiver(run_reference_changed, dispatch_uid="adjudication.resync_after_reference_change")
def resync_after_reference_change(sender, *, run, reference: bool, **kwargs) -> None:
    """A run became a reference run (its cases open or re-prioritise) or stopped being one (the cases it
    raised are re-scored without it, withdrawn where no reference run raises them any more): after commit,
    through the same task (adjudication.services.cases)."""
    send_after_commit(detect_cases_task, run.pk)
