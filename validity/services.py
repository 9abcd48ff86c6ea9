"""Writes of the shortcut audit. Every write records an audit event in the same transaction."""
from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from annotation.models import QAItem
from audit.services import audit_record
from common.dispatch import send_after_commit

from . import selectors
from .models import ShortcutAudit, ShortcutAuditItem
from .shortcuts import EVALUABLE_SPLITS, AuditInputError, AuditParams, run_audit, validate_split

logger = logging.getLogger(__name__)
Progress = Callable[[int, int, str], None]
BULK = 5000


def normalise_filters(filters: dict | None) -> dict:
    """Validate item filters (as on /items/); `category` may be a comma-separated string or a list.
    Unknown keys or values raise ValidationError naming them. Missing status means approved."""
    filters = {k: v for k, v in (filters or {}).items() if v not in (None, "", [])}
    unknown = sorted(set(filters) - set(selectors.AUDIT_FILTERS))
    if unknown:
        raise ValidationError(f"unknown filter(s): {', '.join(unknown)} "
                              f"(allowed: {', '.join(selectors.AUDIT_FILTERS)})")
    out = {**selectors.DEFAULT_FILTERS, **filters}
    if out.get("status") in ("any", "all"):
        out.pop("status")
    choices = selectors.audit_filter_choices()
    errors = []
    for key in ("status", "stage", "modality", "source_dataset"):
        if key in out:
            out[key] = str(out[key]).strip()
            if out[key] not in choices[key]:
                errors.append(f"unknown {key} {out[key]!r}")
    if "category" in out:
        raw = out["category"]
        cats = [c.strip() for c in (raw.split(",") if isinstance(raw, str) else raw) if str(c).strip()]
        bad = [c for c in cats if c not in choices["category"]]
        if bad:
            errors.append(f"unknown category {', '.join(map(repr, bad))}")
        out["category"] = sorted(set(cats))
        if not out["category"]:
            out.pop("category")
    if errors:
        raise ValidationError("; ".join(errors))
    return out


def _next_seq() -> int:
    return (ShortcutAudit.objects.aggregate(m=Max("seq"))["m"] or 0) + 1


def shortcut_audit_create(*, filters: dict | None, split: str = "test", actor,
                          params: dict | None = None) -> ShortcutAudit:
    """A pending audit of the current items matching `filters`. Nothing is written on bad input."""
    clean = normalise_filters(filters)
    try:
        validate_split(split)
    except AuditInputError as exc:
        raise ValidationError(str(exc)) from exc
    try:
        audit_params = AuditParams(split=split, **(params or {}))
    except TypeError as exc:
        raise ValidationError(f"unknown audit parameter: {exc}") from exc
    n = selectors.audit_items(filters=clean).count()
    if n == 0:
        raise ValidationError(f"no current items match {clean}: nothing to audit")
    for attempt in range(3):
        try:
            with transaction.atomic():
                created_by = actor if getattr(actor, "is_authenticated", False) else None
                audit = ShortcutAudit.objects.create(seq=_next_seq(), filters=clean, split=split, item_count=n,
                                                     params=audit_params.as_dict(), created_by=created_by)
                audit_record(actor=actor, action="validity.shortcut_audit.create", target=audit,
                             after={"seq": audit.seq, "filters": clean, "split": split, "item_count": n})
            return audit
        except IntegrityError:  # two audits created at once took the same number
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _fail(audit: ShortcutAudit, message: str) -> ShortcutAudit:
    with transaction.atomic():
        ShortcutAudit.objects.filter(pk=audit.pk).update(status=ShortcutAudit.Status.FAILED, error=message[:4000],
                                                         finished_at=timezone.now())
        audit.refresh_from_db()
        audit_record(actor=None, action="validity.shortcut_audit.fail", target=audit,
                     after={"seq": audit.seq, "error": audit.error})
    return audit


def shortcut_audit_execute(*, audit_id: int, progress: Progress | None = None) -> ShortcutAudit | None:
    """Run a pending (or interrupted running) audit. Idempotent: a done or failed audit is returned
    unchanged; a missing one returns None."""
    audit = ShortcutAudit.objects.filter(pk=audit_id).first()
    if audit is None or audit.status in (ShortcutAudit.Status.DONE, ShortcutAudit.Status.FAILED):
        return audit
    ShortcutAudit.objects.filter(pk=audit.pk).update(status=ShortcutAudit.Status.RUNNING, started_at=timezone.now())
    digest = hashlib.sha256()
    try:
        rows = list(selectors.audit_rows(filters=audit.filters, digest=digest))
        params = AuditParams(**{**audit.params, "split": audit.split})
        result = run_audit(rows, params=params, progress=progress)
    except AuditInputError as exc:
        return _fail(audit, str(exc))
    except Exception as exc:  # recorded on the audit, then re-raised for the worker log
        logger.exception("shortcut audit #%s failed", audit.seq)
        _fail(audit, f"{type(exc).__name__}: {exc}")
        raise
    _label(result.results)
    return _finish(audit, result, digest.hexdigest())


def _label(results: dict) -> None:
    cats, stages = selectors.category_labels(), selectors.stage_labels()
    for cell in results["categories"]:
        cell["label"] = cats.get(cell["key"], cell["key"])
    for cell in results["stages"]:
        cell["label"] = f"{cell['key']} {stages.get(cell['key'], '')}".strip()


@transaction.atomic
def _finish(audit: ShortcutAudit, result, digest: str) -> ShortcutAudit:
    audit = ShortcutAudit.objects.select_for_update().get(pk=audit.pk)
    if audit.status == ShortcutAudit.Status.DONE:
        return audit
    ShortcutAuditItem.objects.filter(audit=audit).delete()   # a redelivered task starts the table over
    ids = result.item_id.tolist()
    masks = result.mask.tolist()
    rows = [ShortcutAuditItem(audit=audit, item_id=pk, split=s, correct_mask=m, image_necessary=v)
            for pk, s, m, v in zip(ids, result.split, masks, result.image_necessary)]
    ShortcutAuditItem.objects.bulk_create(rows, batch_size=BULK)
    # the latest audit wins: the audited item versions carry this audit's verdict
    for verdict in (True, False, None):
        chosen = [pk for pk, v in zip(ids, result.image_necessary) if v is verdict]
        for k in range(0, len(chosen), 10 * BULK):
            QAItem.objects.filter(pk__in=chosen[k:k + 10 * BULK]).update(image_necessary=verdict)
    audit.status = ShortcutAudit.Status.DONE
    audit.results = result.results
    audit.item_count = len(ids)
    audit.digest = digest
    audit.error = ""
    audit.finished_at = timezone.now()
    audit.save(update_fields=["status", "results", "item_count", "digest", "error", "finished_at"])
    overall = result.results["overall"]
    best = overall.get("best") or {}
    audit_record(actor=audit.created_by, action="validity.shortcut_audit.finish", target=audit,
                 after={"seq": audit.seq, "item_count": len(ids), "digest": digest, "split": audit.split,
                        "image_necessary": result.results["counts"]["image_necessary"],
                        "best_blind": best.get("code"), "best_blind_accuracy": best.get("accuracy"),
                        "chance": overall.get("chance"),
                        "flags": {c["key"]: c["flag"] for c in result.results["categories"]}})
    return audit


def shortcut_audit_run(*, filters: dict | None, split: str = "test", actor, progress: Progress | None = None,
                       params: dict | None = None) -> ShortcutAudit:
    """Create and run an audit in this process (the command; the page and API queue the task)."""
    audit = shortcut_audit_create(filters=filters, split=split, actor=actor, params=params)
    return shortcut_audit_execute(audit_id=audit.pk, progress=progress)


def shortcut_audit_enqueue(*, filters: dict | None, split: str = "test", actor) -> ShortcutAudit:
    """Create an audit and send its Celery task once the row is committed. With the broker down the
    audit is kept (pending; the miss is logged) and the caller still gets it: queue another from the page."""
    # lazy: validity.tasks imports this module at module level (its task calls shortcut_audit_execute)
    from .tasks import shortcut_audit_task

    with transaction.atomic():
        audit = shortcut_audit_create(filters=filters, split=split, actor=actor)
        send_after_commit(shortcut_audit_task, audit.pk, queue="cpu")
    return audit


__all__ = ["EVALUABLE_SPLITS", "normalise_filters", "shortcut_audit_create", "shortcut_audit_enqueue",
           "shortcut_audit_execute", "shortcut_audit_run"]
