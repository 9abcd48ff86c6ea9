"""Evaluation runs: create, start, cancel, resume, advance, finalize, and the sweep that keeps them moving.

A run selects current QA items (filters) of one patient-level split (`test` by default: the
benchmark is scored on held-out patients), variant kinds and models. `run_create` fixes the
variant list and cuts it into `RunBatch` rows (one slice × one model). Starting a run sends a first
window of batches (workers/services/dispatch.py: no chord, nothing of the run's state in the
broker); each finished batch calls `run_advance`, which tops the window up or, after the last batch,
finalizes and scores the run. Each batch task is idempotent (workers/services/execution.py), so a
resumed, redelivered or re-sent batch writes nothing twice. `runs_reconcile` (Celery beat) re-sends
batches the broker lost (a Redis restart between a pop and an ack, a worker killed with its host) and
finishes runs whose last advance was lost.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotation.models import Image, QAItem, Variant, VariantKind
from annotation.splits import DEFAULT_FRACTIONS, SPLITS, split_for_group
from audit.services import audit_record
from common.dispatch import call_after_commit

from ..models import EvaluationRun, ModelEndpoint, RunBatch, RunSplit
from .dispatch import batches_lost, batches_resend, run_dispatch
from .scoring import run_score

FILTER_KEYS = ("stage", "category", "modality", "status", "item_ids")
MAX_BATCH_SIZE = 5000
DEFAULT_SPLIT = RunSplit.TEST.value


def check_split(split) -> str:
    """The split name, or a ValidationError naming the allowed ones."""
    if split not in RunSplit.values:
        raise ValidationError(f"unknown split {split!r}; choose one of {', '.join(RunSplit.values)} "
                              f"(benchmark runs use {DEFAULT_SPLIT})")
    return split


def split_group_filter(split: str) -> tuple[str, list[str]] | None:
    """How to keep only items whose image is in `split`: ("in", groups) or ("not_in", groups) on the
    image's split group, whichever list is shorter; None for `all`. One query over the distinct split
    groups (patients), hashed once each in Python; the variants themselves are filtered in SQL."""
    check_split(split)
    if split == RunSplit.ALL:
        return None
    groups = Image.objects.order_by().values_list("split_group", flat=True).distinct()
    inside, outside = [], []
    for group in groups.iterator(chunk_size=10000):
        (inside if split_for_group(group or "") == split else outside).append(group)
    return ("in", inside) if len(inside) <= len(outside) else ("not_in", outside)


def _as_list(value) -> list:
    if value in (None, "", []):
        return []
    return list(value) if isinstance(value, (list, tuple, set)) else [value]


def filtered_items(item_filters: dict):
    """Current items matching the run filters (stage, category, modality, status, item_ids), `approved`
    unless the filter names another status; all splits. Also the item set a fine-tuning job trains on."""
    items = QAItem.objects.filter(is_current=True)
    items = items.filter(status__in=_as_list(item_filters.get("status")) or [QAItem.Status.APPROVED])
    if stages := _as_list(item_filters.get("stage")):
        items = items.filter(stage__code__in=stages)
    if categories := _as_list(item_filters.get("category")):
        items = items.filter(category__code__in=categories)
    if modalities := _as_list(item_filters.get("modality")):
        items = items.filter(chain__image__modality__in=modalities)
    if item_ids := _as_list(item_filters.get("item_ids")):
        items = items.filter(pk__in=[int(i) for i in item_ids])
    return items


def run_items(*, item_filters: dict, split: str = DEFAULT_SPLIT):
    """The items a run with these filters evaluates (a queryset): current versions, `approved` unless
    the filter names another status, whose image is in `split` (patient level:
    `annotation.splits.split_for_group(image.split_group)`; `all` keeps every split). The run form's
    count preview counts these same rows (workers.selectors.run_preview)."""
    by_split = split_group_filter(split)
    unknown = set(item_filters) - set(FILTER_KEYS)
    if unknown:
        raise ValidationError(f"unknown item filters {sorted(unknown)}; allowed: {', '.join(FILTER_KEYS)}")
    items = filtered_items(item_filters)
    if by_split is not None:
        how, groups = by_split
        if how == "in":
            items = items.filter(chain__image__split_group__in=groups)
        else:  # chain and image are forward foreign keys: exclude() is a plain NOT IN
            items = items.exclude(chain__image__split_group__in=groups)
    return items


def run_variants(*, item_filters: dict, variant_kinds: Sequence[str], split: str = DEFAULT_SPLIT):
    """The variants of `run_items` in the chosen kinds (a queryset); `clean` is always included: every
    robustness metric is measured against it."""
    items = run_items(item_filters=item_filters, split=split)
    kinds = _as_list(variant_kinds)
    bad = [k for k in kinds if k not in VariantKind.values]
    if bad:
        raise ValidationError(f"unknown variant kinds {bad}; known: {', '.join(VariantKind.values)}")
    variants = Variant.objects.filter(item__in=items)
    if kinds:
        variants = variants.filter(kind__in=sorted(set(kinds) | {VariantKind.CLEAN}))
    return variants


def run_variant_ids(*, item_filters: dict, variant_kinds: Sequence[str], split: str = DEFAULT_SPLIT) -> list[int]:
    """The variants a run with these filters would evaluate (`run_variants`), in id order."""
    variants = run_variants(item_filters=item_filters, variant_kinds=variant_kinds, split=split)
    return list(variants.order_by("pk").values_list("pk", flat=True))


def fitted_split(endpoint: ModelEndpoint) -> str | None:
    """The split a fitted baseline learned from (the `prior`): None for models that learn nothing
    from our items. A prior fitted before the split was recorded learned from train."""
    if endpoint.backend != "prior" or not (endpoint.parameters or {}).get("table"):
        return None
    return endpoint.parameters.get("fitted_split") or "train"


def train_overlap(endpoints: Iterable[ModelEndpoint], split: str) -> dict[str, str]:
    """Endpoints that would be scored on items they were fitted on: name -> fitted split."""
    out = {}
    for e in endpoints:
        fitted = fitted_split(e)
        if fitted is not None and split in (fitted, RunSplit.ALL):
            out[e.name] = fitted
    return out


def _provenance(endpoints: Iterable[ModelEndpoint], *, split: str, overlap: dict[str, str],
                allow_train_overlap: bool) -> dict:
    return {
        "endpoints": {str(e.pk): {"name": e.name, "backend": e.backend, "parameters": e.parameters,
                                  "queue": e.queue, "prompt_template": e.prompt_template,
                                  "prompt_template_hash": e.prompt_template_hash, "box_format": e.box_format,
                                  **({"fitted_split": fitted_split(e)} if fitted_split(e) else {})}
                      for e in endpoints},
        "split": {"name": split, "unit": "patient (image split group)",
                  "fractions": dict(zip(SPLITS, DEFAULT_FRACTIONS)),
                  "rule": "annotation.splits.split_for_group(image.split_group)"},
        "allow_train_overlap": allow_train_overlap,
        "train_overlap": overlap,
    }


def run_create(*, name: str, endpoints: Sequence[ModelEndpoint], actor, item_filters: dict | None = None,
               variant_kinds: Sequence[str] = (), batch_size: int = 64, split: str = DEFAULT_SPLIT,
               allow_train_overlap: bool = False, start: bool = True) -> EvaluationRun:
    """Create a run and its batches; with `start`, dispatch them once the transaction commits.

    `split` (default `test`) keeps the items whose image is in that patient-level split. A fitted
    baseline (the `prior`) is never scored on the split it learned from: a run that would do so
    (split `train` or `all` for a prior fitted on train) is refused unless `allow_train_overlap`
    is given, and the provenance then records the overlap."""
    check_split(split)
    item_filters = {k: v for k, v in (item_filters or {}).items() if v not in (None, "", [])}
    endpoints = list(endpoints)
    if not endpoints:
        raise ValidationError("choose at least one model")
    inactive = [e.name for e in endpoints if not e.is_active]
    if inactive:
        raise ValidationError(f"models {inactive} are not active")
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValidationError(f"batch size must be between 1 and {MAX_BATCH_SIZE}")
    overlap = train_overlap(endpoints, split)
    if overlap and not allow_train_overlap:
        names = ", ".join(f"{n} (fitted on {s})" for n, s in sorted(overlap.items()))
        raise ValidationError(f"{names} would be scored on the items it was fitted on with split {split!r}; "
                              f"evaluate the test split, or allow the train overlap explicitly "
                              f"(allow_train_overlap / --allow-train-overlap)")
    variant_ids = run_variant_ids(item_filters=item_filters, variant_kinds=variant_kinds, split=split)
    if not variant_ids:
        raise ValidationError(f"no variants match these filters in the {split!r} split "
                              f"(are the items approved and their variants generated?)")
    with transaction.atomic():
        run = EvaluationRun.objects.create(
            name=name, item_filters=item_filters, variant_kinds=sorted(set(variant_kinds)), batch_size=batch_size,
            split=split, n_variants=len(variant_ids), total=len(variant_ids) * len(endpoints),
            provenance=_provenance(endpoints, split=split, overlap=overlap, allow_train_overlap=allow_train_overlap),
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
                            "split": split, "allow_train_overlap": allow_train_overlap, "train_overlap": overlap,
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
    pending.update(dispatched_at=None)   # nothing of an earlier start is still in flight for this one
    audit_record(actor=actor, action=action, target=run, after={"batches_to_run": pending.count()})
    # a broker outage is logged, not raised: the run and its batches stay committed; resume sends them
    run_id = run.pk
    call_after_commit(f"run {run_id} dispatch", lambda: run_dispatch(run_id=run_id))


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
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status != EvaluationRun.Status.RUNNING:
            return run
        if RunBatch.objects.filter(run=run, status__in=(RunBatch.Status.PENDING, RunBatch.Status.RUNNING)).exists():
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


def run_advance(*, run_id: int) -> None:
    """After a batch: send the next batches of the window, or finalize the run when none is left."""
    if not RunBatch.objects.filter(run_id=run_id, status__in=(RunBatch.Status.PENDING, RunBatch.Status.RUNNING)) \
            .exists():
        run_finalize(run_id=run_id)
        return
    run_dispatch(run_id=run_id)      # with the broker down the batches stay unsent; the sweep sends them later


def runs_reconcile(*, now=None) -> dict:
    """The sweep: re-send the batches the broker lost (`dispatch.batches_lost`, audited per run), top every
    running run's window up, and finalize runs whose batches are all done. Safe at any time and from
    several processes: every step is idempotent. Returns counts, for the log and the command."""
    lost = batches_lost(now=now)
    resent = 0
    if lost:
        resent = batches_resend(lost)
    running = list(EvaluationRun.objects.filter(status=EvaluationRun.Status.RUNNING).values_list("pk", flat=True))
    for run_id in running:
        run_advance(run_id=run_id)
    return {"lost": len(lost), "resent": resent, "running_runs": len(running)}
