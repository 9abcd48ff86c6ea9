"""Pull: Label Studio tasks and annotations into boxes with their authors, idempotently.
Webhooks only name tasks to fetch; reconciliation pulls everything changed since the last
successful pass (the cursor moves only on success)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.models import Finding, GroundingBox
from audit.services import audit_record
from labelstudio import config as ls_config
from labelstudio.client import LabelStudioClient, LabelStudioUnavailable
from labelstudio.convert import parse_result
from labelstudio.models import AnnotationBatch, AnnotationTask, LabelStudioAnnotation, ReaderProject, ReaderTask
from labelstudio.provenance import region_provenance
from labelstudio.services.agreement import task_refresh_agreement
from labelstudio.services.batches import _int, sync_log
from labelstudio.services.push import batch_refresh_urls
from labelstudio.services.readers import workspace_client

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

    def prefetch(self) -> None:
        if self._emails is None:
            self._emails = self.client.user_emails()

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


@dataclass(frozen=True)
class _Where:
    """The Label Studio task an annotation came from: the shared project's, or a reader's copy."""

    ls_project_id: int | None
    ls_task_id: int
    predictions: list


def _apply_annotation(task: AnnotationTask, ann: dict, users: UserMap, result: SyncResult, where: _Where) -> None:
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
                 message=f"annotation {ann_id} moved from task {existing.task_id} to {task.pk} "
                         f"(Label Studio task {where.ls_task_id}); ignored",
                 ls_task_id=where.ls_task_id, ls_annotation_id=ann_id)
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
        task=task, ls_task_id=where.ls_task_id, ls_user_id=ls_user_id, ls_user_email=email[:254], author=author,
        result=ann.get("result") if isinstance(ann.get("result"), list) else [], result_hash=digest,
        was_cancelled=cancelled, lead_time_s=float(lead_time) if isinstance(lead_time, int | float) else None,
        answer=list(parsed.answer) if parsed.answer is not None else None, texts=parsed.texts,
        n_regions=0 if cancelled else len(parsed.regions), n_rejected=len(parsed.rejections),
        rejections=[{"code": r.code, "message": r.message[:500], "result_id": r.result_id, "control": r.control}
                    for r in parsed.rejections],
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
        provenance = region_provenance(ann.get("result"), where.predictions)
        box_ids = [] if cancelled else _create_boxes(task, row, parsed.regions, author, where, provenance)
        audit_record(actor=author, action=action, target=row, before={"retired_boxes": retired} if retired else None,
                     after={"ls_task_id": where.ls_task_id, "ls_project_id": where.ls_project_id,
                            "ls_annotation_id": ann_id, "ls_user": ls_user_id,
                            "author_id": author.pk if author else None, "result_sha256": digest,
                            "boxes": box_ids, "rejected": len(parsed.rejections), "cancelled": cancelled,
                            "answer": fields["answer"],
                            "provenance": {k: v for k, v in sorted(provenance.items()) if v != "drawn"}})
    for rejection in parsed.rejections:
        result.rejected_regions += 1
        sync_log(batch=batch, direction="pull", level="error", code=rejection.code, message=rejection.message,
                 ls_task_id=where.ls_task_id, ls_annotation_id=ann_id, detail={"result_id": rejection.result_id,
                                                                             "control": rejection.control})
    if email and author is None:
        sync_log(batch=batch, direction="pull", level="warning", code="unmapped_user",
                 message=f"Label Studio user {ls_user_id} has no active Med-R2 account with the same email; "
                         "the annotation is kept with its Label Studio user", ls_task_id=where.ls_task_id,
                 ls_annotation_id=ann_id)


def _create_boxes(task: AnnotationTask, row: LabelStudioAnnotation, regions, author, where: _Where,
                  provenance: dict[str, str]) -> list[int]:
    box_ids = []
    for region in regions:
        finding = Finding.objects.create(
            image=task.image, kind=region.kind, label=region.label, attributes=dict(region.attributes),
            source=Finding.Source.LABEL_STUDIO, created_by=author)
        box = GroundingBox.objects.create(
            finding=finding, image=task.image, x0=region.box[0], y0=region.box[1], x1=region.box[2], y1=region.box[3],
            label=region.label, author=author, source=Finding.Source.LABEL_STUDIO,
            ls_project_id=str(where.ls_project_id or ""), ls_task_id=str(where.ls_task_id),
            ls_annotation_id=str(row.ls_annotation_id), ls_result_id=region.result_id[:64],
            provenance=provenance.get(region.result_id, "drawn"))
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
    task, project_id = _task_of(ls_id)
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
    where = _Where(ls_project_id=project_id, ls_task_id=ls_id, predictions=ls_task.get("predictions") or [])
    with transaction.atomic():
        # one pull of a task at a time (a webhook hint and the beat may pull the same edit at once): the
        # second waits here, then finds the annotation applied and leaves it unchanged
        AnnotationTask.objects.select_for_update().filter(pk=task.pk).first()
        seen = set()
        for ann in annotations:
            if not isinstance(ann, dict):
                sync_log(batch=batch, direction="pull", level="error", code="malformed",
                         message=f"task {ls_id}: an annotation is not an object", ls_task_id=ls_id)
                result.errors += 1
                continue
            if _int(ann.get("id")) is not None:
                seen.add(ann["id"])
            _apply_annotation(task, ann, users, result, where)
        # only this copy's annotations can have disappeared from it (the other readers' are in their projects)
        for row in _active_of_copy(task, ls_id).exclude(ls_annotation_id__in=seen):
            _retire_annotation(row, result, "deleted in Label Studio")
        task_refresh_agreement(task, ls_updated_at=_parse_time(ls_task.get("updated_at")))
    return result


def _task_of(ls_task_id: int) -> tuple[AnnotationTask | None, int | None]:
    """Our task for a Label Studio task id (a reader's copy, or a shared project's task) and its project."""
    copy = (ReaderTask.objects.filter(ls_task_id=ls_task_id)
            .select_related("task__batch", "task__image", "task__qa_item", "reader_project").first())
    if copy is not None:
        return copy.task, copy.reader_project.ls_project_id
    task = AnnotationTask.objects.filter(ls_task_id=ls_task_id).select_related("batch", "image", "qa_item").first()
    return task, task.batch.ls_project_id if task is not None else None


def _active_of_copy(task: AnnotationTask, ls_task_id: int):
    """The task's active annotations pulled from this Label Studio task (rows from before copies: any)."""
    return LabelStudioAnnotation.objects.filter(task=task, status=LabelStudioAnnotation.Status.ACTIVE).filter(
        Q(ls_task_id=ls_task_id) | Q(ls_task_id__isnull=True))


def task_retire_all(*, task: AnnotationTask, reason: str, ls_task_id: int | None = None) -> SyncResult:
    """Retire the task's active annotations (only those of one Label Studio task copy when given)."""
    result = SyncResult(tasks_seen=1)
    with transaction.atomic():
        AnnotationTask.objects.select_for_update().filter(pk=task.pk).first()
        rows = (LabelStudioAnnotation.objects.filter(task=task, status=LabelStudioAnnotation.Status.ACTIVE)
                if ls_task_id is None else _active_of_copy(task, ls_task_id))
        for row in rows:
            _retire_annotation(row, result, reason)
        task_refresh_agreement(task)
    return result


def batch_sync(*, batch: AnnotationBatch, client: LabelStudioClient | None = None, full: bool = False,
               users: UserMap | None = None, clients=workspace_client) -> SyncResult:
    """Reconciliation: pull every task changed since the last successful sync (all of them when
    `full`). The cursor moves only when the whole pass succeeded, so a failure loses nothing. A
    per-reader batch is pulled project by project, each with its organization's service token."""
    if not batch.in_label_studio:
        return SyncResult()
    started = timezone.now()
    total = SyncResult()
    try:
        if batch.per_reader:
            for copy in ReaderProject.objects.filter(batch=batch).select_related("workspace").order_by("pk"):
                reader_client = clients(copy.workspace)
                try:
                    total.add(_sync_project(batch, reader_client, UserMap(reader_client), copy.ls_project_id,
                                            None if full else copy.synced_until, full))
                finally:
                    reader_client.close()
                ReaderProject.objects.filter(pk=copy.pk).update(synced_until=started)
        else:
            client = client or LabelStudioClient.from_settings()
            total.add(_sync_project(batch, client, users or UserMap(client), batch.ls_project_id,
                                    None if full else batch.synced_until, full))
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


def _sync_project(batch: AnnotationBatch, client: LabelStudioClient, users: UserMap, ls_project_id: int,
                  synced_until, full: bool) -> SyncResult:
    cursor = None if synced_until is None else synced_until - CURSOR_OVERLAP
    total = SyncResult()
    seen_tasks = set()
    for ls_task in client.iter_tasks(ls_project_id, updated_after=cursor):
        total.add(apply_ls_task(batch=batch, ls_task=ls_task, users=users))
        if isinstance(ls_task, dict) and _int(ls_task.get("id")) is not None:
            seen_tasks.add(ls_task["id"])
    if not full:
        return total
    if batch.per_reader:
        gone = [(c.task, c.ls_task_id) for c in ReaderTask.objects.filter(reader_project__ls_project_id=ls_project_id)
                .exclude(ls_task_id__in=seen_tasks).select_related("task__batch")]
    else:
        gone = [(t, t.ls_task_id) for t in AnnotationTask.objects.filter(batch=batch, ls_task_id__isnull=False)
                .exclude(ls_task_id__in=seen_tasks).select_related("batch")]
    for task, ls_task_id in gone:
        sync_log(batch=batch, direction="pull", level="warning", code="task_deleted",
                 message=f"task {ls_task_id} no longer exists in Label Studio; its annotations are retired",
                 ls_task_id=ls_task_id)
        total.add(task_retire_all(task=task, reason="task deleted in Label Studio", ls_task_id=ls_task_id))
    return total


def tasks_sync(*, ls_task_ids: list[int], client: LabelStudioClient | None = None,
               clients=workspace_client) -> SyncResult:
    """Webhook hint: fetch these tasks now (truth comes from Label Studio, never from the hint). A
    reader's copy is fetched with its organization's token."""
    total = SyncResult()
    copies = (ReaderTask.objects.filter(ls_task_id__in=ls_task_ids)
              .select_related("task__batch", "reader_project__workspace").order_by("pk"))
    for copy in copies:
        reader_client = clients(copy.reader_project.workspace)
        try:
            total.add(_sync_one(reader_client, UserMap(reader_client), copy.task, copy.ls_task_id))
        finally:
            reader_client.close()
    shared = list(AnnotationTask.objects.filter(ls_task_id__in=ls_task_ids).select_related("batch").order_by("pk"))
    if shared:
        client = client or LabelStudioClient.from_settings()
        users = UserMap(client)
        for task in shared:
            total.add(_sync_one(client, users, task, task.ls_task_id))
    return total


def _sync_one(client: LabelStudioClient, users: UserMap, task: AnnotationTask, ls_task_id: int) -> SyncResult:
    ls_task = client.get_task(ls_task_id)
    if ls_task is None:
        return task_retire_all(task=task, reason="task deleted in Label Studio", ls_task_id=ls_task_id)
    return apply_ls_task(batch=task.batch, ls_task=ls_task, users=users)


def reconcile_all(*, client: LabelStudioClient | None = None, clients=workspace_client) -> dict:
    """Every pushed batch: pull changes; re-sign image URLs that expire within a third of their life."""
    summary = {"batches": 0, "unavailable": False, "created": 0, "updated": 0, "retired": 0, "refreshed": 0}
    horizon = timezone.now() + timedelta(seconds=settings.LABEL_STUDIO_IMAGE_URL_MAX_AGE_S / 3)
    shared_client, users = None, None
    pushed = AnnotationBatch.objects.filter(Q(ls_project_id__isnull=False)
                                            | Q(per_reader=True, pushed_at__isnull=False))
    for batch in pushed.order_by("pk"):
        try:
            if not batch.per_reader and shared_client is None:
                shared_client = client or LabelStudioClient.from_settings()
                users = UserMap(shared_client)
            result = batch_sync(batch=batch, client=shared_client, users=users, clients=clients)
            if batch.urls_expire_at is not None and batch.urls_expire_at < horizon:
                summary["refreshed"] += batch_refresh_urls(batch=batch, client=shared_client, clients=clients)
        except LabelStudioUnavailable:
            summary["unavailable"] = True
            break      # one answer is enough: every batch waits for the next beat, cursors unchanged
        summary["batches"] += 1
        summary["created"] += result.annotations_created
        summary["updated"] += result.annotations_updated
        summary["retired"] += result.annotations_retired
    return summary
