"""Reference runs: the runs whose predictions feed the adjudication queue (docs/adjudication.md).

A run scored while it is not a reference run changes nothing in the queue, so a throwaway run (a
baseline alone, a quick check) can never reorder what the radiologists read. A curator marks a run as
reference when its models are the ones the benchmark should be audited with:

- only a finished (not pending or running) and scored run can be marked;
- a run whose every model is a baseline (`ModelEndpoint.is_baseline`: random, prior, null) cannot: it
  would raise nothing, baselines never count as models in the detection rules;
- marking or unmarking is audited (`workers.run.reference`, before and after) and announced with
  `workers.signals.run_reference_changed`; adjudication then re-syncs the cases around the run after
  commit (marking opens and re-prioritises them; unmarking re-scores them without the run and withdraws
  the open ones no reference run raises any more);
- asking for the state a run is already in changes and records nothing.
"""
from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from accounts.roles import Capability, user_can
from audit.services import audit_record
from common.errors import Conflict

from ..models import EvaluationRun
from ..signals import run_reference_changed

MAX_REASON = 500


def run_set_reference(*, run: EvaluationRun, reference: bool, actor, reason: str = "") -> EvaluationRun:
    """Mark `run` as a reference run (`reference=True`) or unmark it. Raises PermissionDenied for an
    actor without the manage_reference_runs capability (curators, admins) and Conflict for a run that
    is not finished and scored, or that evaluates only baselines."""
    if actor is None or not user_can(actor, Capability.MANAGE_REFERENCE_RUNS):
        raise PermissionDenied("only curators and admins mark reference runs")
    reference = bool(reference)
    reason = (reason or "").strip()[:MAX_REASON]
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().get(pk=run.pk)
        if run.is_reference == reference:
            return run
        endpoints = list(run.endpoints.order_by("pk"))
        models = [e.name for e in endpoints if not e.is_baseline]
        baselines = [e.name for e in endpoints if e.is_baseline]
        if reference:
            if run.is_active or run.scored_at is None:
                raise Conflict(f"run {run.pk} is {run.get_status_display()} and "
                               f"{'scored' if run.scored_at else 'not scored yet'}: only a finished, scored run "
                               "can be a reference run")
            if not models:
                raise Conflict(f"run {run.pk} evaluates only baselines ({', '.join(baselines) or 'no model'}); "
                               "baselines never count as models in the adjudication rules, so it cannot be a "
                               "reference run")
        before = {"is_reference": run.is_reference, "reference_set_by": run.reference_set_by_id,
                  "reference_reason": run.reference_reason}
        run.is_reference, run.reference_set_by, run.reference_set_at = reference, actor, timezone.now()
        run.reference_reason = reason
        run.save(update_fields=["is_reference", "reference_set_by", "reference_set_at", "reference_reason"])
        audit_record(actor=actor, action="workers.run.reference", target=run, before=before,
                     after={"is_reference": reference, "reason": reason, "models": models,
                            "baselines_ignored": baselines})
        # adjudication re-syncs the cases around the run after commit (workers never imports it)
        run_reference_changed.send(sender=EvaluationRun, run=run, reference=reference, actor=actor)
    return run
