"""Pull: Label Studio tasks and annotations into boxes with their authors, idempotently.
Webhooks only name tasks to fetch; reconciliation pulls everything changed since the last
successful pass (the cursor moves only on success)."""
from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.models import Finding, GroundingBox, QAItem
from audit.services import audit_record
from labelstudio import config as ls_config
from labelstudio.agreement import AnnotatorView, LabeledBox, task_agreement
from labelstudio.client import LabelStudioClient, LabelStudioUnavailable
from labelstudio.convert import parse_result
from labelstudio.models import AnnotationBatch, AnnotationTask, AnnotatorDisagreement, LabelStudioAnnotation
from labelstudio.services.batches import _int, sync_log
from labelstudio.services.push import batch_refresh_urls

CURSOR_OVERLAP = timedelta(seconds=120)     # clock skew / in-flight writes: re-pull a little (idempotent)


@dataclass
class SyncResult:
    tasks_seen: int = 0
    annotations_created: int = 0
    annotations_updated: int = 0
    annotations_retired: int = 0
    unchanged: int = 0
    rejected_regions: int = 0
    errors: int = 0

    def add(self, other: SyncResult) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class UserMap:
    """Label Studio user id -> (email, our user), fetched once per sync."""

    def __init__(self, client: LabelStudioClient):
        self.client = client
        self._emails: dict[int, str] | None = None
        self._users: dict[str, object] = {}

    def email(self, completed_by) -> tuple[int | None, str]:
        if isinstance(completed_by, dict):
            uid = completed_by.get("id")
            email = completed_by.get("email") or ""
            return (uid if isinstance(uid, int) else None), email
        if isinstance(completed_by, int) and not isinstance(completed_by, bool):
            if self._emails is None:
                self._emails = self.client.user_emails()
            if completed_by not in self._emails:       # a user created since the first lookup
                self._emails = self.client.user_emails()
            return completed_by, self._emails.get(completed_by, "")
        return None, ""

    def user(self, email: str):
        if not email:
            return None
        key = email.lower()
        if key not in self._users:
            self._users[key] = (get_user_model().objects.filter(email__iexact=email, is_active=True)
                                .order_by("pk").first())
        return self._users[key]


def _hash_annotation(ann: dict) -> str:
    canonical = json.dumps({"result": ann.get("result"), "was_cancelled": bool(ann.get("was_cancelled"))},
                           sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _retire_boxes(annotation_id: int) -> list[int]:
    boxes = GroundingBox.objects.filter(ls_annotation_id=str(annotation_id), status=Finding.Status.ACTIVE)
    box_ids = list(boxes.values_list("pk", flat=True))
    finding_ids = list(boxes.values_list("finding_id", flat=True))
    boxes.update(status=Finding.Status.RETIRED)
    Finding.objects.filter(pk__in=finding_ids).update(status=Finding.Status.RETIRED)
    return box_ids


def _apply_annotation(task: AnnotationTask, ann: dict, users: UserMap, result: SyncResult) -> None:
    batch = task.batch
    ann_id = _int(ann.get("id"))
    if ann_id is None:
        sync_log(batch=batch, direction="pull", level="error", code="malformed",
                 message="an annotation without an integer id was ignored", ls_task_id=task.ls_task_id)
        result.errors += 1
        return
    digest = _hash_annotation(ann)
    existing = LabelStudioAnnotation.objects.filter(ls_annotation_id=ann_id).first()
    active = LabelStudioAnnotation.Status.ACTIVE
    if existing is not None and existing.result_hash == digest and existing.status == active:
        result.unchanged += 1
        return
    if existing is not None and existing.task_id != task.pk:
        sync_log(batch=batch, direction="pull", level="error", code="task_mismatch",
                 message=f"annotation {ann_id} moved from task {existing.task.ls_task_id} to {task.ls_task_id}; "
                         "ignored",
                 ls_task_id=task.ls_task_id, ls_annotation_id=ann_id)
        result.errors += 1
        return
    ls_user_id, email = users.email(ann.get("completed_by"))
    author = users.user(email)
    image = task.image
    cancelled = bool(ann.get("was_cancelled"))
    parsed = parse_result(ann.get("result"), image_width=image.width, image_height=image.height,
                          box_controls=ls_config.BOX_CONTROLS, attribute_controls=ls_config.ATTRIBUTE_CONTROLS,
                          answer_control=ls_config.ANSWER_CONTROL, text_controls=ls_config.TEXT_CONTROLS)
    lead_time = ann.get("lead_time")
    fields = dict(
        task=task, ls_user_id=ls_user_id, ls_user_email=email[:254], author=author,
        result=ann.get("result") if isinstance(ann.get("result"), list) else [], result_hash=digest,
        was_cancelled=cancelled, lead_time_s=float(lead_time) if isinstance(lead_time, int | float) else None,
        answer=list(parsed.answer) if parsed.answer is not None else None, texts=parsed.texts,
        n_regions=0 if cancelled else len(parsed.regions), n_rejected=len(parsed.rejections),
        status=LabelStudioAnnotation.Status.ACTIVE,
        ls_created_at=_parse_time(ann.get("created_at")), ls_updated_at=_parse_time(ann.get("updated_at")),
    )
    with transaction.atomic():
        retired: list[int] = []
        if existing is None:
            row = LabelStudioAnnotation.objects.create(ls_annotation_id=ann_id, **fields)
            action = "labelstudio.annotation.create"
            result.annotations_created += 1
        else:
            retired = _retire_boxes(ann_id)
            for name, value in fields.items():
                setattr(row := existing, name, value)
            row.revision += 1
            row.save()
            action = "labelstudio.annotation.update"
            result.annotations_updated += 1
        box_ids = [] if cancelled else _create_boxes(task, row, parsed.regions, author)
        audit_record(actor=author, action=action, target=row, before={"retired_boxes": retired} if retired else None,
                     after={"ls_task_id": task.ls_task_id, "ls_annotation_id": ann_id, "ls_user": ls_user_id,
                            "author_id": author.pk if author else None, "result_sha256": digest,
                            "boxes": box_ids, "rejected": len(parsed.rejections), "cancelled": cancelled,
                            "answer": fields["answer"]})
    for rejection in parsed.rejections:
        result.rejected_regions += 1
        sync_log(batch=batch, direction="pull", level="error", code=rejection.code, message=rejection.message,
                 ls_task_id=task.ls_task_id, ls_annotation_id=ann_id, detail={"result_id": rejection.result_id,
                                                                             "control": rejection.control})
    if email and author is None:
        sync_log(batch=batch, direction="pull", level="warning", code="unmapped_user",
                 message=f"Label Studio user {ls_user_id} has no active Med-R2 account with the same email; "
                         "the annotation is kept with its Label Studio user", ls_task_id=task.ls_task_id,
                 ls_annotation_id=ann_id)


def _create_boxes(task: AnnotationTask, row: LabelStudioAnnotation, regions, author) -> list[int]:
    box_ids = []
    for region in regions:
        finding = Finding.objects.create(
            image=task.image, kind=region.kind, label=region.label, attributes=dict(region.attributes),
            source=Finding.Source.LABEL_STUDIO, created_by=author)
        box = GroundingBox.objects.create(
            finding=finding, image=task.image, x0=region.box[0], y0=region.box[1], x1=region.box[2], y1=region.box[3],
            label=region.label, author=author, source=Finding.Source.LABEL_STUDIO,
            ls_project_id=str(task.batch.ls_project_id or ""), ls_task_id=str(task.ls_task_id),
            ls_annotation_id=str(row.ls_annotation_id), ls_result_id=region.result_id[:64])
        box_ids.append(box.pk)
    return box_ids


def _parse_time(value):
    if not isinstance(value, str):
        return None
    try:
        return parse_datetime(value)
    except ValueError:
        return None


def _retire_annotation(row: LabelStudioAnnotation, result: SyncResult, reason: str) -> None:
    with transaction.atomic():
        box_ids = _retire_boxes(row.ls_annotation_id)
        row.status = LabelStudioAnnotation.Status.RETIRED
        row.save(update_fields=["status", "synced_at"])
        audit_record(actor=None, action="labelstudio.annotation.retire", target=row,
                     after={"ls_annotation_id": row.ls_annotation_id, "retired_boxes": box_ids, "reason": reason})
    result.annotations_retired += 1


def apply_ls_task(*, batch: AnnotationBatch, ls_task: dict, users: UserMap) -> SyncResult:
    """Bring one Label Studio task (with all its annotations) into our database, idempotently."""
    result = SyncResult(tasks_seen=1)
    ls_id = _int(ls_task.get("id")) if isinstance(ls_task, dict) else None
    if ls_id is None:
        sync_log(batch=batch, direction="pull", level="error", code="malformed",
                 message="a task without an integer id was ignored")
        result.errors += 1
        return result
    task = AnnotationTask.objects.filter(ls_task_id=ls_id).select_related("batch", "image", "qa_item").first()
    if task is None or task.batch_id != batch.pk:
        sync_log(batch=batch, direction="pull", level="error", code="unknown_task",
                 message=f"Label Studio task {ls_id} is not a task of this batch; ignored", ls_task_id=ls_id)
        result.errors += 1
        return result
    annotations = ls_task.get("annotations")
    if not isinstance(annotations, list):
        sync_log(batch=batch, direction="pull", level="error", code="malformed",
                 message=f"task {ls_id}: 'annotations' must be a list", ls_task_id=ls_id)
        result.errors += 1
        return result
    seen = set()
    for ann in annotations:
        if not isinstance(ann, dict):
            sync_log(batch=batch, direction="pull", level="error", code="malformed",
                     message=f"task {ls_id}: an annotation is not an object", ls_task_id=ls_id)
            result.errors += 1
            continue
        if _int(ann.get("id")) is not None:
            seen.add(ann["id"])
        _apply_annotation(task, ann, users, result)
    for row in LabelStudioAnnotation.objects.filter(task=task, status=LabelStudioAnnotation.Status.ACTIVE).exclude(
            ls_annotation_id__in=seen):
        _retire_annotation(row, result, "deleted in Label Studio")
    task_refresh_agreement(task, ls_updated_at=_parse_time(ls_task.get("updated_at")))
    return result


def task_retire_all(*, task: AnnotationTask, reason: str) -> SyncResult:
    result = SyncResult(tasks_seen=1)
    for row in LabelStudioAnnotation.objects.filter(task=task, status=LabelStudioAnnotation.Status.ACTIVE):
        _retire_annotation(row, result, reason)
    task_refresh_agreement(task)
    return result


def task_refresh_agreement(task: AnnotationTask, *, ls_updated_at=None) -> None:
    """Recompute the task's counts, agreement and disagreement record from its active annotations."""
    rows = list(LabelStudioAnnotation.objects.filter(task=task, status=LabelStudioAnnotation.Status.ACTIVE,
                                                     was_cancelled=False).order_by("ls_annotation_id"))
    boxes = defaultdict(list)
    for box in (GroundingBox.objects.filter(ls_annotation_id__in=[str(r.ls_annotation_id) for r in rows],
                                            status=Finding.Status.ACTIVE).select_related("finding").order_by("pk")):
        boxes[box.ls_annotation_id].append(LabeledBox(label=box.label, box=box.xyxy, kind=box.finding.kind,
                                                      attributes=box.finding.attributes))
    views = [AnnotatorView(annotator=str(r.author_id or r.ls_user_email or r.ls_user_id),
                           boxes=tuple(boxes[str(r.ls_annotation_id)]),
                           answer=tuple(r.answer) if r.answer is not None else None) for r in rows]
    agreement = task_agreement(views, iou_threshold=settings.MEDR2_AGREEMENT_IOU)
    details = list(agreement.disagreements)
    gold = _gold_answer(task.qa_item) if task.qa_item_id else None
    if gold is not None:
        for view in views:
            if view.answer is not None and tuple(sorted(view.answer)) != gold:
                details.append({"kind": "gold_answer", "annotators": [view.annotator],
                                "answers": [list(view.answer), list(gold)]})
    n = len(rows)
    task.n_annotations = n
    task.status = AnnotationTask.Status.DONE if n >= task.batch.maximum_annotations else AnnotationTask.Status.OPEN
    task.agreement = agreement.as_dict() if n >= 2 else None
    task.has_disagreement = bool(details)
    task.synced_at = timezone.now()
    if ls_updated_at is not None:
        task.ls_updated_at = ls_updated_at
    task.save(update_fields=["n_annotations", "status", "agreement", "has_disagreement", "synced_at", "ls_updated_at"])
    existing = AnnotatorDisagreement.objects.filter(task=task).first()
    if details:
        kinds = sorted({d["kind"] for d in details})
        values = dict(image_id=task.image_id, qa_item_id=task.qa_item_id, kinds=kinds, detail=details,
                      annotators=[r.author_id for r in rows])
        if existing is None:
            with transaction.atomic():
                row = AnnotatorDisagreement.objects.create(task=task, **values)
                audit_record(actor=None, action="labelstudio.disagreement.open", target=row,
                             after={"task_id": task.pk, "kinds": kinds})
        elif existing.kinds != kinds or existing.detail != details or existing.status == "resolved":
            before = {"kinds": existing.kinds, "status": existing.status}
            for name, value in values.items():
                setattr(existing, name, value)
            if existing.status == AnnotatorDisagreement.Status.RESOLVED:
                existing.status = AnnotatorDisagreement.Status.OPEN
            with transaction.atomic():
                existing.save()
                audit_record(actor=None, action="labelstudio.disagreement.update", target=existing, before=before,
                             after={"kinds": kinds, "status": existing.status})
    elif existing is not None and existing.status == AnnotatorDisagreement.Status.OPEN:
        existing.status = AnnotatorDisagreement.Status.RESOLVED
        with transaction.atomic():
            existing.save(update_fields=["status", "updated_at"])
            audit_record(actor=None, action="labelstudio.disagreement.resolve", target=existing,
                         after={"task_id": task.pk, "reason": "the annotators now agree"})


def _gold_answer(item: QAItem) -> tuple | None:
    gold = item.gold_answer
    if item.category.answer_type in ("single_choice", "yes_no") and isinstance(gold, str):
        return (gold,)
    if item.category.answer_type == "multi_choice" and isinstance(gold, list):
        return tuple(sorted(str(g) for g in gold))
    return None


def batch_sync(*, batch: AnnotationBatch, client: LabelStudioClient | None = None, full: bool = False,
               users: UserMap | None = None) -> SyncResult:
    """Reconciliation: pull every task changed since the last successful sync (all of them when
    `full`). The cursor moves only when the whole pass succeeded, so a failure loses nothing."""
    if batch.ls_project_id is None:
        return SyncResult()
    client = client or LabelStudioClient.from_settings()
    users = users or UserMap(client)
    started = timezone.now()
    cursor = None if full or batch.synced_until is None else batch.synced_until - CURSOR_OVERLAP
    total = SyncResult()
    seen_tasks = set()
    try:
        for ls_task in client.iter_tasks(batch.ls_project_id, updated_after=cursor):
            total.add(apply_ls_task(batch=batch, ls_task=ls_task, users=users))
            if isinstance(ls_task, dict) and _int(ls_task.get("id")) is not None:
                seen_tasks.add(ls_task["id"])
        if full:
            for task in AnnotationTask.objects.filter(batch=batch, ls_task_id__isnull=False).exclude(
                    ls_task_id__in=seen_tasks).select_related("batch"):
                sync_log(batch=batch, direction="pull", level="warning", code="task_deleted",
                         message=f"task {task.ls_task_id} no longer exists in Label Studio; "
                                 "its annotations are retired",
                         ls_task_id=task.ls_task_id)
                total.add(task_retire_all(task=task, reason="task deleted in Label Studio"))
    except LabelStudioUnavailable as exc:
        AnnotationBatch.objects.filter(pk=batch.pk).update(last_sync_at=timezone.now(), last_sync_ok=False,
                                                           last_sync_error=str(exc))
        sync_log(batch=batch, direction="pull", level="warning", code="unavailable",
                 message=f"{exc}; the next reconciliation pulls everything since {batch.synced_until or 'the start'}")
        raise
    AnnotationBatch.objects.filter(pk=batch.pk).update(synced_until=started, last_sync_at=timezone.now(),
                                                       last_sync_ok=True, last_sync_error="")
    if total.annotations_created or total.annotations_updated or total.annotations_retired or total.errors:
        sync_log(batch=batch, direction="pull", level="info", code="synced", message=(
            f"{total.tasks_seen} task(s): {total.annotations_created} new, {total.annotations_updated} changed, "
            f"{total.annotations_retired} retired annotation(s), {total.rejected_regions} rejected region(s)"))
    batch.refresh_from_db()
    return total


def tasks_sync(*, ls_task_ids: list[int], client: LabelStudioClient | None = None) -> SyncResult:
    """Webhook hint: fetch these tasks now (truth comes from Label Studio, never from the hint)."""
    client = client or LabelStudioClient.from_settings()
    users = UserMap(client)
    total = SyncResult()
    for task in AnnotationTask.objects.filter(ls_task_id__in=ls_task_ids).select_related("batch").order_by("pk"):
        ls_task = client.get_task(task.ls_task_id)
        if ls_task is None:
            total.add(task_retire_all(task=task, reason="task deleted in Label Studio"))
        else:
            total.add(apply_ls_task(batch=task.batch, ls_task=ls_task, users=users))
    return total


def reconcile_all(*, client: LabelStudioClient | None = None) -> dict:
    """Every pushed batch: pull changes; re-sign image URLs that expire within a third of their life."""
    client = client or LabelStudioClient.from_settings()
    users = UserMap(client)
    summary = {"batches": 0, "unavailable": False, "created": 0, "updated": 0, "retired": 0, "refreshed": 0}
    horizon = timezone.now() + timedelta(seconds=settings.LABEL_STUDIO_IMAGE_URL_MAX_AGE_S / 3)
    for batch in AnnotationBatch.objects.filter(ls_project_id__isnull=False).order_by("pk"):
        try:
            result = batch_sync(batch=batch, client=client, users=users)
            if batch.urls_expire_at is not None and batch.urls_expire_at < horizon:
                summary["refreshed"] += batch_refresh_urls(batch=batch, client=client)
        except LabelStudioUnavailable:
            summary["unavailable"] = True
            break      # one answer is enough: every batch waits for the next beat, cursors unchanged
        summary["batches"] += 1
        summary["created"] += result.annotations_created
        summary["updated"] += result.annotations_updated
        summary["retired"] += result.annotations_retired
    return summary
