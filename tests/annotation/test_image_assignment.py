"""Curators give readers their images (page and API): readers then see them, a change is audited, and bad
requests get a clear error and change nothing (issue 20, item 13: "curators assign images")."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from annotation.forms import parse_id_list
from annotation.models import Image, ImportBatch
from annotation.selectors import image_visible_to
from annotation.services.images import BytesSource, images_import
from audit.models import AuditEvent
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def images(curator):
    batch = images_import(sources=[BytesSource(f"{n}.png", png_bytes(color=10 + n)) for n in range(5)],
                          actor=curator, source=ImportBatch.Source.UPLOAD, defaults=_defaults())
    return list(batch.images.order_by("pk"))


def _defaults():
    from annotation.services.images import ImportDefaults

    return ImportDefaults(modality="CT", body_region="CHEST")


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_curator_assigns_images_on_the_page_and_the_reader_sees_them(users, images):
    reader, curator = users[Role.ANNOTATOR], users[Role.CURATOR]
    assert not image_visible_to(reader).exists()
    client = _client(curator)
    page = client.get(reverse("annotation:image-assign"))
    assert page.status_code == 200 and reader.username in page.content.decode()
    ids = f"{images[0].pk}, {images[2].pk}-{images[3].pk}"
    response = client.post(reverse("annotation:image-assign"), {"user": reader.username,
                                                                          "action": "assign", "ids": ids})
    assert response.status_code == 302
    assert set(image_visible_to(reader).values_list("pk", flat=True)) == {images[0].pk, images[2].pk, images[3].pk}
    assert _client(reader).get(reverse("annotation:image-detail", args=[images[2].pk])).status_code == 200
    assert _client(reader).get(reverse("annotation:image-detail", args=[images[1].pk])).status_code == 404
    event = AuditEvent.objects.filter(action="annotation.image.assign").latest("pk")
    assert event.actor_id == curator.pk and event.after["image_ids"] == [images[0].pk, images[2].pk, images[3].pk]
    followed = client.get(response["Location"]).content.decode()
    assert "3 images assigned to" in followed

    response = _client(curator).post(reverse("annotation:image-assign"), {"user": reader.username,
                                                                          "action": "unassign", "ids": ids})
    assert response.status_code == 302 and not image_visible_to(reader).exists()
    assert AuditEvent.objects.filter(action="annotation.image.unassign").count() == 1


def test_the_api_assigns_by_filters_and_ids_and_unassigns(users, images):
    reader, curator = users[Role.ADJUDICATOR], users[Role.CURATOR]
    url = reverse("annotation:api-image-assign")
    body = _client(curator).post(url, {"user": reader.username, "filters": {"modality": "CT"}},
                                 content_type="application/json").json()
    assert body == {"user": reader.username, "action": "assign", "images": 5, "assigned_now": 5}
    body = _client(curator).post(url, {"user": reader.username, "action": "unassign", "images": [images[0].pk],
                                       "filters": {"body_region": "CHEST"}}, content_type="application/json").json()
    assert body["images"] == 1 and body["assigned_now"] == 4
    again = _client(curator).post(url, {"user": reader.username, "action": "unassign", "images": [images[0].pk]},
                                  content_type="application/json").json()
    assert again["images"] == 0, "nothing to take away: nothing changes, nothing is audited"
    assert AuditEvent.objects.filter(action="annotation.image.unassign").count() == 1


@pytest.mark.parametrize("payload,field", [
    ({"user": "nobody", "images": [1]}, "user"),
    ({"user": "{curator}", "images": ["{image}"]}, "user"),              # not a reader
    ({"user": "{reader}", "images": [987654321]}, "images"),              # no such image
    ({"user": "{reader}", "images": [2**70]}, "images"),                  # beyond bigint: 400, not 500
    ({"user": "{reader}", "action": "give", "images": ["{image}"]}, "action"),
    ({"user": "{reader}"}, None),                                         # names no image
    ({"user": "{reader}", "filters": {"modality": "XX"}}, None),           # matches none
])
def test_bad_api_requests_are_400_with_the_field_and_change_nothing(users, images, payload, field):
    reader, curator = users[Role.ANNOTATOR], users[Role.CURATOR]
    names = {"{reader}": reader.username, "{curator}": curator.username, "{image}": images[0].pk}
    payload = {k: names.get(v, v) if isinstance(v, str) else [names.get(x, x) for x in v] if isinstance(v, list)
               else v for k, v in payload.items()}
    response = _client(curator).post(reverse("annotation:api-image-assign"), payload, content_type="application/json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "invalid" and body["detail"]
    if field:
        assert field in body["fields"]
    assert not Image.assignees.through.objects.exists()
    assert not AuditEvent.objects.filter(action__in=["annotation.image.assign", "annotation.image.unassign"]).exists()


def test_the_page_shows_what_is_wrong(users, images):
    curator, reader = users[Role.CURATOR], users[Role.ANNOTATOR]
    response = _client(curator).post(reverse("annotation:image-assign"), {"user": reader.username,
                                                                          "action": "assign", "ids": "12, abc"})
    assert response.status_code == 400 and "is not an image id" in response.content.decode()
    response = _client(curator).post(reverse("annotation:image-assign"), {"user": reader.username, "action": "assign"})
    assert response.status_code == 400 and "no image matches" in response.content.decode()
    assert not Image.assignees.through.objects.exists()


def test_parse_id_list_reads_ids_and_ranges():
    assert parse_id_list("12, 15-17 40") == [12, 15, 16, 17, 40]
    assert parse_id_list("") == []
    for bad in ("0", "5-3", "x", "1-200000", "-4"):
        with pytest.raises(Exception, match="not"):
            parse_id_list(bad)
