"""A real Celery worker process, over the real Redis broker, against the real test database."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection, transaction

from audit.services import audit_record
from audit.tasks import verify_chain
from medr2.celery import app

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER'] or 'postgres'}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.fixture
def worker():
    if connection.vendor != "postgresql" or not settings.CELERY_BROKER_URL or settings.CELERY_TASK_ALWAYS_EAGER:
        pytest.fail("worker tests need PostgreSQL and a Redis broker: run them through `make test`")
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DATABASE_URL": _database_url(), "CELERY_TASK_ALWAYS_EAGER": "false", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "medr2", "worker", "-Q", queue, "--pool=solo", "--concurrency=1",
         "-n", f"{queue}@%h", "--without-gossip", "--without-mingle", "--loglevel=INFO"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        yield queue
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_worker_verifies_the_audit_chain_and_catches_tampering(worker):
    from audit.models import AuditEvent

    already = AuditEvent.objects.count()   # e.g. the fixtures' users (account changes are audited)
    with transaction.atomic():
        events = [audit_record(actor=None, action="test.worker.event", object_id=i, after={"i": i})
                  for i in range(5)]

    result = verify_chain.apply_async(queue=worker).get(timeout=90)
    assert result["ok"] is True and result["checked"] == already + 5

    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SET LOCAL session_replication_role = replica")  # an attacker with superuser rights
        cur.execute("UPDATE audit_auditevent SET after = '{\"i\": 42}' WHERE seq = %s", [events[2].seq])
    result = verify_chain.apply_async(queue=worker).get(timeout=90)
    assert result["ok"] is False and result["first_bad_seq"] == events[2].seq


def test_task_is_registered_under_its_stable_name():
    assert "audit.verify_chain" in app.tasks
