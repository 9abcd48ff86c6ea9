"""Shared fixtures: real rows, real files, a storage root per test."""
from __future__ import annotations

import io

import pytest
from PIL import Image as PILImage

from accounts.roles import Role
from accounts.services import user_create


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """PBKDF2 is slow on purpose; the tests create many users."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _empty_cache():
    """Per-process caches (queue filter choices, items per category) never leak between tests."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def _seeded_after_flush(request):
    """Transactional tests (live server, real worker) flush every table, seed data included:
    put the taxonomy and role groups back, as the migrations left them."""
    marker = request.node.get_closest_marker("django_db")
    if marker is None or not marker.kwargs.get("transaction"):
        return
    request.getfixturevalue("transactional_db")
    from django.contrib.auth.models import Group

    from annotation.models import Stage, TaskCategory
    from annotation.taxonomy_seed import seed_taxonomy

    if not Stage.objects.exists():
        seed_taxonomy(Stage, TaskCategory, with_rules=True)
    for role in Role:
        Group.objects.get_or_create(name=role.value)


@pytest.fixture(autouse=True)
def storage_root(settings, tmp_path):
    root = tmp_path / "storage"
    settings.MEDR2_STORAGE_ROOT = root
    return root


@pytest.fixture
def make_user(db):
    counter = {"n": 0}

    def _make(role: Role | None, username: str | None = None):
        counter["n"] += 1
        name = username or f"{role.value if role else 'norole'}-{counter['n']}"
        return user_create(username=name, email=f"{name}@example.org", password="pw-Secret-123",
                           roles=[role] if role else [], actor=None)

    return _make


@pytest.fixture
def users(make_user):
    """One user per role, plus one without any role."""
    made = {role: make_user(role) for role in Role}
    made[None] = make_user(None)
    return made


@pytest.fixture
def curator(users):
    return users[Role.CURATOR]


def png_bytes(size=(64, 48), color=128, mode="L") -> bytes:
    buf = io.BytesIO()
    PILImage.new(mode, size, color).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def real_dicom_paths():
    from pydicom.data import get_testdata_file

    return {"CT": get_testdata_file("CT_small.dcm"), "MR": get_testdata_file("MR_small.dcm")}


@pytest.fixture
def nifti_path():
    import os

    from nibabel.testing import data_path

    return os.path.join(data_path, "anatomical.nii")


@pytest.fixture
def phantom_images(db):
    """A few phantom DICOMs imported through the real pipeline, with ground-truth findings
    (what `load_demo_data` does, without the packaged files)."""

    def _make(count: int = 4, seed: int = 0):
        import json
        import tempfile
        from pathlib import Path

        from annotation.phantoms import write_phantoms
        from annotation.services.demo import PHANTOM_DATASET, PHANTOM_LICENSE, _ground_truth_findings
        from annotation.services.images import BytesSource, ImportDefaults, images_import

        with tempfile.TemporaryDirectory() as tmp:
            paths = write_phantoms(Path(tmp), count, seed=seed)
            truths = {p.name: json.loads(p.with_suffix(".json").read_text()) for p in paths}
            batch = images_import(sources=[BytesSource(p.name, p.read_bytes()) for p in paths], actor=None,
                                  defaults=ImportDefaults(source_dataset=PHANTOM_DATASET, license=PHANTOM_LICENSE))
        images = []
        for result in batch.files.order_by("id"):
            for image in result.images.all():
                _ground_truth_findings(image, truths[result.name], None)
                images.append(image)
        return images

    return _make
