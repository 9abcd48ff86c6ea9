"""Building and publishing a release from real rows: the files load in the community's tools, the
build is byte-identical when repeated, and every refusal leaves nothing behind."""
from __future__ import annotations

import hashlib
import os
import shutil

import pytest
from django.core.exceptions import ValidationError

from accounts.roles import Role
from annotation.models import Image
from annotation.storage import resolve
from audit.models import AuditEvent
from common.errors import Conflict
from releases.models import Release
from releases.package.files import generate_signing_key, verify_release
from releases.services import release_build, release_build_later, release_create, release_publish

from ..workers.conftest import eval_content  # noqa: F401  (fixture)


@pytest.fixture
def admin(make_user):
    return make_user(Role.ADMIN)


@pytest.fixture
def signed(settings, tmp_path):
    settings.MEDR2_RELEASE_SIGNING_KEY = generate_signing_key()
    settings.MEDR2_SIGNING_KEY = generate_signing_key()      # the platform key: publishing writes a checkpoint
    settings.MEDR2_RELEASE_ROOT = tmp_path / "releases"
    return settings


@pytest.fixture
def draft(eval_content, admin, signed):  # noqa: F811
    eval_content(images=3, kinds=["misleading_hint", "option_permutation", "wrong_visual_cue"])
    return release_create(actor=admin, version="1.0.0")


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_built_release_verifies_and_loads_in_datasets_and_mlcroissant(draft, admin, signed, tmp_path, monkeypatch):
    release = release_build(release_id=draft.pk, actor=admin)
    assert release.status == Release.Status.BUILT and len(release.digest) == 64 and release.public_key
    folder = signed.MEDR2_RELEASE_ROOT / release.folder
    archive = folder.parent / f"{folder.name}.tar.gz"
    assert _sha(archive) == release.archive_sha256
    for path in (folder, archive):
        result = verify_release(str(path), public_key_hex=release.public_key)
        assert result.ok, result.first_mismatch
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets
    import mlcroissant

    loaded = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "hf-cache"))
    rows = sum(len(loaded[s]) for s in loaded)
    assert rows == sum(len(r.variant_ids) for r in release.items.all())
    first = loaded[next(iter(loaded))][0]
    assert first["image"].size == (first["width"], first["height"])
    dataset = mlcroissant.Dataset(jsonld=str(folder / "croissant.json"))
    split = next(iter(loaded))
    records = list(dataset.records(record_set=split))
    assert len(records) == len(loaded[split])
    assert AuditEvent.objects.filter(action="releases.release.build", object_id=str(release.pk)).exists()


def test_building_the_same_release_again_gives_byte_identical_files(draft, admin, signed):
    first = release_build(release_id=draft.pk, actor=admin)
    folder = signed.MEDR2_RELEASE_ROOT / first.folder
    archive = folder.parent / f"{folder.name}.tar.gz"
    before = _sha(archive)
    shutil.rmtree(folder)
    archive.unlink()
    Release.objects.filter(pk=draft.pk).update(status=Release.Status.DRAFT)
    again = release_build(release_id=draft.pk, actor=admin)
    assert _sha(archive) == before == again.archive_sha256 and again.digest == first.digest


def test_publishing_freezes_the_release(draft, admin, signed):
    built = release_build(release_id=draft.pk, actor=admin)
    published = release_publish(release=built, actor=admin)
    assert published.status == Release.Status.PUBLISHED and published.published_at
    with pytest.raises(Conflict, match="already published"):
        release_publish(release=published, actor=admin)
    with pytest.raises(Conflict, match="never changes"):
        release_build_later(release=published, actor=admin)
    assert release_build(release_id=published.pk, actor=admin).digest == built.digest   # nothing rebuilt


def test_publishing_writes_a_signed_audit_checkpoint_and_is_refused_without_the_platform_key(draft, admin, signed):
    from audit.models import AuditCheckpoint
    from audit.services import audit_verify

    built = release_build(release_id=draft.pk, actor=admin)
    signed.MEDR2_SIGNING_KEY = ""
    with pytest.raises(ValidationError, match="MEDR2_SIGNING_KEY"):
        release_publish(release=built, actor=admin)
    assert Release.objects.get(pk=built.pk).status == Release.Status.BUILT      # nothing published
    assert not AuditCheckpoint.objects.exists()
    signed.MEDR2_SIGNING_KEY = generate_signing_key()
    release_publish(release=built, actor=admin)
    checkpoint = AuditCheckpoint.objects.get()
    assert checkpoint.reason.startswith(f"release med-r2 {built.version} published")
    result = audit_verify()
    assert result.ok and result.checked >= checkpoint.seq


def test_a_missing_signing_key_is_refused_before_anything_is_written(draft, admin, settings):
    settings.MEDR2_RELEASE_SIGNING_KEY = settings.MEDR2_SIGNING_KEY = ""
    with pytest.raises(ValidationError, match="no release signing key"):
        release_build(release_id=draft.pk, actor=admin)
    with pytest.raises(ValidationError, match="no release signing key"):
        release_build_later(release=draft, actor=admin)
    draft.refresh_from_db()
    assert draft.status == Release.Status.DRAFT and not settings.MEDR2_RELEASE_ROOT.exists()


def test_an_image_missing_from_storage_fails_the_build_with_its_name_and_leaves_no_release(draft, admin, signed):
    image = Image.objects.filter(chains__items__in=draft.items.values("item_id")).first()
    os.remove(resolve(image.file))
    with pytest.raises(ValidationError, match="image file missing from storage"):
        release_build(release_id=draft.pk, actor=admin)
    draft.refresh_from_db()
    assert draft.status == Release.Status.FAILED and "missing" in draft.error
    leftovers = list(signed.MEDR2_RELEASE_ROOT.glob("*")) if signed.MEDR2_RELEASE_ROOT.exists() else []
    assert leftovers == []
    assert AuditEvent.objects.filter(action="releases.release.build_failed", object_id=str(draft.pk)).exists()


def test_an_unexpected_error_marks_the_build_failed_instead_of_leaving_it_building(draft, admin, signed,
                                                                                   monkeypatch):
    import releases.services

    def broken(**kwargs):
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(releases.services, "release_snapshot", broken)
    with pytest.raises(RuntimeError):
        release_build(release_id=draft.pk, actor=admin)
    draft.refresh_from_db()
    assert draft.status == Release.Status.FAILED and draft.error == "RuntimeError: renderer crashed"
