"""Webhooks: a real Label Studio delivering to a live server, and forged, replayed and malformed
calls (which must get a clear 4xx and a sync-log entry, never a 500, and write nothing)."""
from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from annotation.models import GroundingBox
from labelstudio.models import AnnotationBatch, AnnotationTask, LabelStudioAnnotation, SyncLogEntry
from labelstudio.services import batch_create, batch_push

from .test_sync import rect

SECRET = "webhook-Secret-for-tests"
URL = "/api/labelstudio/webhook/"


@pytest.mark.labelstudio
@pytest.mark.django_db(transaction=True)
def test_label_studio_delivers_a_webhook_to_a_live_server(ls_settings, ls_admin, as_radiologist, live_server,
                                                         wide_image, radiologists, eager_celery):
    ls_settings.LABEL_STUDIO_WEBHOOK_SECRET = SECRET
    ls_settings.MEDR2_PUBLIC_URL = ls_settings.MEDR2_WEBHOOK_BASE_URL = live_server.url
    batch = batch_create(per_reader=False, name="webhook batch", images=[wide_image], actor=None)
    batch_push(batch=batch, client=ls_admin)
    hooks = ls_admin.sdk.webhooks.list(project=str(batch.refresh_from_db() or batch.ls_project_id))
    assert [h.url for h in hooks] == [f"{live_server.url}/api/labelstudio/webhook/"]
    task = batch.tasks.get()

    as_radiologist[0].annotations.create(id=task.ls_task_id, result=rect("w", "nodule", (5, 6, 70, 80), (300, 217)))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not GroundingBox.objects.filter(source="label_studio").exists():
        time.sleep(0.2)
    box = GroundingBox.objects.get(source="label_studio")
    assert box.xyxy == (5.0, 6.0, 70.0, 80.0) and box.author == radiologists[0]
    assert SyncLogEntry.objects.filter(batch=batch, direction="webhook", code="hint").exists()


@pytest.fixture
def hooked(db, settings, wide_image):
    """A batch as if pushed (project 9001, task 777) — these calls never reach Label Studio."""
    settings.LABEL_STUDIO_WEBHOOK_SECRET = SECRET
    batch = batch_create(per_reader=False, name="hooks", images=[wide_image], actor=None)
    AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=9001, status="pushed")
    AnnotationTask.objects.filter(batch=batch).update(ls_task_id=777, status="open")
    return batch


def post(body, secret=SECRET):
    data = body if isinstance(body, bytes | str) else json.dumps(body)
    headers = {"HTTP_X_MEDR2_WEBHOOK_SECRET": secret} if secret is not None else {}
    return Client(enforce_csrf_checks=True).post(URL, data=data, content_type="application/json", **headers)


def created(task_id=777, annotation_id=1, project=9001):
    return {"action": "ANNOTATION_CREATED", "project": {"id": project},
            "annotation": {"id": annotation_id, "task": task_id, "result": []}, "task": {"id": task_id}}


@pytest.fixture
def hints(monkeypatch):
    """Record the tasks the webhook would pull (the pull itself is tested against Label Studio)."""
    seen = []
    monkeypatch.setattr("labelstudio.views.sync_tasks_later", seen.append)
    return seen


def test_valid_hint_is_accepted_and_an_exact_replay_is_ignored(hooked, hints):
    response = post(created())
    assert response.status_code == 202 and response.json()["tasks"] == [777]
    assert hints == [[777]]
    replay = post(created())
    assert replay.status_code == 200 and replay.json()["status"] == "duplicate"
    assert hints == [[777]], "a replay triggers nothing"
    assert SyncLogEntry.objects.filter(code="replayed").count() == 1


@pytest.mark.parametrize("secret", [None, "", "wrong", SECRET[:-1], SECRET + "x"])
def test_forged_webhooks_are_refused(hooked, hints, secret):
    response = post(created(), secret=secret)
    assert response.status_code == 403
    assert hints == []
    entry = SyncLogEntry.objects.get(code="forged")
    assert SECRET not in entry.message


def test_webhooks_are_refused_when_no_secret_is_configured(hooked, hints, settings):
    settings.LABEL_STUDIO_WEBHOOK_SECRET = ""
    assert post(created(), secret="").status_code == 503
    assert hints == []


@pytest.mark.parametrize("body,status,code", [
    (b"{not json", 400, "malformed"),
    ([1, 2], 400, "malformed"),
    ({"project": {"id": 9001}}, 400, "malformed"),
    ({"action": 5, "project": {"id": 9001}}, 400, "malformed"),
    ({"action": "SOMETHING_ELSE", "project": {"id": 9001}}, 400, "unknown_action"),
    ({"action": "ANNOTATION_CREATED", "annotation": {"id": 1, "task": 777}}, 400, "malformed"),
    ({"action": "ANNOTATION_CREATED", "project": {"id": "9001"}, "annotation": {"task": 777}}, 400, "malformed"),
    ({"action": "ANNOTATION_CREATED", "project": {"id": 9001}}, 400, "malformed"),
    ({"action": "ANNOTATION_CREATED", "project": {"id": 9001}, "annotation": "x"}, 400, "malformed"),
    ({"action": "ANNOTATION_CREATED", "project": {"id": 9001}, "annotation": {"task": "777"}}, 400, "malformed"),
    ({"action": "ANNOTATION_CREATED", "project": {"id": 9001}, "annotation": {"task": 1.5}}, 400, "malformed"),
    ({"action": "ANNOTATIONS_DELETED", "project": {"id": 9001}, "annotations": [{"id": None}]}, 400, "malformed"),
    (created(task_id=12345), 422, "unknown_task"),
    (created(project=4242), 404, "unknown_project"),
])
def test_malformed_payloads_get_a_clear_4xx_and_a_sync_log_entry(hooked, hints, body, status, code):
    response = post(body)
    assert response.status_code == status, response.content
    assert response.json()["status"] == code and response.json()["detail"]
    assert SyncLogEntry.objects.filter(direction="webhook", code=code, level="error").exists()
    assert hints == []
    assert not LabelStudioAnnotation.objects.exists()


def test_deleted_annotations_hint_the_task_they_belonged_to(hooked, hints):
    task = hooked.tasks.get()
    LabelStudioAnnotation.objects.create(task=task, ls_annotation_id=55, result=[], result_hash="x")
    response = post({"action": "ANNOTATIONS_DELETED", "project": {"id": 9001}, "annotations": [{"id": 55}]})
    assert response.status_code == 202 and hints == [[777]]


def test_project_events_are_acknowledged_and_ignored(hooked, hints):
    response = post({"action": "PROJECT_UPDATED", "project": {"id": 9001}})
    assert response.status_code == 200 and response.json()["status"] == "ignored" and hints == []


def test_get_is_not_allowed(hooked):
    assert Client().get(URL).status_code == 405
