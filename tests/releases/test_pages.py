"""The release pages: who may see and do what, the form, the detail page (counts, what was left out,
the changelog, reference standard), the build queued with its live progress, publish and download."""
from __future__ import annotations

import hashlib
import re

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from annotation.models import QAItem, TaskCategory
from releases.models import Release
from releases.services import release_create
from releases.tasks import release_build_task

from ..workers.conftest import eval_content  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db
READERS = {Role.CURATOR, Role.AUDITOR, Role.ADMIN}


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def signing_key_hex() -> str:
    try:
        from releases.package.files import generate_signing_key
    except ImportError:   # the helper module not there yet: the same key format by hand
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

        return Ed25519PrivateKey.generate().private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()).hex()
    return generate_signing_key()


@pytest.fixture
def signing(settings, tmp_path):
    settings.MEDR2_RELEASE_SIGNING_KEY = signing_key_hex()
    settings.MEDR2_SIGNING_KEY = signing_key_hex()             # the platform key: publishing writes a checkpoint
    settings.MEDR2_RELEASE_ROOT = tmp_path / "releases"
    settings.MEDR2_RELEASE_ROOT.mkdir()
    return settings.MEDR2_RELEASE_ROOT


@pytest.fixture
def content(eval_content):  # noqa: F811
    return eval_content(images=2, kinds=["clean", "option_permutation"])


@pytest.fixture
def release(content, users):
    return release_create(actor=users[Role.ADMIN], version="1.0.0")


@pytest.fixture
def sent(monkeypatch):
    """The build task's sends (the broker is never reached)."""
    calls = []
    monkeypatch.setattr(release_build_task, "apply_async",
                        lambda args=None, kwargs=None, **options: calls.append(tuple(args or ())))
    return calls


def fake_archive(release: Release, root, payload: bytes = b"\x1f\x8b not really a release") -> bytes:
    """Mark the release built with an archive where the build puts it (<root>/<folder>.tar.gz)."""
    folder = f"{release.name}-{release.version}"
    (root / f"{folder}.tar.gz").write_bytes(payload)
    Release.objects.filter(pk=release.pk).update(
        status=Release.Status.BUILT, folder=folder, digest="d" * 64, public_key="p" * 64,
        archive_sha256=hashlib.sha256(payload).hexdigest(), archive_bytes=len(payload))
    return payload


def test_readers_see_the_pages_and_only_admins_manage(release, users, signing, sent):
    pk = {"pk": release.pk}
    reads = [reverse("releases:release-list"), reverse("releases:release-detail", kwargs=pk),
             reverse("releases:release-progress", kwargs=pk)]
    for role in [*Role, None]:
        client = _client(users[role])
        for url in reads:
            assert client.get(url).status_code == (200 if role in READERS else 403), (role, url)
        assert client.get(reverse("releases:release-create")).status_code == (200 if role == Role.ADMIN else 403)
        if role != Role.ADMIN:
            for name in ("release-build", "release-publish"):
                assert client.post(reverse(f"releases:{name}", kwargs=pk)).status_code == 403, (role, name)
            assert client.post(reverse("releases:release-create"), {"version": "9.0.0"}).status_code == 403
    assert Release.objects.get().status == Release.Status.DRAFT and sent == []
    anonymous = Client().get(reverse("releases:release-list"))
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


def test_readers_see_no_manage_buttons_and_the_nav_entry_lights_up(release, users):
    html = _client(users[Role.CURATOR]).get(reverse("releases:release-list")).content.decode()
    assert re.findall(r'class="active">([^<]+)</a>', html) == ["Releases"]
    assert f'href="/releases/{release.pk}/"' in html and 'id="new-release"' not in html
    detail = _client(users[Role.AUDITOR]).get(reverse("releases:release-detail", kwargs={"pk": release.pk}))
    assert 'id="build-form"' not in detail.content.decode()
    admin_list = _client(users[Role.ADMIN]).get(reverse("releases:release-list")).content.decode()
    assert 'id="new-release"' in admin_list
    assert "Releases" not in _client(users[Role.ANNOTATOR]).get(reverse("dashboard:index")).content.decode()


def test_admin_creates_a_release_with_the_form(content, users):
    client = _client(users[Role.ADMIN])
    form = client.get(reverse("releases:release-create")).content.decode()
    for name in ("stage", "category", "modality", "source_dataset"):
        assert f'<select name="{name}"' in form
    assert form.count('type="checkbox" name="include"') == 3 and 'value="open_case"' in form
    assert '<option value="S1">' in form and "Med-R2 synthetic phantoms" in form

    response = client.post(reverse("releases:release-create"), {"version": "", "title": "First cut",
                                                                  "description": "all of it", "license": ""})
    release = Release.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("releases:release-detail", kwargs={"pk": release.pk})
    assert (release.version, release.title, release.license, release.bump) == ("1.0.0", "First cut", "CC-BY-4.0",
                                                                                "major")
    assert release.counts["items"] == content["items"] and release.created_by == users[Role.ADMIN]
    page = client.get(response["Location"])
    assert "Release 1.0.0 created as a draft" in page.content.decode()


def test_the_form_filters_includes_and_refuses_bad_versions(content, users):
    client = _client(users[Role.ADMIN])
    one = QAItem.objects.filter(is_current=True, stage__code="S1").order_by("pk").first()
    QAItem.objects.filter(pk=one.pk).update(status=QAItem.Status.REJECTED)
    url = reverse("releases:release-create")
    for version, message in (("1.0", "is not a semantic version"), ("v2", "is not a semantic version")):
        response = client.post(url, {"version": version})
        assert response.status_code == 400 and message in response.content.decode()
    unused = TaskCategory.objects.exclude(pk__in=QAItem.objects.values("category")).values_list("code", flat=True)[0]
    nothing = client.post(url, {"category": unused})
    assert nothing.status_code == 400 and "a release needs at least one item" in nothing.content.decode()
    assert not Release.objects.exists()

    response = client.post(url, {"version": "0.1.0", "stage": "S1", "include": ["rejected"]})
    release = Release.objects.get()
    assert response.status_code == 302 and release.version == "0.1.0"
    assert set(release.counts["stage"]) == {"S1"} and release.selection == {"filters": {"stage": "S1"},
                                                                            "include": ["rejected"]}
    assert release.excluded["included_anyway"] == {"rejected": 1}
    again = client.post(url, {"version": "0.1.0"})
    assert again.status_code == 400 and "must be greater than the latest release 0.1.0" in again.content.decode()


def test_the_detail_page_shows_identity_counts_left_out_and_the_changelog(release, users):
    admin = users[Role.ADMIN]
    gone = QAItem.objects.filter(is_current=True).order_by("pk").first()
    QAItem.objects.filter(pk=gone.pk).update(status=QAItem.Status.REJECTED)
    second = release_create(actor=admin)
    assert (second.version, second.bump, second.previous) == ("2.0.0", "major", release)

    curator = _client(users[Role.CURATOR])
    html = curator.get(reverse("releases:release-detail", kwargs={"pk": second.pk})).content.decode()
    assert "med-r2 2.0.0" in html and "status release-draft" in html
    assert f'href="/releases/{release.pk}/">1.0.0</a>' in html and second.audit_head in html
    for key in ("stage", "category", "modality", "split"):
        assert f'id="counts-{key}"' in html
    counts = re.search(r'id="counts-stage">.*?</table>', html, re.S).group(0)
    for stage, n in second.counts["stage"].items():
        assert stage in counts and f'<td class="num">{n}</td>' in counts
    excluded = re.search(r'id="excluded">.*?</div>', html, re.S).group(0)
    assert "Rejected" in excluded
    changes = re.search(r'id="changes">.*?</table>', html, re.S).group(0)
    assert changes.count("<tr>") == 2 and "removed" in changes and str(gone.item_key) in changes
    assert "0 added · 1 removed · 0 changed (0 with a new gold)" in " ".join(html.split())
    assert 'id="reference-standard"' in html and 'id="agreement"' in html and 'id="shortcut-audit"' in html
    assert "Download" not in html and "job_progress.js" not in html       # nothing built, nothing to poll

    first = _client(users[Role.CURATOR]).get(reverse("releases:release-detail", kwargs={"pk": release.pk}))
    assert 'id="changelog-first"' in first.content.decode()
    only_added = _client(admin).get(reverse("releases:release-detail", kwargs={"pk": second.pk}), {"kind": "added"})
    assert "No added changes." in only_added.content.decode()


def test_the_changelog_is_paginated(release, users):
    Release.objects.filter(pk=release.pk).update(changes=[
        {"kind": "added", "item_key": f"key-{i:03}", "from_version": None, "to_version": 1, "reason": "new"}
        for i in range(120)], previous=Release.objects.create(version="0.1.0", created_date="2026-01-01"))
    client = _client(users[Role.CURATOR])
    url = reverse("releases:release-detail", kwargs={"pk": release.pk})
    html = client.get(url).content.decode()
    assert "key-000" in html and "key-049" in html and "key-050" not in html and "page 1 of 3" in html
    last = client.get(url, {"changes": 3, "kind": "added"}).content.decode()
    assert "key-119" in last and "key-099" not in last and "?kind=added&amp;changes=2" in last


def test_build_is_queued_and_its_progress_polled(release, users, signing, sent, django_capture_on_commit_callbacks):
    client = _client(users[Role.ADMIN])
    url = reverse("releases:release-detail", kwargs={"pk": release.pk})
    assert 'id="build-form"' in client.get(url).content.decode()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(reverse("releases:release-build", kwargs={"pk": release.pk}))
    assert response.status_code == 302 and response["Location"] == url
    assert len(callbacks) == 1 and sent == [(release.pk, users[Role.ADMIN].pk)]
    assert Release.objects.get().status == Release.Status.BUILDING

    html = client.get(url).content.decode()
    progress_url = reverse("releases:release-progress", kwargs={"pk": release.pk})
    assert f'id="release-progress" data-progress-url="{progress_url}" data-running="building"' in html
    assert '<script src="/static/js/job_progress.js" defer></script>' in html
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == []          # no inline scripts
    assert "Queue the build again" in html and 'id="publish-form"' not in html
    assert client.get(progress_url).json() == {"status": "building", "step": "queued", "done": 0, "total": 0,
                                               "error": ""}
    Release.objects.filter(pk=release.pk).update(progress={"step": "images", "done": 3, "total": 8})
    assert client.get(progress_url).json()["done"] == 3
    assert client.get(reverse("releases:release-progress", kwargs={"pk": release.pk + 99})).status_code == 404


def test_build_without_a_signing_key_and_publish_before_build_are_refused(release, users, settings, sent):
    settings.MEDR2_RELEASE_SIGNING_KEY = settings.MEDR2_SIGNING_KEY = ""
    client = _client(users[Role.ADMIN])
    page = client.post(reverse("releases:release-build", kwargs={"pk": release.pk}), follow=True)
    assert "no release signing key" in page.content.decode() and sent == []
    page = client.post(reverse("releases:release-publish", kwargs={"pk": release.pk}), follow=True)
    assert "build it before publishing" in page.content.decode()
    assert Release.objects.get().status == Release.Status.DRAFT


def test_download_is_404_until_built_then_streams_the_archive(release, users, signing):
    client = _client(users[Role.AUDITOR])
    url = reverse("releases:release-download", kwargs={"pk": release.pk})
    assert client.get(url).status_code == 404
    payload = fake_archive(release, signing)
    response = client.get(url)
    assert response.status_code == 200 and b"".join(response.streaming_content) == payload
    assert response["Content-Disposition"] == 'attachment; filename="med-r2-1.0.0.tar.gz"'
    assert response["Content-Type"] == "application/gzip"
    html = client.get(reverse("releases:release-detail", kwargs={"pk": release.pk})).content.decode()
    assert f'href="{url}"' in html and "d" * 64 in html and "p" * 64 in html
    assert 'id="publish-form"' not in html            # auditors read only
    (signing / "med-r2-1.0.0.tar.gz").unlink()
    assert client.get(url).status_code == 404          # built, but the file is gone
    assert _client(users[Role.ANNOTATOR]).get(url).status_code == 403


def test_admin_publishes_a_built_release_once(release, users, signing):
    fake_archive(release, signing)
    client = _client(users[Role.ADMIN])
    detail = reverse("releases:release-detail", kwargs={"pk": release.pk})
    assert 'id="publish-form"' in client.get(detail).content.decode()
    page = client.post(reverse("releases:release-publish", kwargs={"pk": release.pk}), follow=True)
    assert "Release 1.0.0 published" in page.content.decode()
    release.refresh_from_db()
    assert release.status == Release.Status.PUBLISHED and release.published_by == users[Role.ADMIN]
    html = page.content.decode()
    assert 'id="publish-form"' not in html and 'id="build-form"' not in html and "status release-published" in html
    again = client.post(reverse("releases:release-publish", kwargs={"pk": release.pk}), follow=True)
    assert "already published" in again.content.decode()
    rebuild = client.post(reverse("releases:release-build", kwargs={"pk": release.pk}), follow=True)
    assert "it never changes" in rebuild.content.decode()
    assert Release.objects.get().status == Release.Status.PUBLISHED


def test_a_real_build_shows_its_digest_and_downloads_the_signed_archive(release, users, signing):
    from releases.package.files import verify_release

    result = release_build_task(release.pk, users[Role.ADMIN].pk)      # what the worker runs, here in-process
    assert result["status"] == "built", result
    release.refresh_from_db()
    client = _client(users[Role.CURATOR])
    html = client.get(reverse("releases:release-detail", kwargs={"pk": release.pk})).content.decode()
    assert release.digest in html and release.public_key in html and "status release-built" in html
    response = client.get(reverse("releases:release-download", kwargs={"pk": release.pk}))
    body = b"".join(response.streaming_content)
    assert response.status_code == 200 and hashlib.sha256(body).hexdigest() == release.archive_sha256
    downloaded = signing / "downloaded.tar.gz"
    downloaded.write_bytes(body)
    assert verify_release(downloaded, public_key_hex=release.public_key).ok
    assert client.get(reverse("releases:release-progress", kwargs={"pk": release.pk})).json()["status"] == "built"
