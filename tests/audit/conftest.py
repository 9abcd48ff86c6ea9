"""Helpers for the audit trail's tests: an attacker with database rights, and items to review."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from tests.conftest import png_bytes


def tamper(sql: str, params=()) -> None:
    """Run SQL the append-only triggers would refuse, as someone with database superuser rights would:
    with `session_replication_role = replica` ordinary triggers (and foreign-key checks) are skipped."""
    with connection.cursor() as cur:
        cur.execute("SET LOCAL session_replication_role = replica")
        cur.execute(sql, params)
        cur.execute("SET LOCAL session_replication_role = origin")


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def items(curator):
    """Five current QA items on one imported image (made through the real services)."""
    from annotation.models import TaskCategory
    from annotation.services.images import BytesSource, images_import
    from annotation.services.qa import chain_create, qa_item_create

    image = images_import(sources=[BytesSource("x.png", png_bytes(size=(100, 60)))], actor=curator).images.get()
    chain = chain_create(image=image, actor=curator)
    category = TaskCategory.objects.get(code="modality")
    return [qa_item_create(chain=chain, step=n, category=category, question=f"Which modality? ({n})",
                           options=["CT", "MR"], gold_answer="CT", actor=curator) for n in range(1, 6)]
