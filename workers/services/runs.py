"""Evaluation runs: create, fan out, cancel, resume, finalize.

A run selects current QA items (filters), variant kinds and models. `run_create` fixes the
variant list and cuts it into `RunBatch` rows (one slice × one model). `run_dispatch` sends every
batch that is not done to its model's queue as one Celery chord whose callback finalizes the run;
each batch task is idempotent (see services/execution.py), so a resumed or redelivered batch
writes nothing twice. Finalizing is also attempted after every batch, so a chord lost with a
Redis restart cannot leave a run hanging.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotation.models import QAItem, Variant, VariantKind
from audit.services import audit_record

from ..models import EvaluationRun, ModelEndpoint, RunBatch

FILTER_KEYS = ("stage", "category", "modality", "status", "item_ids")
MAX_BATCH_SIZE = 5000


def _as_list(value) -> list:
    if value in (None, "", []):
        return []
    return list(value) if isinstance(value, (list, tuple, set)) else [value]


def run_variant_ids(*, item_filters: dict, variant_kinds: Sequence[str]) -> list[int]:
    """The variants a run with these filters would evaluate, in id order. Items: current versions,
    `approved` unless the filter names another status. `clean` is always included: every
    robustness metric is measured against it."""
    unknown = set(item_filters) - set(FILTER_KEYS)
    if unknown:
        raise ValidationError(f"unknown item filters {sorted(unknown)}; allowed: {', '.join(FILTER_KEYS)}")
    items = QAItem.objects.filter(is_current=True)
    statuses = _as_list(item_filters.get("status")) or [QAItem.Status.APPROVED]
    items = items.filter(status__in=statuses)
    if stages := _as_list(item_filters.get("stage")):
        items = items.filter(stage__code__in=stages)
    if categories := _as_list(item_filters.get("category")):
        items = items.filter(category__code__in=categories)
    if modalities := _as_list(item_filters.get("modality")):
        items = items.filter(chain__image__modality__in=modalities)
    if item_ids := _as_list(item_filters.get("item_ids")):
        items = items.filter(pk__in=[int(i) for i in item_ids])
    kinds = _as_list(variant_kinds)
    bad = [k for k in kinds if k not in VariantKind.values]
    if bad:
        raise ValidationError(f"unknown variant kinds {bad}; known: {', '.join(VariantKind.values)}")
    variants = Variant.objects.filter(item__in=items)
    if kinds:
        variants = variants.filter(kind__in=sorted(set(kinds) | {VariantKind.CLEAN}))
    return list(variants.order_by("pk").values_list("pk", flat=True))


def _provenance(endpoints: Iterable[ModelEndpoint]) -> dict:
    return {"endpoints": {str(e.pk): {"name": e.name, "backend": e.backend, "parameters": e.parameters,
                                      "queue": e.queue, "prompt_template": e.prompt_template,
                                      "prompt_template_hash": e.prompt_template_hash, "box_format": e.box_format}
                          for e in endpoints}}


def run_create(*, name: str, endpoints: Sequence[ModelEndpoint], actor, item_filters: dict | None = None,
               variant_kinds: Sequence[str] = (), batch_size: int = 64, start: bool = True) -> EvaluationRun:
    """Create a run and its batches; with `start`, dispatch them once the transaction commits."""
    item_filters = {k: v for k, v in (item_filters or {}).items() if v not in (None, "", [])}
    endpoints = list(endpoints)
    if not endpoints:
        raise ValidationError("choose at least one model")
    inactive = [e.name for e in endpoints if not e.is_active]
    if inactive:
        raise ValidationError(f"models {inactive} are not active")
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValidationError(f"batch size must be between 1 and {MAX_BATCH_SIZE}")
    variant_ids = run_variant_ids(item_filters=item_filters, variant_kinds=variant_kinds)
    if not variant_ids:
        raise ValidationError("no variants match these filters (are the items approved and their variants generated?)")
    with transaction.atomic():
        run = EvaluationRun.objects.create(
            name=name, item_filters=item_filters, variant_kinds=sorted(set(variant_kinds)), batch_size=batch_size,
            n_variants=len(variant_ids), total=len(variant_ids) * len(endpoints), provenance=_provenance(endpoints),
            created_by=actor if getattr(actor, "is_authenticated", False) else None)
        run.endpoints.set(endpoints)
        batches = [
            RunBatch(run=run, endpoint=e, index=i, variant_ids=variant_ids[s:s + batch_size],
                     size=len(variant_ids[s:s + batch_size]))
            for e in endpoints for i, s in enumerate(range(0, len(variant_ids), batch_size))
        ]
        RunBatch.objects.bulk_create(batches, batch_size=1000)
        audit_record(actor=actor, action="workers.run.create", target=run,
                     after={"name": name, "endpoints": [e.name for e in endpoints], "item_filters": item_filters,
                            "variant_kinds": run.variant_kinds, "n_variants": run.n_variants, "total": run.total,
                            "batch_size": batch_size, "batches": len(batches)})
        if start:
            _start(run, actor=actor, action="workers.run.start")
    return run


def _start(run: EvaluationRun, *, actor, action: str) -> None:
    run.status = EvaluationRun.Status.RUNNING
    run.started_at = timezone.now()
    run.finished_at = None
    run.error = ""
    run.save(update_fields=["status", "started_at", "finished_at", "error"])
    pending = RunBatch.objects.filter(run=run).exclude(status=RunBatch.Status.DONE)
    pending.filter(status=RunBatch.Status.FAILED).update(status=RunBatch.Status.PENDING, error="")
    audit_record(actor=actor, action=action, target=run, after={"batches_to_run": pending.count()})
    transaction.on_commit(lambda: run_dispatch(run_id=run.pk))


def run_dispatch(*, run_id: int) -> int:
    """Send every batch that is not done as one chord (callback: finalize). Returns how many."""
    from celery import chord

    from ..tasks import eval_batch, run_finalize_task

    rows = list(RunBatch.objects.filter(run_id=run_id).exclude(status=RunBatch.Status.DONE)
                .values_list("pk", "endpoint__queue").order_by("endpoint_id", "index"))
    if not rows:
        run_finalize(run_id=run_id)
        return 0
    header = [eval_batch.si(pk).set(queue=queue) for pk, queue in rows]
    chord(header)(run_finalize_task.si(run_id).set(queue="cpu"))
    return len(rows)


def run_cancel(*, run: EvaluationRun, actor) -> EvaluationRun:
    """Stop a run: batches not started return at once, running ones stop before their next chunk.
    What was predicted is kept; `run_resume` continues from there."""
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().get(pk=run.pk)
        if not run.is_active:
            raise ValidationError(f"run {run.pk} is {run.status}; only pending or running runs can be cancelled")
        run.status = EvaluationRun.Status.CANCELLED
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "finished_at"])
        audit_record(actor=actor, action="workers.run.cancel", target=run, after={"status": run.status})
    return run


def run_resume(*, run: EvaluationRun, actor) -> EvaluationRun:
    """Run again every batch that is not done (cancelled, failed, or lost with a worker).
    Variants already predicted are skipped."""
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().get(pk=run.pk)
        if run.status == EvaluationRun.Status.COMPLETED:
            raise ValidationError(f"run {run.pk} is already complete")
        _start(run, actor=actor, action="workers.run.resume")
    return run


def run_finalize(*, run_id: int) -> EvaluationRun | None:
    """Mark the run completed (or failed, when a batch failed) once no batch is pending or running,
    then score it. Idempotent: a run that is not running is left alone."""
    from .scoring import run_score

    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status != EvaluationRun.Status.RUNNING:
            return run
        statuses = set(RunBatch.objects.filter(run=run).values_list("status", flat=True))
        if statuses & {RunBatch.Status.PENDING, RunBatch.Status.RUNNING}:
            return run
        failed = RunBatch.objects.filter(run=run, status=RunBatch.Status.FAILED).count()
        run.status = EvaluationRun.Status.FAILED if failed else EvaluationRun.Status.COMPLETED
        run.error = f"{failed} batches failed; resume the run to retry them" if failed else ""
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "error", "finished_at"])
        audit_record(actor=None, action="workers.run.finish", target=run,
                     after={"status": run.status, "failed_batches": failed})
    run_score(run=run, actor=None)
    return run
