"""The release API: roles, create (201, refusals in the one error shape), read, build queued (202),
publish (400 unbuilt, 200 built, 409 twice), and its place in the OpenAPI schema."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from annotation.models import QAItem
from releases.models import Release
from releases.services import release_create

from ..workers.conftest import eval_content  # noqa: F401  (fixture)
from .test_pages import READERS, content, fake_archive, release, sent, signing  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db
LIST = reverse("releases:api-release-list")


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _post(client, url, body=None):
    return client.post(url, body or {}, content_type="application/json")


def _url(name, of):
    return reverse(f"releases:{name}", kwargs={"pk": of.pk})


def test_readers_read_and_only_admins_write(release, users, signing, sent):  # noqa: F811
    for role in [*Role, None]:
        client = _client(users[role])
        for url in (LIST, _url("api-release-detail", release)):
            response = client.get(url)
            assert response.status_code == (200 if role in READERS else 403), (role, url)
        if role == Role.ADMIN:
            continue
        for url in (LIST, _url("api-release-build", release), _url("api-release-publish", release)):
            response = _post(client, url, {"version": "5.0.0"})
            assert response.status_code == 403 and response.json()["code"] == "permission_denied", (role, url)
    assert list(Release.objects.values_list("version", "status")) == [("1.0.0", "draft")] and sent == []
    assert Client().get(LIST).status_code in (401, 403)


def test_admin_creates_a_release(content, users):  # noqa: F811
    response = _post(_client(users[Role.ADMIN]), LIST, {
        "version": "1.0.0", "title": "API release", "license": "CC-BY-NC-4.0", "description": "by the API",
        "filters": {"stage": "S1", "modality": ""}, "include": ["rejected", "open_case"]})
    assert response.status_code == 201, response.json()
    body = response.json()
    made = Release.objects.get()
    assert body["id"] == made.pk and body["version"] == "1.0.0" and body["status"] == "draft"
    assert (body["title"], body["license"], body["bump"], body["previous"]) == ("API release", "CC-BY-NC-4.0",
                                                                                 "major", None)
    assert set(body["counts"]["stage"]) == {"S1"} and body["counts"]["items"] == made.items.count() > 0
    assert body["selection"] == {"filters": {"stage": "S1"}, "include": ["open_case", "rejected"]}
    assert body["changes"] == [] and body["created_by"] == users[Role.ADMIN].username
    assert body["progress"] == {"status": "draft", "step": "", "done": 0, "total": 0, "error": ""}
    assert {"reference_standard", "excluded", "audit_head", "digest", "public_key"} <= set(body)


def test_the_semver_rule_picks_the_version_and_the_changelog_says_why(release, users):  # noqa: F811
    client = _client(users[Role.ADMIN])
    gone = QAItem.objects.filter(is_current=True).order_by("pk").first()
    QAItem.objects.filter(pk=gone.pk).update(status=QAItem.Status.AMBIGUOUS)
    body = _post(client, LIST).json()
    assert body["version"] == "2.0.0" and body["bump"] == "major"
    assert body["previous"] == {"id": release.pk, "version": "1.0.0"}
    assert body["changes"] == [{"kind": "removed", "item_key": str(gone.item_key), "from_version": gone.version,
                                "to_version": None,
                                "reason": "no longer approved, or left out by the selection"}]
    assert body["excluded"]["left_out"] == {"ambiguous": 1}


def test_bad_input_is_refused_in_the_one_error_shape_and_nothing_is_written(content, users):  # noqa: F811
    client = _client(users[Role.ADMIN])
    for body, status, message in (
            ({"version": "1.0"}, 400, "'1.0' is not a semantic version"),
            ({"version": "01.0.0"}, 400, "is not a semantic version"),
            ({"filters": {"stage": "S9"}}, 400, "a release needs at least one item"),
            ({"include": ["everything"]}, 400, "include"),
            ({"filters": "stage=S1"}, 400, "filters")):
        response = _post(client, LIST, body)
        assert response.status_code == status and response.json()["code"] == "invalid", body
        assert message in response.json()["detail"], response.json()
    assert _post(client, LIST, {"include": ["everything"]}).json()["fields"]["include"]
    assert not Release.objects.exists()
    assert _post(client, LIST, {"version": "1.2.0"}).status_code == 201
    older = _post(client, LIST, {"version": "1.1.9"})
    assert older.status_code == 400 and "must be greater than the latest release 1.2.0" in older.json()["detail"]
    assert _client(users[Role.CURATOR]).get(reverse("releases:api-release-detail", kwargs={"pk": 999999})).json() \
        == {"code": "not_found", "detail": "Not found."}


def test_the_list_is_paginated_newest_first(release, users):  # noqa: F811
    second = release_create(actor=users[Role.ADMIN], version="1.0.1")
    client = _client(users[Role.AUDITOR])
    page = client.get(LIST, {"page_size": 1}).json()
    assert page["count"] == 2 and [r["version"] for r in page["results"]] == ["1.0.1"] and page["next"]
    assert page["results"][0]["id"] == second.pk and "changes" not in page["results"][0]
    assert page["results"][0]["previous"] == {"id": release.pk, "version": "1.0.0"}
    assert [r["version"] for r in client.get(page["next"]).json()["results"]] == ["1.0.0"]


def test_build_is_queued_202_and_refused_without_a_key(release, users, signing, sent, settings,  # noqa: F811
                                                       django_capture_on_commit_callbacks):
    client = _client(users[Role.ADMIN])
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = _post(client, _url("api-release-build", release))
    assert response.status_code == 202 and response.json()["status"] == "building"
    assert response.json()["progress"]["step"] == "queued"
    assert len(callbacks) == 1 and sent == [(release.pk, users[Role.ADMIN].pk)]

    settings.MEDR2_RELEASE_SIGNING_KEY = settings.MEDR2_SIGNING_KEY = ""
    refused = _post(client, _url("api-release-build", release))
    assert refused.status_code == 400 and refused.json()["code"] == "invalid"
    assert "no release signing key" in refused.json()["detail"] and len(sent) == 1


def test_publish_is_refused_until_built_then_final(release, users, signing, sent):  # noqa: F811
    client = _client(users[Role.ADMIN])
    refused = _post(client, _url("api-release-publish", release))
    assert refused.status_code == 400 and refused.json()["code"] == "invalid"
    assert "build it before publishing" in refused.json()["detail"]
    assert Release.objects.get().status == Release.Status.DRAFT

    fake_archive(release, signing)
    published = _post(client, _url("api-release-publish", release))
    assert published.status_code == 200 and published.json()["status"] == "published"
    assert published.json()["published_by"] == users[Role.ADMIN].username and published.json()["published_at"]
    again = _post(client, _url("api-release-publish", release))
    assert again.status_code == 409 and again.json() == {"code": "conflict",
                                                         "detail": "release 1.0.0 is already published"}
    rebuild = _post(client, _url("api-release-build", release))
    assert rebuild.status_code == 409 and "never changes" in rebuild.json()["detail"] and sent == []


def test_the_schema_documents_every_operation(users):
    schema = _client(users[Role.CURATOR]).get(reverse("api-schema"), {"format": "json"}).json()
    paths = schema["paths"]
    assert set(paths["/api/releases/"]) >= {"get", "post"}
    assert "get" in paths["/api/releases/{id}/"]
    assert "202" in paths["/api/releases/{id}/build/"]["post"]["responses"]
    assert "200" in paths["/api/releases/{id}/publish/"]["post"]["responses"]
    components = schema["components"]["schemas"]
    detail = components["ReleaseDetailOutput"]["properties"]
    assert {"changes", "counts", "excluded", "progress", "previous"} <= set(detail)
    create = paths["/api/releases/"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert set(components[create.rsplit("/", 1)[1]]["properties"]) == {"version", "title", "description", "license",
                                                                       "filters", "include"}
