"""Annotation batches, the sync log, and the signed image links tasks carry (docs/labelstudio.md)."""
from __future__ import annotations

import logging

from django.conf import settings
from django.core import signing
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse

from annotation.models import QAItem
from audit.services import audit_record
from labelstudio.models import AnnotationBatch, AnnotationTask, SyncLogEntry

log = logging.getLogger("labelstudio.services")
IMAGE_SIGNING_SALT = "medr2.labelstudio.image"
MAX_READERS_PER_TASK = 10


# --- sync log ---------------------------------------------------------------------------------------

def sync_log(*, batch: AnnotationBatch | None, direction: str, level: str, code: str, message: str,
             ls_task_id: int | None = None, ls_annotation_id: int | None = None, detail: dict | None = None) -> None:
    """A line on the batch's sync log (ids, codes and messages only; never patient data)."""
    SyncLogEntry.objects.create(batch=batch, direction=direction, level=level, code=code[:40], message=message[:2000],
                                ls_task_id=ls_task_id, ls_annotation_id=ls_annotation_id, detail=detail or {})
    if level != SyncLogEntry.Level.INFO:
        log.warning("labelstudio %s %s batch=%s task=%s annotation=%s: %s", direction, code,
                    batch.pk if batch else None, ls_task_id, ls_annotation_id, message)


# --- batches ----------------------------------------------------------------------------------------

def batch_create(*, name: str, actor, images=None, qa_items=None, maximum_annotations: int = 1, readers=(),
                 description: str = "", mode: str = AnnotationBatch.Mode.INDEPENDENT,
                 per_reader: bool = True) -> AnnotationBatch:
    """One task per image (boxes), or one per QA item (answer + boxes on its image) when qa_items is given.
    `mode`: independent (no pre-fill) or correction (pre-filled boxes, each pulled box keeps its
    provenance). `per_reader` False pushes one shared project under the admin token, as batches were
    before reader isolation: Label Studio then shows every reader the others' work, so the pages, API
    and commands never ask for it (docs/labelstudio.md)."""
    if mode not in AnnotationBatch.Mode.values:
        raise ValidationError(f"mode must be one of {', '.join(AnnotationBatch.Mode.values)}, got {mode!r}")
    if not name.strip():
        raise ValidationError("a batch needs a name")
    if not 1 <= maximum_annotations <= MAX_READERS_PER_TASK:
        raise ValidationError(f"annotators per task must be 1 to {MAX_READERS_PER_TASK}, got {maximum_annotations}")
    if qa_items is not None:
        items = list(QAItem.objects.filter(pk__in=[getattr(i, "pk", i) for i in qa_items], is_current=True)
                     .select_related("chain").order_by("pk"))
        rows = [(item.chain.image_id, item.pk) for item in items]
    else:
        rows = [(pk, None) for pk in sorted({getattr(i, "pk", i) for i in (images or [])})]
    if not rows:
        raise ValidationError("a batch needs at least one image or QA item")
    readers = list(readers)
    with transaction.atomic():
        batch = AnnotationBatch.objects.create(
            name=name.strip(), description=description, with_qa=qa_items is not None, mode=mode,
            per_reader=per_reader,
            maximum_annotations=maximum_annotations,
            created_by=actor if getattr(actor, "is_authenticated", False) else None)
        if readers:
            batch.readers.set(readers)
        AnnotationTask.objects.bulk_create(
            [AnnotationTask(batch=batch, image_id=image_id, qa_item_id=item_id) for image_id, item_id in rows],
            batch_size=1000)
        audit_record(actor=actor, action="labelstudio.batch.create", target=batch, after={
            "name": batch.name, "tasks": len(rows), "with_qa": batch.with_qa,
            "maximum_annotations": maximum_annotations, "readers": [u.pk for u in readers], "mode": mode,
            "per_reader": per_reader})
    return batch


def batch_set_readers(*, batch: AnnotationBatch, readers, actor) -> None:
    readers = list(readers)
    with transaction.atomic():
        before = sorted(batch.readers.values_list("pk", flat=True))
        batch.readers.set(readers)
        audit_record(actor=actor, action="labelstudio.batch.readers", target=batch,
                     before={"readers": before}, after={"readers": sorted(u.pk for u in readers)})


# --- images: signed, expiring URLs ------------------------------------------------------------------

def image_token(image_id: int) -> str:
    return signing.TimestampSigner(salt=IMAGE_SIGNING_SALT).sign(str(image_id))


def image_id_from_token(token: str) -> int:
    """Raises signing.SignatureExpired / signing.BadSignature."""
    value = signing.TimestampSigner(salt=IMAGE_SIGNING_SALT).unsign(
        token, max_age=settings.LABEL_STUDIO_IMAGE_URL_MAX_AGE_S)
    return int(value)


def image_url(image_id: int) -> str:
    return settings.MEDR2_PUBLIC_URL + reverse("labelstudio:image", args=[image_token(image_id)])


def webhook_url() -> str:
    return settings.MEDR2_WEBHOOK_BASE_URL + reverse("labelstudio:api-webhook")



def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
