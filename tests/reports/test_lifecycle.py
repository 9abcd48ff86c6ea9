"""The report's lifecycle through its services: criteria written before the results stay unflagged and a
change afterwards is flagged in the report; a version is generated with a signed audit checkpoint, queued
after commit, built to three files whose hashes are stored; a failure marks it failed with its reason;
the database refuses to change a ready version, a criteria version or a signature."""
from __future__ import annotations

import hashlib
import json

import pytest
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from accounts.roles import Role
from audit.models import AuditCheckpoint, AuditEvent
from common.errors import Conflict
from reports.document import canonical_json
from reports.models import AcceptanceCriteria, BuildStatus, ReportSignature, ReportVersion
from reports.services import (
    criteria_set,
    report_create,
    report_generate,
    report_sign,
    report_version_build,
)

from .conftest import CRITERIA

pytestmark = pytest.mark.django_db
REFUSED = DatabaseError   # what a trigger's refusal surfaces as


def _sql(sql: str, params) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.fixture
def pending_run(phantom_images):
    """A run created on real content but not executed: `finish()` runs its batches and scores it."""
    from annotation.models import QAItem
    from annotation.services.chains import chains_generate
    from annotation.services.variants import variants_generate
    from workers.models import EvaluationRun
    from workers.services.endpoints import endpoint_create
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create, run_finalize

    made = phantom_images(3, seed=4)
    chains_generate(image_ids=[i.pk for i in made], actor=None, seed=0)
    QAItem.objects.filter(is_current=True).update(status=QAItem.Status.APPROVED)
    variants_generate(items=list(QAItem.objects.filter(is_current=True).values_list("pk", flat=True)), actor=None,
                      seed=0, kinds=["clean", "misleading_hint"])
    endpoints = [endpoint_create(name="oracle", backend="oracle", actor=None),
                 endpoint_create(name="chance", backend="random", parameters={"seed": 2}, actor=None)]
    run = run_create(name="pending", endpoints=endpoints, actor=None, split="all", batch_size=1000, start=False)

    def finish():
        EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
        for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
            batch_execute(batch_id=batch_id)
        run_finalize(run_id=run.pk)
        return EvaluationRun.objects.get(pk=run.pk)

    return run, finish


def test_criteria_written_before_results_are_clean_and_a_later_change_is_flagged_in_the_report(
        pending_run, users, platform_key, report_sent):
    auditor = users[Role.AUDITOR]
    run, finish = pending_run
    report = report_create(actor=auditor, title="Pre-registered", runs=[run], criteria=CRITERIA)
    first = report.criteria_versions.get()
    assert (first.number, first.after_results, first.results_evidence) == (1, False, [])
    with pytest.raises(ValidationError, match="not scored yet"):
        report_generate(report=report, actor=auditor)          # the results do not exist yet
    scored = finish()
    with pytest.raises(ValidationError, match="say why"):
        criteria_set(report=report, actor=auditor, criteria=[*CRITERIA, {"metric": "guess_rate", "model": "*",
                                                                           "op": "<=", "threshold": 0.3}])
    with pytest.raises(ValidationError, match="unchanged"):
        criteria_set(report=report, actor=auditor, criteria=CRITERIA, reason="again")
    relaxed = [{**CRITERIA[0], "threshold": 0.3}]
    second = criteria_set(report=report, actor=auditor, criteria=relaxed, reason="the bar was too high")
    assert (second.number, second.after_results) == (2, True)
    assert second.results_evidence == [f"run {scored.pk} scored {scored.scored_at:%-d %b %Y, %H:%M:%S} UTC"]
    event = AuditEvent.objects.filter(action="reports.criteria.set").order_by("-seq").first()
    assert event.before["sha256"] == first.sha256 and event.after["after_results"] is True

    version = report_version_build(version_id=report_generate(report=report, actor=auditor).pk, actor=auditor)
    doc = json.loads(bytes(ReportVersion.objects.get(pk=version.pk).document_json))
    history = doc["sections"]["acceptance"]["history"]
    assert [(h["number"], h["after_results"]) for h in history] == [(1, False), (2, True)]
    assert doc["sections"]["acceptance"]["criteria"][0]["threshold"] == 0.3     # judged by the current version
    codes = [f["code"] for f in doc["sections"]["limitations"]["generated"]]
    assert "criteria_changed_after_results" in codes and "criteria_set_after_results" not in codes
    html = bytes(ReportVersion.objects.get(pk=version.pk).html).decode()
    assert "criteria changed after results existed" in html and "the bar was too high" in html


def test_generate_writes_a_signed_checkpoint_and_queues_the_build_after_commit(
        scored_run, users, platform_key, report_sent, django_capture_on_commit_callbacks):
    auditor = users[Role.AUDITOR]
    report = report_create(actor=auditor, title="Queued", runs=[scored_run(images=2)])
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        version = report_generate(report=report, actor=auditor)
        assert report_sent == []                                           # nothing before the commit
    assert len(callbacks) == 1 and report_sent == [("reports.build_version", (version.pk, auditor.pk))]
    version.refresh_from_db()
    assert (version.number, version.status, version.progress["step"]) == (1, "generating", "queued")
    checkpoint = AuditCheckpoint.objects.get(pk=version.checkpoint_id)
    assert checkpoint.reason == f"report {report.pk} v1"
    from common.signing import verify
    assert verify(checkpoint.public_key, checkpoint.message.encode(), checkpoint.signature)
    with pytest.raises(Conflict, match="being generated"):
        report_generate(report=report, actor=auditor)


def test_generate_is_refused_without_the_platform_key(scored_run, users, settings):
    settings.MEDR2_SIGNING_KEY = ""
    report = report_create(actor=users[Role.AUDITOR], title="No key", runs=[scored_run(images=2)])
    with pytest.raises(ValidationError, match="MEDR2_SIGNING_KEY"):
        report_generate(report=report, actor=users[Role.AUDITOR])
    assert not ReportVersion.objects.exists()


def test_a_built_version_stores_three_files_whose_hashes_it_records(ready_version):
    report, version = ready_version()
    row = ReportVersion.objects.get(pk=version.pk)
    data, html, pdf = bytes(row.document_json), bytes(row.html), bytes(row.pdf)
    assert row.status == BuildStatus.READY and row.progress == {"step": "done", "done": 3, "total": 3}
    assert row.json_sha256 == hashlib.sha256(data).hexdigest() == row.document_hash
    assert row.html_sha256 == hashlib.sha256(html).hexdigest() and row.pdf_sha256 == hashlib.sha256(pdf).hexdigest()
    assert pdf.startswith(b"%PDF-") and html.startswith(b"<!doctype html>")
    doc = json.loads(data)
    assert canonical_json(doc) == data                                    # stored canonical: re-hashes the same
    assert doc["report"] == {"id": report.pk, "version": 1, "title": "Board report"}
    checkpoint = AuditCheckpoint.objects.get(pk=row.checkpoint_id)
    shown = doc["sections"]["logging"]["report_checkpoint"]
    assert (shown["seq"], shown["head_hash"]) == (checkpoint.seq, checkpoint.head_hash)
    assert checkpoint.head_hash in html.decode() and f"#{checkpoint.seq}" in html.decode()
    assert row.summary["verdict"] == doc["sections"]["acceptance"]["summary"]["verdict"]
    ready = AuditEvent.objects.get(action="reports.version.ready", object_id=str(row.pk))
    assert ready.after["pdf_sha256"] == row.pdf_sha256


def test_a_failed_build_is_marked_failed_with_its_reason_never_left_generating(scored_run, users, platform_key,
                                                                                report_sent, monkeypatch):
    auditor = users[Role.AUDITOR]
    report = report_create(actor=auditor, title="Fails", runs=[scored_run(images=2)])
    version = report_generate(report=report, actor=auditor)

    def broken(*args, **kwargs):
        raise RuntimeError("pango exploded")

    monkeypatch.setattr("reports.services.lifecycle.render_pdf", broken)
    with pytest.raises(RuntimeError):
        report_version_build(version_id=version.pk, actor=auditor)
    version.refresh_from_db()
    assert version.status == BuildStatus.FAILED and version.error == "RuntimeError: pango exploded"
    assert version.pdf is None and version.document_hash == ""
    assert AuditEvent.objects.filter(action="reports.version.failed", object_id=str(version.pk)).exists()
    # a second delivery of the task is quiet, and the next version can be generated
    assert report_version_build(version_id=version.pk, actor=auditor).status == BuildStatus.FAILED
    assert report_generate(report=report, actor=auditor).number == 2


def test_the_database_refuses_to_change_a_ready_version_a_criteria_version_or_a_signature(ready_version, users):
    report, version = ready_version(images=2)
    signature = report_sign(version=version, user=users[Role.AUDITOR], password="pw-Secret-123", meaning="author")
    attempts = [
        lambda: ReportVersion.objects.filter(pk=version.pk).update(pdf=b"%PDF-forged"),
        lambda: ReportVersion.objects.filter(pk=version.pk).update(status=BuildStatus.GENERATING),
        lambda: _sql("DELETE FROM reports_reportversion WHERE id = %s", [version.pk]),
        lambda: AcceptanceCriteria.objects.filter(report=report).update(criteria=[]),
        lambda: ReportSignature.objects.filter(pk=signature.pk).update(meaning="approver"),
        lambda: ReportSignature.objects.filter(pk=signature.pk).delete(),
    ]
    for attempt in attempts:
        with pytest.raises(REFUSED, match="never changes|append-only"), transaction.atomic():
            attempt()
    with pytest.raises(REFUSED, match="never changes"), transaction.atomic():
        _sql("UPDATE reports_reportversion SET document_hash = %s WHERE id = %s", ["0" * 64, version.pk])
    row = ReportVersion.objects.get(pk=version.pk)
    assert row.document_hash == version.document_hash and bytes(row.pdf).startswith(b"%PDF-1")


def test_a_new_version_carries_no_old_signature(ready_version, users, report_sent):
    auditor = users[Role.AUDITOR]
    report, first = ready_version(images=2)
    report_sign(version=first, user=auditor, password="pw-Secret-123", meaning="reviewer")
    second = report_version_build(version_id=report_generate(report=report, actor=auditor).pk, actor=auditor)
    assert second.number == 2 and second.signatures.count() == 0 and first.signatures.count() == 1
    assert second.document_hash != first.document_hash          # its own checkpoint: its own content hash
    doc = json.loads(bytes(ReportVersion.objects.get(pk=second.pk).document_json))
    assert "(not signed)" in bytes(ReportVersion.objects.get(pk=second.pk).html).decode()
    assert doc["report"]["version"] == 2
