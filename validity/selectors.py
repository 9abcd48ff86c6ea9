"""Reads for the shortcut audit: the audited item set (filters as on /items/), its rows for the pure
core, and stored audits."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator

from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404

from annotation.models import Image, QAItem, Stage, TaskCategory
from annotation.selectors import ITEM_LOOKUPS
from annotation.splits import split_for_group
from common.filters import filter_by

from .models import ShortcutAudit, ShortcutAuditItem
from .shortcuts import ItemRow

AUDIT_FILTERS = ("status", "stage", "category", "modality", "source_dataset")
DEFAULT_FILTERS = {"status": QAItem.Status.APPROVED.value}


def audit_filter_choices() -> dict[str, list[str]]:
    images = Image.objects.order_by()
    return {
        "status": [s.value for s in QAItem.Status],
        "stage": list(Stage.objects.order_by("order").values_list("code", flat=True)),
        "category": list(TaskCategory.objects.order_by("stage__order", "order").values_list("code", flat=True)),
        "modality": [m for m in images.values_list("modality", flat=True).distinct().order_by("modality") if m],
        "source_dataset": [s for s in images.values_list("source_dataset", flat=True).distinct()
                           .order_by("source_dataset") if s],
    }


AUDIT_LOOKUPS = {**{k: v for k, v in ITEM_LOOKUPS.items() if k != "chain"}, "category": "category__code__in",
                 "source_dataset": "chain__image__source_dataset"}


def audit_items(*, filters: dict) -> QuerySet[QAItem]:
    """Current item versions matching already-validated filters (category may be a list)."""
    return filter_by(QAItem.objects.filter(is_current=True), filters, AUDIT_LOOKUPS)


def audit_rows(*, filters: dict, digest: hashlib._Hash | None = None) -> Iterator[ItemRow]:
    """The audited items as rows for the pure core, streamed; feeds `digest` with id:content_hash
    lines in id order when given."""
    split_cache: dict[str, str] = {}
    fields = ("id", "content_hash", "category__code", "stage__code", "category__answer_type", "question", "options",
              "gold_answer", "chain__image__split_group", "chain__image_id")
    for (pk, content_hash, category, stage, answer_type, question, options, gold, group,
         image_id) in audit_items(filters=filters).order_by("id").values_list(*fields).iterator(chunk_size=5000):
        group = group or ""
        split = split_cache.get(group)
        if split is None:
            split = split_cache[group] = split_for_group(group)
        if digest is not None:
            digest.update(f"{pk}:{content_hash}\n".encode())
        yield ItemRow(item_id=pk, category=category, stage=stage, answer_type=answer_type, question=question,
                      options=options or [], gold=gold, split=split, cluster=group or f"image:{image_id}")


def category_labels() -> dict[str, str]:
    return dict(TaskCategory.objects.values_list("code", "name"))


def stage_labels() -> dict[str, str]:
    return dict(Stage.objects.values_list("code", "name"))


def shortcut_audit_list() -> QuerySet[ShortcutAudit]:
    return ShortcutAudit.objects.select_related("created_by").defer("results").order_by("-seq")


def shortcut_audit_get(*, pk: int) -> ShortcutAudit:
    return get_object_or_404(ShortcutAudit.objects.select_related("created_by"), pk=pk)


def shortcut_audit_latest_done() -> ShortcutAudit | None:
    return ShortcutAudit.objects.filter(status=ShortcutAudit.Status.DONE).order_by("-finished_at", "-seq").first()


def shortcut_audit_item_counts(*, audit: ShortcutAudit) -> dict:
    return ShortcutAuditItem.objects.filter(audit=audit).aggregate(
        total=Count("id"), necessary=Count("id", filter=Q(image_necessary=True)),
        blind=Count("id", filter=Q(image_necessary=False)), unassessed=Count("id", filter=Q(image_necessary=None)))
