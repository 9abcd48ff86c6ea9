"""Label Studio sync: create batches, push them as projects and tasks, pull annotations back.

Guarantees (docs/labelstudio.md):
- Push is idempotent and resumable: tasks are imported in chunks and each chunk's Label Studio ids
  are saved at once; a retry after a failure first recovers ids of tasks that did land.
- Pull never trusts a webhook body: webhooks only say *which* task to fetch; reconciliation pulls
  every task changed since the last successful sync (the cursor moves only on success), so an
  annotation is never lost while Label Studio or we were down.
- Re-pulling never duplicates: an annotation is applied again only when its content hash changed;
  a changed or deleted annotation retires (never deletes) its old boxes, with audit events.
- Bad regions (rotated, out of bounds, malformed) are rejected with a clear sync-log entry, never clipped.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from audit.services import audit_record

from ..labelstudio import config as ls_config
from ..labelstudio.agreement import AnnotatorView, LabeledBox, task_agreement
from ..labelstudio.client import LabelStudioClient, LabelStudioRejected, LabelStudioUnavailable
from ..labelstudio.convert import parse_result, pixels_to_percent
from ..models import (
    AnnotationBatch, AnnotationTask, AnnotatorDisagreement, Finding, GroundingBox, LabelStudioAnnotation,
    QAItem, SyncLogEntry,
)

log = logging.getLogger(__name__)
IMAGE_SIGNING_SALT = "medr2.labelstudio.image"
CURSOR_OVERLAP = timedelta(seconds=120)     # clock skew / in-flight writes: re-pull a little (idempotent)
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
                 description: str = "") -> AnnotationBatch:
    """One task per image (boxes), or one per QA item (answer + boxes on its image) when qa_items is given."""
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
            name=name.strip(), description=description, with_qa=qa_items is not None,
            maximum_annotations=maximum_annotations,
            created_by=actor if getattr(actor, "is_authenticated", False) else None)
        if readers:
            batch.readers.set(readers)
        AnnotationTask.objects.bulk_create(
            [AnnotationTask(batch=batch, image_id=image_id, qa_item_id=item_id) for image_id, item_id in rows],
            batch_size=1000)
        audit_record(actor=actor, action="labelstudio.batch.create", target=batch, after={
            "name": batch.name, "tasks": len(rows), "with_qa": batch.with_qa,
            "maximum_annotations": maximum_annotations, "readers": [u.pk for u in readers]})
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
    return settings.MEDR2_PUBLIC_URL + reverse("ls-image", args=[image_token(image_id)])


def webhook_url() -> str:
    return settings.MEDR2_WEBHOOK_BASE_URL + reverse("api-ls-webhook")


# --- push -------------------------------------------------------------------------------------------

def batch_vocabulary() -> ls_config.Vocabulary:
    used = Finding.objects.filter(status=Finding.Status.ACTIVE).values_list("kind", "label").distinct()
    lesions = {label for kind, label in used if kind == Finding.Kind.LESION}
    anatomy = {label for kind, label in used if kind == Finding.Kind.ANATOMY}
    return ls_config.default_vocabulary(extra_lesions=lesions, extra_anatomy=anatomy)


def batch_label_config(batch: AnnotationBatch, vocabulary: ls_config.Vocabulary | None = None) -> str:
    multiple = batch.with_qa and batch.tasks.filter(qa_item__category__answer_type="multi_choice").exists()
    return ls_config.build_label_config(vocabulary or batch_vocabulary(), with_qa=batch.with_qa, multiple=multiple)


def _box_result(result_id: str, control: str, label: str, box, width: int, height: int) -> dict:
    return {"id": result_id, "from_name": control, "to_name": "image", "type": "rectanglelabels",
            "original_width": width, "original_height": height, "image_rotation": 0,
            "value": {**pixels_to_percent(box, width=width, height=height), "rectanglelabels": [label]}}


def _reference_predictions(sizes: dict[int, tuple[int, int]]) -> dict[int, list[dict]]:
    """Existing active boxes (phantom truth, earlier annotations, manual) as one pre-annotation per
    source, e.g. model_version 'medr2:phantom'. `sizes`: image id -> (width, height)."""
    out: dict[int, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    rows = (GroundingBox.objects.filter(image_id__in=list(sizes), status=Finding.Status.ACTIVE)
            .order_by("pk").values_list("pk", "image_id", "source", "label", "finding__kind", "x0", "y0", "x1", "y1"))
    for pk, image_id, source, label, kind, x0, y0, x1, y1 in rows.iterator(chunk_size=5000):
        control = "anatomy" if kind == Finding.Kind.ANATOMY else "findings"
        width, height = sizes[image_id]
        out[image_id][source].append(_box_result(f"medr2-box-{pk}", control, label, (x0, y0, x1, y1), width, height))
    return {image_id: [{"model_version": f"medr2:{source}", "result": results}
                       for source, results in sorted(per_source.items())]
            for image_id, per_source in out.items()}


def _model_predictions(image_ids: list[int]) -> dict[int, list[dict]]:
    """Boxes that models predicted for box questions on these images (clean variants, each model's
    latest completed run), one pre-annotation per model and run."""
    from workers.models import EvaluationRun, Prediction

    latest = {}
    completed = EvaluationRun.objects.filter(status=EvaluationRun.Status.COMPLETED).prefetch_related("endpoints")
    for run in completed.order_by("pk"):
        for endpoint in run.endpoints.all():
            latest[endpoint.pk] = run.pk
    if not latest:
        return {}
    query = Q()
    for endpoint_id, run_id in latest.items():
        query |= Q(endpoint_id=endpoint_id, run_id=run_id)
    rows = (Prediction.objects.filter(query, item__chain__image_id__in=image_ids, item__category__answer_type="box",
                                      variant__kind="clean", outcome="answered")
            .select_related("endpoint", "item__chain__image").order_by("pk"))
    out: dict[int, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for p in rows:
        image = p.item.chain.image
        box = p.parsed if isinstance(p.parsed, list) and len(p.parsed) == 4 else None
        if box is None or not (0 <= box[0] < box[2] <= image.width and 0 <= box[1] < box[3] <= image.height):
            continue  # outside the image: shown nowhere rather than clipped
        label = next(iter(p.item.evidence_boxes.values_list("label", flat=True)), "") or "nodule"
        control = "anatomy" if p.item.category.code == "anatomy-box" else "findings"
        version = f"{p.endpoint.name} (run {p.run_id})"
        out[image.pk][version].append(_box_result(f"pred-{p.pk}", control, label, box, image.width, image.height))
    return {image_id: [{"model_version": v, "result": r} for v, r in sorted(per.items())]
            for image_id, per in out.items()}


def task_payloads(tasks: list[AnnotationTask], *, with_predictions: bool = True) -> list[dict]:
    sizes = {t.image_id: (t.image.width, t.image.height) for t in tasks}
    references = _reference_predictions(sizes) if with_predictions else {}
    models = _model_predictions(sorted(sizes)) if with_predictions else {}
    payloads = []
    for task in tasks:
        image = task.image
        data = {"image": image_url(image.pk), "medr2_task_id": task.pk, "medr2_image_id": image.pk,
                "title": f"Image {image.pk} · {image.modality or image.source_format} {image.body_region}".strip()}
        if task.qa_item_id:
            item = task.qa_item
            data.update({"medr2_item_id": item.pk, "question": item.question,
                         "options": [{"value": str(o)} for o in (item.options or [])]})
        payloads.append({"data": data,
                         "predictions": references.get(image.pk, []) + models.get(image.pk, [])})
    return payloads


@dataclass
class PushResult:
    project_id: int
    created: int = 0
    recovered: int = 0
    pending: int = 0
    log: list[str] = field(default_factory=list)


def _find_project(client: LabelStudioClient, title: str) -> int | None:
    try:
        for project in client.sdk.projects.list(title=title, request_options={"max_retries": 0}):
            if project.title == title:
                return int(project.id)
    except Exception:  # noqa: BLE001 - a lookup only; creating is the fallback
        return None
    return None


def _project_title(batch: AnnotationBatch) -> str:
    return f"{batch.name[:150]} [medr2-batch-{batch.pk}]"


def batch_push(*, batch: AnnotationBatch, actor=None, client: LabelStudioClient | None = None,
               progress=None) -> PushResult:
    """Create or update the batch's project, then import every task not yet in Label Studio.
    Raises LabelStudioUnavailable (retry later; status 'retrying') or LabelStudioRejected ('failed')."""
    client = client or LabelStudioClient.from_settings()
    AnnotationBatch.objects.filter(pk=batch.pk).update(status=AnnotationBatch.Status.PUSHING,
                                                       push_attempts=batch.push_attempts + 1)
    batch.refresh_from_db()
    try:
        result = _push(batch, client, actor, progress)
    except (LabelStudioUnavailable, LabelStudioRejected) as exc:
        retrying = isinstance(exc, LabelStudioUnavailable)
        AnnotationBatch.objects.filter(pk=batch.pk).update(
            status=AnnotationBatch.Status.RETRYING if retrying else AnnotationBatch.Status.FAILED, push_error=str(exc))
        sync_log(batch=batch, direction="push", level="warning" if retrying else "error",
                 code="unavailable" if retrying else "rejected", message=str(exc))
        raise
    return result


def _push(batch: AnnotationBatch, client: LabelStudioClient, actor, progress) -> PushResult:
    config = batch_label_config(batch)
    digest = ls_config.config_hash(config)
    if batch.ls_project_id is None:
        title = _project_title(batch)
        project_id = _find_project(client, title) if batch.push_attempts > 1 else None
        if project_id is None:
            project_id = client.create_project(title=title, description=batch.description, label_config=config,
                                               maximum_annotations=batch.maximum_annotations)
        with transaction.atomic():
            AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=project_id, label_config_hash=digest)
            audit_record(actor=actor, action="labelstudio.project.create", target=batch,
                         after={"ls_project_id": project_id, "label_config_sha256": digest})
        batch.ls_project_id, batch.label_config_hash = project_id, digest
        sync_log(batch=batch, direction="push", level="info", code="project_created",
                 message=f"Label Studio project {project_id} created")
    elif batch.label_config_hash != digest:
        client.update_project(batch.ls_project_id, label_config=config, maximum_annotations=batch.maximum_annotations)
        with transaction.atomic():
            AnnotationBatch.objects.filter(pk=batch.pk).update(label_config_hash=digest)
            audit_record(actor=actor, action="labelstudio.project.update", target=batch,
                         before={"label_config_sha256": batch.label_config_hash}, after={"label_config_sha256": digest})
        batch.label_config_hash = digest
    if settings.LABEL_STUDIO_WEBHOOK_SECRET:
        client.ensure_webhook(batch.ls_project_id, url=webhook_url(), secret=settings.LABEL_STUDIO_WEBHOOK_SECRET)

    result = PushResult(project_id=batch.ls_project_id)
    pending = AnnotationTask.objects.filter(batch=batch, ls_task_id__isnull=True)
    if batch.push_attempts > 1 and pending.exists():
        result.recovered = _recover_task_ids(batch, client)
    chunk = max(1, settings.LABEL_STUDIO_PUSH_CHUNK)
    todo = list(pending.order_by("pk").values_list("pk", flat=True))
    result.pending = len(todo)
    for start in range(0, len(todo), chunk):
        tasks = list(AnnotationTask.objects.filter(pk__in=todo[start:start + chunk])
                     .select_related("image", "qa_item").order_by("pk"))
        ids = client.import_tasks(batch.ls_project_id, task_payloads(tasks))
        _set_ls_task_ids([(task.pk, ls_id) for task, ls_id in zip(tasks, ids, strict=True)])
        result.created += len(tasks)
        if progress:
            progress(len(tasks))
    now = timezone.now()
    with transaction.atomic():
        AnnotationBatch.objects.filter(pk=batch.pk).update(
            status=AnnotationBatch.Status.PUSHED, push_error="", pushed_at=now, next_retry_at=None,
            # the oldest links expire first; batch_refresh_urls re-signs them all
            urls_expire_at=batch.urls_expire_at or now + timedelta(seconds=settings.LABEL_STUDIO_IMAGE_URL_MAX_AGE_S))
        audit_record(actor=actor, action="labelstudio.batch.push", target=batch, after={
            "ls_project_id": batch.ls_project_id, "tasks_created": result.created, "tasks_recovered": result.recovered})
    sync_log(batch=batch, direction="push", level="info", code="pushed",
             message=f"{result.created} task(s) imported, {result.recovered} recovered from an earlier attempt")
    batch.refresh_from_db()
    return result


def _recover_task_ids(batch: AnnotationBatch, client: LabelStudioClient) -> int:
    """Tasks an interrupted import created in Label Studio before we could save their ids."""
    found: dict[int, int] = {}
    for ls_task in client.iter_tasks(batch.ls_project_id, fields="task_only", page_size=1000):
        ours = (ls_task.get("data") or {}).get("medr2_task_id")
        if isinstance(ours, int) and isinstance(ls_task.get("id"), int):
            found[ours] = ls_task["id"]
    pks = list(AnnotationTask.objects.filter(batch=batch, ls_task_id__isnull=True, pk__in=list(found))
               .values_list("pk", flat=True))
    _set_ls_task_ids([(pk, found[pk]) for pk in pks])
    return len(pks)


def _set_ls_task_ids(pairs: list[tuple[int, int]]) -> None:
    """Record (our task id, Label Studio task id) pairs with one UPDATE ... FROM (VALUES ...) per
    1000 (Django's bulk_update builds a CASE per row: 0.6 s per 500 rows on PostgreSQL here)."""
    from django.db import connection

    table = AnnotationTask._meta.db_table
    for start in range(0, len(pairs), 1000):
        chunk = pairs[start:start + 1000]
        values = ", ".join(["(%s, %s)"] * len(chunk))
        params = [str(AnnotationTask.Status.OPEN)] + [v for pair in chunk for v in pair]
        with connection.cursor() as cursor:
            # VALUES columns are column1, column2 in both PostgreSQL and SQLite (>= 3.33 for UPDATE FROM)
            cursor.execute(f"UPDATE {table} SET ls_task_id = v.column2, status = %s FROM (VALUES {values}) AS v "
                           f"WHERE {table}.id = v.column1", params)


def batch_refresh_urls(*, batch: AnnotationBatch, client: LabelStudioClient) -> int:
    """Signed image URLs expire: re-sign every task's data well before they do."""
    tasks = list(AnnotationTask.objects.filter(batch=batch, ls_task_id__isnull=False)
                 .select_related("image", "qa_item"))
    for task, payload in zip(tasks, task_payloads(tasks, with_predictions=False), strict=True):
        client.update_task_data(task.ls_task_id, payload["data"])
    with transaction.atomic():
        AnnotationBatch.objects.filter(pk=batch.pk).update(
            urls_expire_at=timezone.now() + timedelta(seconds=settings.LABEL_STUDIO_IMAGE_URL_MAX_AGE_S))
        audit_record(actor=None, action="labelstudio.batch.refresh_urls", target=batch, after={"tasks": len(tasks)})
    sync_log(batch=batch, direction="push", level="info", code="urls_refreshed",
             message=f"image URLs of {len(tasks)} task(s) re-signed")
    return len(tasks)


# --- pull -------------------------------------------------------------------------------------------

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


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
    from django.utils.dateparse import parse_datetime

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


# --- webhooks ---------------------------------------------------------------------------------------

KNOWN_ACTIONS = {"ANNOTATION_CREATED", "ANNOTATIONS_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED"}
IGNORED_ACTIONS = {"PROJECT_CREATED", "PROJECT_UPDATED", "PROJECT_DELETED", "TASKS_CREATED", "TASKS_DELETED",
                   "LABEL_LINK_CREATED", "LABEL_LINK_UPDATED", "LABEL_LINK_DELETED"}


@dataclass
class WebhookOutcome:
    status: int
    code: str
    message: str
    ls_task_ids: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"status": self.code, "detail": self.message, "tasks": self.ls_task_ids}


def _bad(batch, status: int, code: str, message: str) -> WebhookOutcome:
    sync_log(batch=batch, direction="webhook", level="error", code=code, message=message)
    return WebhookOutcome(status, code, message)


def _ids_of(value, what: str) -> list[int]:
    """Task ids from a webhook field that may be an id, an object with 'id', or a list of either."""
    items = value if isinstance(value, list) else [value]
    ids = []
    for item in items:
        candidate = item.get("id") if isinstance(item, dict) else item
        if _int(candidate) is None:
            raise ValueError(f"'{what}' must hold integer ids, got {type(candidate).__name__}")
        ids.append(candidate)
    return ids


def webhook_receive(*, body: bytes, secret: str | None) -> WebhookOutcome:
    """Check and decode a Label Studio webhook. It is only a hint: the tasks it names are fetched
    from Label Studio (tasks_sync), so a forged body cannot write anything and a replayed one is
    harmless; exact replays are also recognised and ignored."""
    import hmac

    from ..models import WebhookDelivery

    expected = settings.LABEL_STUDIO_WEBHOOK_SECRET
    if not expected:
        return _bad(None, 503, "not_configured", "webhooks are off: LABEL_STUDIO_WEBHOOK_SECRET is not set")
    if not secret or not hmac.compare_digest(secret.encode(), expected.encode()):
        return _bad(None, 403, "forged", "webhook refused: missing or wrong shared secret")
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return _bad(None, 400, "malformed", "webhook body is not JSON")
    if not isinstance(payload, dict):
        return _bad(None, 400, "malformed", "webhook body must be a JSON object")
    action = payload.get("action")
    if not isinstance(action, str):
        return _bad(None, 400, "malformed", "webhook has no 'action'")
    if action in IGNORED_ACTIONS:
        return WebhookOutcome(200, "ignored", f"{action} needs no sync")
    if action not in KNOWN_ACTIONS:
        return _bad(None, 400, "unknown_action", f"unknown webhook action {action[:60]!r}")
    project = payload.get("project")
    project_id = _int(project.get("id")) if isinstance(project, dict) else _int(project)
    if project_id is None:
        return _bad(None, 400, "malformed", f"{action}: 'project' must be an object with an integer id")
    batch = AnnotationBatch.objects.filter(ls_project_id=project_id).first()
    if batch is None:
        return _bad(None, 404, "unknown_project", f"{action}: Label Studio project {project_id} is no batch of ours")
    try:
        if action == "ANNOTATIONS_DELETED":
            ann_ids = _ids_of(payload.get("annotations", []), "annotations")
            task_ids = sorted(set(LabelStudioAnnotation.objects.filter(ls_annotation_id__in=ann_ids)
                                  .values_list("task__ls_task_id", flat=True)))
        else:
            task_ids = set()
            annotation = payload.get("annotation")
            if annotation is None and "task" not in payload:
                raise ValueError("neither 'annotation' nor 'task' is present")
            for ann in (annotation if isinstance(annotation, list) else [annotation] if annotation is not None else []):
                if not isinstance(ann, dict):
                    raise ValueError("'annotation' must be an object")
                if "task" in ann:
                    task_ids.update(_ids_of(ann["task"], "annotation.task"))
            if "task" in payload:
                task_ids.update(_ids_of(payload["task"], "task"))
            task_ids = sorted(task_ids)
    except ValueError as exc:
        return _bad(batch, 400, "malformed", f"{action}: {exc}")
    known = set(AnnotationTask.objects.filter(batch=batch, ls_task_id__in=task_ids)
                .values_list("ls_task_id", flat=True))
    unknown = [t for t in task_ids if t not in known]
    if unknown:
        return _bad(batch, 422, "unknown_task", f"{action}: task(s) {unknown[:10]} are not tasks of batch {batch.pk}")
    digest = hashlib.sha256(body).hexdigest()
    with transaction.atomic():
        _, created = WebhookDelivery.objects.get_or_create(body_sha256=digest, defaults={"action": action})
    if not created:
        sync_log(batch=batch, direction="webhook", level="warning", code="replayed",
                 message=f"{action}: this exact delivery was seen before; ignored")
        return WebhookOutcome(200, "duplicate", "already received; ignored", task_ids)
    sync_log(batch=batch, direction="webhook", level="info", code="hint",
             message=f"{action}: will pull task(s) {task_ids[:10]}")
    return WebhookOutcome(202, "accepted", "tasks will be pulled from Label Studio", task_ids)
