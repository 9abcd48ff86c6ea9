"""The annotation-batch API: pages of batches and tasks, and its refusals in the one error shape
({"code", "detail", "fields"?}, common/errors.py)."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from labelstudio.models import AnnotationBatch, AnnotationTask
from labelstudio.services import batch_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(curator):
    client = Client()
    client.force_login(curator)
    return client


@pytest.fixture
def batch(wide_image, curator):
    return batch_create(per_reader=False, name="api batch", images=[wide_image], actor=curator)


def test_batch_list_and_tasks_are_pages_with_label_studio_links(settings, api, batch):
    settings.LABEL_STUDIO_PUBLIC_URL = "http://ls.example:8080"
    AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=12)
    AnnotationTask.objects.filter(batch=batch).update(ls_task_id=34)
    listing = api.get(reverse("labelstudio:api-batch-list")).json()
    assert listing["count"] == 1 and listing["results"][0]["name"] == "api batch"
    tasks = api.get(reverse("labelstudio:api-batch-tasks", args=[batch.pk])).json()
    assert tasks["count"] == 1
    assert tasks["results"][0]["label_studio_url"] == "http://ls.example:8080/projects/12/data?task=34"


def test_batch_create_refusals_have_the_one_error_shape(api):
    url = reverse("labelstudio:api-batch-list")
    neither = api.post(url, {"name": "x"}, content_type="application/json")
    assert neither.status_code == 400 and neither.json()["code"] == "invalid"
    assert "either 'images' or 'qa_items'" in neither.json()["detail"]
    unknown = api.post(url, {"name": "x", "images": [1], "readers": ["nobody"]}, content_type="application/json")
    assert unknown.status_code == 400 and "unknown readers: nobody" in unknown.json()["detail"]
    empty = api.post(url, {"name": "x", "qa_items": [999999], "push": False}, content_type="application/json")
    assert empty.status_code == 400
    assert empty.json() == {"code": "invalid", "detail": "a batch needs at least one image or QA item"}


def test_batch_actions_queue_or_refuse(settings, api, batch, monkeypatch):
    pushed, synced = [], []
    monkeypatch.setattr("labelstudio.apis.push_batch_later", pushed.append)
    monkeypatch.setattr("labelstudio.apis.sync_batch_later", lambda pk, full: synced.append((pk, full)))

    def act(action):
        return api.post(reverse("labelstudio:api-batch-action", args=[batch.pk, action]))

    settings.LABEL_STUDIO_URL = ""
    off = act("push")
    assert off.status_code == 409
    assert off.json() == {"code": "conflict", "detail": "Label Studio is not configured (LABEL_STUDIO_URL)"}
    settings.LABEL_STUDIO_URL = "http://ls.example:8080"
    first = act("sync")
    assert first.status_code == 409 and first.json() == {"code": "conflict", "detail": "push the batch first"}
    unknown = act("explode")
    assert unknown.status_code == 404 and unknown.json() == {"code": "not_found", "detail": "unknown action 'explode'"}
    assert act("push").status_code == 202 and pushed == [batch.pk]
    AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=12)
    assert act("full-sync").json() == {"status": "queued", "action": "full-sync"}
    assert synced == [(batch.pk, True)]


def test_batch_detail_of_a_batch_you_cannot_see_is_not_found(api, batch, make_user):
    client = Client()
    client.force_login(make_user(Role.ANNOTATOR))
    response = client.get(reverse("labelstudio:api-batch-detail", args=[batch.pk]))
    assert response.status_code == 404 and response.json()["code"] == "not_found"
