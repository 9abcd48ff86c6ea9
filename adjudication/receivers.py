"""What adjudication does when a lower layer announces something (signals, never imports upward)."""
from __future__ import annotations

from django.dispatch import receiver

from common.dispatch import send_after_commit
from workers.signals import run_scored

from .tasks import detect_cases_task


@receiver(run_scored, dispatch_uid="adjudication.detect_cases_after_scoring")
def detect_cases_after_scoring(sender, *, run, n_predictions: int, **kwargs) -> None:
    """A scored run feeds the adjudication queue: open (or update) cases from its predictions."""
    if n_predictions:
        send_after_commit(detect_cases_task, run.pk)
