"""Webhooks from Label Studio: checked, decoded, and turned into a list of tasks to pull (hints only)."""
from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from labelstudio.models import (
    AnnotationBatch,
    AnnotationTask,
    LabelStudioAnnotation,
    ReaderProject,
    ReaderTask,
    WebhookDelivery,
)
from labelstudio.services.batches import _int, sync_log

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
    copy = ReaderProject.objects.filter(ls_project_id=project_id).select_related("batch").first()
    batch = copy.batch if copy is not None else AnnotationBatch.objects.filter(ls_project_id=project_id).first()
    if batch is None:
        return _bad(None, 404, "unknown_project", f"{action}: Label Studio project {project_id} is no batch of ours")
    try:
        if action == "ANNOTATIONS_DELETED":
            ann_ids = _ids_of(payload.get("annotations", []), "annotations")
            rows = LabelStudioAnnotation.objects.filter(ls_annotation_id__in=ann_ids)
            task_ids = sorted({t for t in rows.values_list("ls_task_id", flat=True) if t is not None}
                              | {t for t in rows.filter(ls_task_id__isnull=True)
                                 .values_list("task__ls_task_id", flat=True) if t is not None})
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
    if copy is not None:    # a reader's project names only that reader's copies
        known = set(ReaderTask.objects.filter(reader_project=copy, ls_task_id__in=task_ids)
                    .values_list("ls_task_id", flat=True))
    else:
        known = set(AnnotationTask.objects.filter(batch=batch, ls_task_id__in=task_ids)
                    .values_list("ls_task_id", flat=True))
    unknown = [t for t in task_ids if t not in known]
    if unknown:
        many = len(unknown) > 1
        return _bad(batch, 422, "unknown_task", f"{action}: Label Studio task{'s' if many else ''} "
                    f"{', '.join(map(str, unknown[:10]))} {'are' if many else 'is'} not in batch {batch.pk}")
    digest = hashlib.sha256(body).hexdigest()
    with transaction.atomic():
        _, created = WebhookDelivery.objects.get_or_create(body_sha256=digest, defaults={"action": action})
    if not created:
        sync_log(batch=batch, direction="webhook", level="warning", code="replayed",
                 message=f"{action}: this exact delivery was seen before; ignored")
        return WebhookOutcome(200, "duplicate", "already received; ignored", task_ids)
    sync_log(batch=batch, direction="webhook", level="info", code="hint",
             message=f"{action}: will pull Label Studio task{'s' if len(task_ids) != 1 else ''} "
                     f"{', '.join(map(str, task_ids[:10]))}")
    return WebhookOutcome(202, "accepted", "tasks will be pulled from Label Studio", task_ids)
