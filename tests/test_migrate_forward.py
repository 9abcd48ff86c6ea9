"""A database made by the code from before the app split migrates forward with every row intact.

The last commit before the split builds and fills a PostgreSQL database through its own commands
(images, chains, items, variants, an evaluation run, adjudication cases and readings, a Label Studio
batch, sync log, webhook deliveries, annotations, a disagreement, a rescore record). This checkout's
`migrate` then runs on it. Every table must keep its exact rows (a digest of each table's content),
the moved models must read them through their new apps, content types (and so permissions) must be
relabelled, and the models must match the migrations (`makemigrations --check`). New tables start
empty, except the audit trail's touched-object rows, which audit/0005 derives from the old bulk events
(the chain must still verify)."""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import uuid
from io import BytesIO
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parent.parent
PRE_SPLIT = "8f6854ff7351db334b1728a96964cc1deb96ae8f"   # the last commit before the app split
MOVED = {"annotation_annotationbatch", "annotation_annotationtask", "annotation_labelstudioannotation",
         "annotation_annotatordisagreement", "annotation_synclogentry", "annotation_webhookdelivery",
         "annotation_adjudicationcase", "annotation_casereading", "workers_predictionrescore",
         "annotation_annotationbatch_readers"}

OLD_EXTRA_ROWS = """
import hashlib
from django.contrib.auth import get_user_model
from annotation.models import (AdjudicationCase, AnnotationTask, AnnotatorDisagreement, LabelStudioAnnotation,
                               SyncLogEntry, WebhookDelivery)
from workers.models import Prediction, PredictionRescore
user = get_user_model().objects.get(username="demo-annotator")
task = AnnotationTask.objects.order_by("pk").first()
for n in (1, 2):
    LabelStudioAnnotation.objects.create(task=task, ls_annotation_id=9000 + n, author=user, result=[{"n": n}],
                                         result_hash=hashlib.sha256(str(n).encode()).hexdigest(), n_regions=n)
AnnotatorDisagreement.objects.create(task=task, image=task.image, kinds=["box_unmatched"], annotators=[user.pk])
SyncLogEntry.objects.create(batch=task.batch, direction="pull", level="warning", code="region_rejected",
                            message="a rotated box was refused")
WebhookDelivery.objects.create(body_sha256="ab" * 32, action="ANNOTATION_CREATED")
prediction = Prediction.objects.order_by("pk").first()
PredictionRescore.objects.create(prediction=prediction, gold_item=prediction.item, correct_before=False,
                                 correct_after=True, reason="migration test",
                                 case=AdjudicationCase.objects.order_by("pk").first())
"""


def _full_hash() -> str:
    out = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{PRE_SPLIT}^{{commit}}"], cwd=ROOT,
                         capture_output=True, text=True)
    if out.returncode:
        pytest.skip("the pre-split commit 8f6854f is not in this clone's history (a shallow clone?)")
    return out.stdout.strip()


def _checkout(commit: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, capture_output=True, check=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def _manage(code: Path, env: dict, *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=code, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, (f"manage.py {' '.join(args)} in {code.name}:\n"
                                  f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def _digests(dsn: str, columns: dict[str, list[str]] | None = None) -> dict[str, tuple[int, str]]:
    """Row count and an order-independent digest of every application table's content: of the given
    `columns` per table (the columns a table had before the migration: a column added later, such as
    `workers_modelendpoint.lineage`, is not part of what must stay unchanged), else of every column."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "select tablename from pg_tables where schemaname = 'public' and tablename not like 'django_%' "
            "and tablename not like 'auth_permission' order by 1")]
        out = {}
        for table in tables:
            cols = (columns or {}).get(table) or _columns(conn, table)
            row = "row(" + ", ".join(f't."{c}"' for c in cols) + ")::text"
            n, digest = conn.execute(
                f"select count(*), coalesce(md5(string_agg(md5({row}), '' order by md5({row}))), '') "
                f'from "{table}" t').fetchone()
            out[table] = (n, digest)
        return out


def _columns(conn, table: str) -> list[str]:
    return [r[0] for r in conn.execute("select column_name from information_schema.columns where table_schema = "
                                       "'public' and table_name = %s order by ordinal_position", [table])]


def _all_columns(dsn: str) -> dict[str, list[str]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("select tablename from pg_tables where schemaname = 'public'")]
        return {t: _columns(conn, t) for t in tables}


def _check_audit_backfill(dsn: str, n_rows: int) -> None:
    """audit/0005 gives old bulk events (which named their objects only in `after`) exactly the
    touched-object rows their `after` lists: the per-object history then finds them."""
    from audit.objects import LEGACY_OBJECT_LISTS, legacy_objects

    with psycopg.connect(dsn, autocommit=True) as conn:
        events = conn.execute("select id, action, after from audit_auditevent where action = any(%s)",
                              [sorted(LEGACY_OBJECT_LISTS)]).fetchall()
        rows = conn.execute("select event_id, object_type, object_id from audit_auditeventobject").fetchall()
    expected = sorted((pk, t, i) for pk, action, after in events for t, i in legacy_objects(action, after))
    assert expected, "the old database should have bulk events that name their objects (review, assignment)"
    assert sorted(rows) == expected and n_rows == len(expected)


@pytest.fixture
def old_database(tmp_path):
    name = f"medr2_premig_{uuid.uuid4().hex[:8]}"
    admin = "postgresql://postgres@127.0.0.1:5432/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    try:
        yield f"postgres://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{name}" with (force)')


def test_a_database_from_before_the_split_migrates_forward_with_every_row(tmp_path, old_database):
    old = _checkout(_full_hash(), tmp_path / "pre-split")
    env = {**os.environ, "DATABASE_URL": old_database, "SECRET_KEY": "migrate-forward-test", "MEDR2_DEBUG": "1",
           "CELERY_BROKER_URL": "", "CELERY_TASK_ALWAYS_EAGER": "true", "MEDR2_VAR_DIR": str(tmp_path / "var"),
           "LABEL_STUDIO_URL": "", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    for args in (["migrate", "--noinput", "-v", "0"], ["create_demo_users"],
                 ["load_demo_data", "--phantoms", "6", "--assign-to", "demo-annotator,demo-adjudicator"],
                 ["generate_chains", "--user", "demo-curator", "--no-progress"],
                 ["review_items", "--user", "demo-curator", "--set", "approved", "--source-dataset",
                  "Med-R2 synthetic phantoms", "--skip-invalid", "--note", "migration test"],
                 ["generate_variants", "--no-progress"],
                 ["register_model", "random-baseline", "random"],
                 ["run_evaluation", "--models", "random-baseline", "--name", "before the split", "--split", "all",
                  "--batch-size", "64", "--no-progress"],
                 ["find_disagreements", "--run", "latest", "--save"],
                 ["assign_cases", "--actor", "demo-curator", "--limit", "5"],
                 ["labelstudio_batch", "Batch before the split", "--user", "demo-curator", "--limit", "3",
                  "--annotators", "2", "--readers", "demo-annotator,demo-adjudicator"],
                 ["shell", "-c", OLD_EXTRA_ROWS]):
        _manage(old, env, *args)
    dsn = old_database.replace("postgres://", "postgresql://")
    before, old_columns = _digests(dsn), _all_columns(dsn)
    empty = sorted(t for t in MOVED if before.get(t, (0,))[0] == 0)
    assert not empty, f"the old database should have rows in every moved table: {empty}"

    _manage(ROOT, env, "migrate", "--noinput", "-v", "0")
    _manage(ROOT, env, "makemigrations", "--check", "--dry-run")
    after = _digests(dsn, old_columns)
    changed = {t: (before[t], after.get(t)) for t in before if after.get(t) != before[t]}
    assert not changed, f"tables changed or dropped by the migration: {changed}"
    added = {t: after[t] for t in set(after) - set(before)}   # apps that came after the split (e.g. releases)
    backfilled = added.pop("audit_auditeventobject", (0, ""))   # the one exception, checked below
    assert all(n == 0 for n, _ in added.values()), f"new tables should start empty: {added}"
    _check_audit_backfill(dsn, backfilled[0])
    assert "audit chain intact" in _manage(ROOT, env, "verify_audit")   # old events verify as they did

    counts = _manage(ROOT, env, "shell", "-c", (
        "from django.contrib.contenttypes.models import ContentType as C\n"
        "from labelstudio.models import AnnotationBatch, AnnotationTask, LabelStudioAnnotation, SyncLogEntry\n"
        "from adjudication.models import AdjudicationCase, CaseReading, PredictionRescore\n"
        "print(AnnotationBatch.objects.count(), AnnotationTask.objects.count(),"
        " LabelStudioAnnotation.objects.count(), SyncLogEntry.objects.count(), AdjudicationCase.objects.count(),"
        " CaseReading.objects.count(), PredictionRescore.objects.count())\n"
        "print(sorted(C.objects.filter(model__in=['annotationbatch', 'adjudicationcase', 'predictionrescore'])"
        ".values_list('app_label', 'model')))\n"))
    lines = counts.strip().splitlines()
    expected = [before[t][0] for t in ("annotation_annotationbatch", "annotation_annotationtask",
                                       "annotation_labelstudioannotation", "annotation_synclogentry",
                                       "annotation_adjudicationcase", "annotation_casereading",
                                       "workers_predictionrescore")]
    assert [int(v) for v in lines[-2].split()] == expected
    assert lines[-1] == ("[('adjudication', 'adjudicationcase'), ('adjudication', 'predictionrescore'), "
                         "('labelstudio', 'annotationbatch')]")
