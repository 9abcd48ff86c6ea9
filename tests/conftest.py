"""Shared fixtures: real rows, real files, a storage root per test."""
from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import Group
from PIL import Image as PILImage

from accounts.roles import Role
from accounts.services import user_create


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
