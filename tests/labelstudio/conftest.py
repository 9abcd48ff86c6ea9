"""A real Label Studio server (its own virtualenv, .venv-ls) for the integration tests.

The data dir is migrated once into var/ls-template (about a minute, kept between runs) with the
admin and three radiologists who have preset API tokens; each test session runs on a copy."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from labelstudio.server import REPO, LabelStudioServer, from_template

RADIOLOGISTS = [
    {"email": "rad1@medr2.test", "password": "rad1-Secret-123", "token": "1" * 40, "first_name": "Rad One"},
    {"email": "rad2@medr2.test", "password": "rad2-Secret-123", "token": "2" * 40, "first_name": "Rad Two"},
    {"email": "rad3@medr2.test", "password": "rad3-Secret-123", "token": "3" * 40, "first_name": "Rad Three"},
]
TEMPLATE_DIR = Path(os.environ.get("MEDR2_LS_TEMPLATE_DIR", REPO / "var" / "ls-template"))


@pytest.fixture(scope="session")
def ls_template():
    template = LabelStudioServer(data_dir=TEMPLATE_DIR)
    marker = TEMPLATE_DIR / ".radiologists"
    if not template.executable.exists():
        pytest.fail("Label Studio is not installed: run ./scripts/labelstudio.sh install (make test does it)")
    if not template.initialized() or not marker.exists():
        if template.initialized():
            import shutil

            shutil.rmtree(TEMPLATE_DIR)
        template.init()
        template.add_users(RADIOLOGISTS)
        marker.write_text("ok")
    return template


@pytest.fixture(scope="session")
def ls_server(ls_template, tmp_path_factory):
    server = from_template(ls_template, tmp_path_factory.mktemp("label-studio"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def ls_settings(settings, ls_server):
    settings.LABEL_STUDIO_URL = ls_server.url
    settings.LABEL_STUDIO_PUBLIC_URL = ls_server.url
    settings.LABEL_STUDIO_API_KEY = ls_server.api_key
    settings.LABEL_STUDIO_WEBHOOK_SECRET = ""
    settings.LABEL_STUDIO_TIMEOUT_S = 10
    return settings


@pytest.fixture
def ls_admin(ls_server):
    from labelstudio.client import LabelStudioClient

    client = LabelStudioClient(url=ls_server.url, api_key=ls_server.api_key)
    yield client
    client.close()


@pytest.fixture
def as_radiologist(ls_server):
    """SDK clients acting as rad1..rad3 (their own tokens), as each radiologist's browser would."""
    from label_studio_sdk import LabelStudio

    return [LabelStudio(base_url=ls_server.url, api_key=r["token"]) for r in RADIOLOGISTS]


@pytest.fixture
def radiologists(make_user):
    """Our accounts for the Label Studio users (same emails, different case on purpose for one)."""
    from accounts.roles import Role
    from accounts.services import user_create

    made = []
    for n, r in enumerate(RADIOLOGISTS):
        email = r["email"].upper() if n == 2 else r["email"]
        made.append(user_create(username=f"rad{n + 1}", email=email, password="pw-Secret-123",
                                roles=[Role.ANNOTATOR], actor=None))
    return made


@pytest.fixture
def eager_celery():
    from medr2.celery import app

    before = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield app
    app.conf.task_always_eager, app.conf.task_eager_propagates = before


@pytest.fixture
def wide_image(db):
    """A real non-square image (300 x 217) through the importer."""
    from annotation.services.images import BytesSource, images_import
    from tests.conftest import png_bytes

    batch = images_import(sources=[BytesSource("wide.png", png_bytes(size=(300, 217), color=90))], actor=None)
    return batch.images.get()
