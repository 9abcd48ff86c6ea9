"""Every page and API endpoint × every role (plus no role and anonymous)."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from annotation.models import ImportBatch
from annotation.services.images import BytesSource, images_import
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db

A, J, C, U, M, N = Role.ANNOTATOR, Role.ADJUDICATOR, Role.CURATOR, Role.AUDITOR, Role.ADMIN, None
ALL_ROLES = {A, J, C, U, M}


@pytest.fixture
def image_and_batch(curator):
    batch = images_import(sources=[BytesSource("one.png", png_bytes(color=77))], actor=curator,
                          source=ImportBatch.Source.UPLOAD)
    return batch.images.get(), batch


# (name, method, url kwargs key, roles allowed, status when allowed, status for a role that is not
#  allowed). Annotators and adjudicators get 404 for images not assigned to them (ids do not leak).
PAGES = [
    ("dashboard", "get", None, ALL_ROLES, 200, 403),
    ("image-list", "get", None, ALL_ROLES, 200, 403),
    ("image-detail", "get", "image", {C, U, M}, 200, {A: 404, J: 404, N: 403}),
    ("image-file", "get", "image", {C, U, M}, 200, {A: 404, J: 404, N: 403}),
    ("image-import", "get", None, {C, M}, 200, 403),
    ("import-batch", "get", "batch", {C, M}, 200, 403),
    ("audit-list", "get", None, {U, M}, 200, 403),
    ("audit-verify", "get", None, {U, M}, 200, 403),
    ("api-image-list", "get", None, ALL_ROLES, 200, 403),
    ("api-image-detail", "get", "image", {C, U, M}, 200, {A: 404, J: 404, N: 403}),
    ("api-image-upload", "post", None, {C, M}, 201, 403),
    ("api-taxonomy", "get", None, ALL_ROLES, 200, 403),
    ("api-audit-events", "get", None, {U, M}, 200, 403),
    ("api-audit-verify", "get", None, {U, M}, 200, 403),
    ("admin:index", "get", None, {M}, 200, 302),
]


def _url(name, kwarg, image, batch):
    if kwarg == "image":
        return reverse(name, kwargs={"pk": image.pk})
    if kwarg == "batch":
        return reverse(name, kwargs={"pk": batch.pk})
    return reverse(name)


def _call(client, method, url, n):
    if method == "post":
        return client.post(url, {"files": [_upload(n)]})
    return client.get(url)


def _upload(n):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(f"upload-{n}.png", png_bytes(color=(n * 37) % 250 + 1), content_type="image/png")


@pytest.mark.parametrize("name,method,kwarg,allowed,ok_status,denied", PAGES, ids=[p[0] for p in PAGES])
def test_route_by_role(name, method, kwarg, allowed, ok_status, denied, users, image_and_batch):
    image, batch = image_and_batch
    url = _url(name, kwarg, image, batch)
    for n, role in enumerate([*Role, None]):
        client = Client()
        client.force_login(users[role])
        response = _call(client, method, url, n)
        if role in allowed:
            expected = ok_status
        else:
            expected = denied.get(role, 403) if isinstance(denied, dict) else denied
        assert response.status_code == expected, f"{name} as {role}: {response.status_code} != {expected}"


@pytest.mark.parametrize("name,method,kwarg", [(p[0], p[1], p[2]) for p in PAGES], ids=[p[0] for p in PAGES])
def test_anonymous_is_sent_to_login_or_refused(name, method, kwarg, image_and_batch):
    image, batch = image_and_batch
    response = _call(Client(), method, _url(name, kwarg, image, batch), 0)
    if name.startswith("api-"):
        assert response.status_code in (401, 403)
    else:
        assert response.status_code == 302
        assert "login" in response["Location"]


def test_assigned_image_becomes_visible_to_an_annotator(users, image_and_batch):
    from annotation.services.images import image_assign

    image, _ = image_and_batch
    annotator = users[Role.ANNOTATOR]
    client = Client()
    client.force_login(annotator)
    assert client.get(reverse("image-detail", kwargs={"pk": image.pk})).status_code == 404
    assert client.get(reverse("api-image-list")).json()["count"] == 0
    image_assign(images=[image], user=annotator, actor=users[Role.CURATOR])
    assert client.get(reverse("image-detail", kwargs={"pk": image.pk})).status_code == 200
    assert client.get(reverse("image-file", kwargs={"pk": image.pk}))["Content-Type"] == "image/png"
    assert [i["id"] for i in client.get(reverse("api-image-list")).json()["results"]] == [image.pk]
    # the adjudicator still sees nothing
    other = Client()
    other.force_login(users[Role.ADJUDICATOR])
    assert other.get(reverse("api-image-list")).json()["count"] == 0


def test_csrf_is_enforced_on_form_posts(users):
    client = Client(enforce_csrf_checks=True)
    client.force_login(users[Role.CURATOR])
    response = client.post(reverse("image-import"), {"files": [_upload(1)]})
    assert response.status_code == 403
    response = client.post(reverse("api-image-upload"), {"files": [_upload(2)]})
    assert response.status_code == 403  # session-authenticated API calls need the CSRF token too


def test_token_authenticated_api(users):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=users[Role.AUDITOR])
    client = Client()
    assert client.get(reverse("api-audit-verify"), HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 200
    assert client.get(reverse("api-audit-verify"), HTTP_AUTHORIZATION="Token wrong").status_code in (401, 403)


def test_login_and_logout_flow(users):
    client = Client()
    response = client.post(reverse("login"), {"username": users[Role.CURATOR].username, "password": "pw-Secret-123"})
    assert response.status_code == 302 and response["Location"] == reverse("dashboard")
    assert client.get(reverse("dashboard")).status_code == 200
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("dashboard")).status_code == 302
    assert client.cookies.get("medr2_sessionid") is not None


def test_refusal_page_names_the_users_roles(users):
    client = Client()
    client.force_login(users[Role.ANNOTATOR])
    response = client.get(reverse("audit-list"))
    assert response.status_code == 403
    assert b"not part of your role" in response.content and b"annotator" in response.content
