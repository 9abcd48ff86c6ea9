"""Every API error has one shape (common.errors.exception_handler): `{"code", "detail": str}`, plus
`fields` only for field errors. The annotation APIs raise; they never build error bodies."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from annotation.models import QAItem, TaskCategory
from annotation.services.images import BytesSource, images_import
from annotation.services.qa import chain_create, qa_item_create, qa_item_revise
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def item(curator) -> QAItem:
    image = images_import(sources=[BytesSource("x.png", png_bytes(size=(100, 60)))], actor=curator).images.get()
    return qa_item_create(chain=chain_create(image=image, actor=curator), step=1,
                          category=TaskCategory.objects.get(code="modality"), question="Which modality?",
                          options=["CT", "MR"], gold_answer="CT", actor=curator)


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _json(client, method, url, body):
    return getattr(client, method)(url, body, content_type="application/json")


def _is_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content[:500]
    body = response.json()
    assert body["code"] == code and isinstance(body["detail"], str) and body["detail"], body
    return body


def test_a_service_validation_error_is_invalid_with_a_sentence(item, curator):
    client = _client(curator)
    # the service refuses a gold answer that is not an option (a Django ValidationError, not caught by the API)
    bad = _json(client, "patch", reverse("annotation:api-item-detail", kwargs={"pk": item.pk}),
                {"gold_answer": "US", "reason": "typo"})
    body = _is_error(bad, 400, "invalid")
    assert "gold answer must be one of the options" in body["detail"] and "fields" not in body
    assert QAItem.objects.filter(item_key=item.item_key).count() == 1
    # reviewing an old version: the service's refusal, same shape
    qa_item_revise(item=item, actor=curator, reason="reworded", question="Which imaging modality?")
    stale = _json(client, "post", reverse("annotation:api-item-review"), {"ids": [item.pk], "status": "approved"})
    body = _is_error(stale, 400, "invalid")
    assert "old versions" in body["detail"] and "fields" not in body


def test_a_serializer_field_error_names_its_fields(item, curator):
    client = _client(curator)
    bad = _json(client, "post", reverse("annotation:api-item-review"), {"ids": [item.pk], "status": "nonsense"})
    body = _is_error(bad, 400, "invalid")
    assert set(body["fields"]) == {"status"} and all(isinstance(m, str) for m in body["fields"]["status"])
    assert "status" in body["detail"]
    missing = _json(client, "patch", reverse("annotation:api-item-detail", kwargs={"pk": item.pk}), {"question": "?"})
    assert set(_is_error(missing, 400, "invalid")["fields"]) == {"reason"}
    # an upload without files is a field error of the view itself
    empty = client.post(reverse("annotation:api-image-upload"), {})
    assert set(_is_error(empty, 400, "invalid")["fields"]) == {"files"}


def test_an_upload_over_the_limit_is_too_large(curator, settings):
    settings.MEDR2_UPLOAD_MAX_BYTES = 10
    response = _client(curator).post(reverse("annotation:api-image-upload"),
                                     {"files": [SimpleUploadedFile("big.png", png_bytes(), content_type="image/png")]})
    assert "big.png" in _is_error(response, 413, "too_large")["detail"]


def test_missing_or_unseen_rows_are_not_found(item, users):
    curator, adjudicator = _client(users[Role.CURATOR]), _client(users[Role.ADJUDICATOR])
    for url in (reverse("annotation:api-item-detail", kwargs={"pk": item.pk + 1000}),
                reverse("annotation:api-image-detail", kwargs={"pk": 999999}),
                reverse("annotation:api-variant-detail", kwargs={"pk": 999999})):
        _is_error(curator.get(url), 404, "not_found")
    # an item on an image the adjudicator is not assigned: 404, not 403 (ids do not leak)
    _is_error(adjudicator.get(reverse("annotation:api-item-detail", kwargs={"pk": item.pk})), 404, "not_found")
    unknown = _json(curator, "post", reverse("annotation:api-item-review"),
                    {"ids": [item.pk, item.pk + 1000], "status": "approved"})
    assert str(item.pk + 1000) in _is_error(unknown, 404, "not_found")["detail"]


def test_a_role_without_the_capability_is_permission_denied(item, users):
    auditor = _client(users[Role.AUDITOR])
    patch = _json(auditor, "patch", reverse("annotation:api-item-detail", kwargs={"pk": item.pk}),
                  {"question": "?", "reason": "not mine to edit"})
    _is_error(patch, 403, "permission_denied")
    _is_error(auditor.post(reverse("annotation:api-image-upload"), {}), 403, "permission_denied")
    _is_error(_client(users[None]).get(reverse("annotation:api-item-list")), 403, "permission_denied")


def test_the_openapi_schema_publishes_the_one_error_shape(users):
    from common.errors import _CODES

    schema = _client(users[Role.CURATOR]).get(reverse("api-schema"), {"format": "json"}).json()
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["code", "detail"]
    listed = {c.strip() for c in error["properties"]["code"]["description"].split(",")}
    assert listed == set(_CODES.values())
