"""The Django admin: every model of every project app is registered, reads as words (never
"QAItem object (1)", never "Run batchs"), and every changelist costs the same number of queries
whatever the number of rows on the page (no query per row), with change and add pages that render."""
from __future__ import annotations

import re
from datetime import date

import pytest
from django.apps import apps
from django.contrib import admin
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.roles import Role

pytestmark = pytest.mark.django_db

PROJECT_APPS = ("accounts", "audit", "annotation", "validity", "workers", "labelstudio", "adjudication", "releases",
                "finetune", "reports", "dashboard")
DEFAULT_STR = re.compile(r"^\w+ object \(\w+\)$")
BAD_PLURAL = re.compile(r"(?:[^aeiou]ys|chs|shs|xs|criterias)$")
MAX_CHANGELIST_QUERIES = 20   # session, user, counts, filters, the page: a constant, whatever the rows


def _project_models():
    return [m for label in PROJECT_APPS for m in apps.get_app_config(label).get_models()]


@pytest.fixture
def populated(phantom_images, users, settings):
    """At least two rows of every registered model (twenty and more of the big ones), built with the
    services where they are cheap and as plain rows where only the admin's reading of them matters."""
    from django.contrib.auth.models import Group
    from rest_framework.authtoken.models import Token

    from adjudication.models import AdjudicationCase, CaseReading, PredictionRescore
    from annotation.models import Chain, ImportBatch, ImportChunk, QAItem
    from annotation.services.chains import chains_generate
    from annotation.services.images import BytesSource, images_import
    from annotation.services.qa import qa_items_review
    from annotation.services.variants import variants_generate
    from audit.services import audit_checkpoint
    from common.signing import generate_signing_key
    from finetune.models import FineTuneJob
    from labelstudio.models import (
        AnnotatorDisagreement,
        LabelStudioAnnotation,
        ReaderProject,
        ReaderTask,
        ReaderWorkspace,
        WebhookDelivery,
    )
    from labelstudio.services import batch_create
    from labelstudio.services.batches import sync_log
    from releases.models import Release, ReleaseItem
    from reports.models import AcceptanceCriteria, Report, ReportSignature, ReportSignedCopy, ReportVersion
    from tests.conftest import png_bytes
    from validity.models import ShortcutAuditItem
    from validity.services import shortcut_audit_create
    from workers.models import EvaluationRun
    from workers.services.endpoints import endpoint_create
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create, run_finalize

    curator = users[Role.CURATOR]
    images = phantom_images(2)
    extra = images_import(sources=[BytesSource("extra.png", png_bytes(color=31))], actor=curator,
                          source=ImportBatch.Source.UPLOAD)
    ImportChunk.objects.bulk_create(ImportChunk(batch=extra, index=n, entries=[], status="done") for n in range(2))
    for seed in range(4):   # four chains per image: twenty-odd items
        chains_generate(image_ids=[i.pk for i in images], actor=None, seed=seed)
    items = list(QAItem.objects.order_by("pk"))
    qa_items_review(item_ids=[i.pk for i in items], status="approved", actor=curator)   # a bulk event: objects
    variants_generate(items=[i.pk for i in items], actor=None, seed=0)
    endpoints = [endpoint_create(name=n, backend=n, actor=None) for n in ("null", "random")]
    run = run_create(name="admin", endpoints=endpoints, actor=None, split="all", batch_size=8, start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING)
    for batch_id in run.batches.values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    run_finalize(run_id=run.pk)
    run_create(name="second", endpoints=endpoints[:1], actor=None, split="all", start=False)

    settings.MEDR2_SIGNING_KEY = generate_signing_key()
    for n in range(2):
        audit_checkpoint(reason=f"admin test {n}", actor=None)
        shortcut_audit_create(filters={}, split="test", actor=None)
    audit = shortcut_audit_create(filters={}, split="val", actor=None)
    ShortcutAuditItem.objects.bulk_create(ShortcutAuditItem(audit=audit, item=i, split="test") for i in items[:20])

    ls_batches = [batch_create(name=f"batch {n}", images=images, actor=curator) for n in range(2)]
    tasks = list(ls_batches[0].tasks.all())
    for n, task in enumerate(tasks):
        LabelStudioAnnotation.objects.create(task=task, ls_annotation_id=900 + n, author=users[Role.ANNOTATOR],
                                             result=[], result_hash="0" * 64)
        AnnotatorDisagreement.objects.create(task=task, image=task.image, kinds=["answer"])
        sync_log(batch=ls_batches[0], direction="pull", level="info", code="pulled", message=f"task {n}")
        WebhookDelivery.objects.create(body_sha256=f"{n:064d}", action="ANNOTATION_CREATED")
    for n, reader in enumerate((users[Role.ANNOTATOR], users[Role.ADJUDICATOR])):
        workspace = ReaderWorkspace.objects.create(reader=reader, ls_email=f"reader{n}@example.org", ls_user_id=n + 1,
                                                   ls_organization_id=n + 10, ls_token="0" * 40,
                                                   ls_service_email=f"service{n}@medr2.local")
        copy = ReaderProject.objects.create(batch=ls_batches[0], reader=reader, workspace=workspace,
                                            ls_project_id=500 + n)
        ReaderTask.objects.create(reader_project=copy, task=tasks[0], ls_task_id=700 + n)

    predictions = list(run.predictions.order_by("pk")[:20])
    cases = AdjudicationCase.objects.bulk_create(
        AdjudicationCase(key=f"item:{i.item_key}", item=i, item_key=i.item_key, image=i.chain.image, stage=i.stage,
                         category=i.category, rules=",model_consensus,", hits=[], priority=0.5)
        for i in items[:20])
    for case in cases[:3]:
        CaseReading.objects.create(case=case, reader=users[Role.ADJUDICATOR], assigned_by=curator)
        CaseReading.objects.create(case=case, reader=users[Role.ADMIN], role="second")
    PredictionRescore.objects.bulk_create(
        PredictionRescore(prediction=p, gold_item=p.item, correct_before=p.correct, correct_after=not p.correct,
                          reason="admin test", case=cases[0]) for p in predictions)

    releases = [Release.objects.create(version=f"1.{n}.0", created_date=date(2024, 1, 1), created_by=curator)
                for n in range(2)]
    ReleaseItem.objects.bulk_create(ReleaseItem(release=releases[0], item=i, item_key=i.item_key,
                                                item_version=i.version, gold_hash="0" * 64, split="test")
                                    for i in items[:20])
    for n in range(2):
        FineTuneJob.objects.create(name=f"job {n}", base_endpoint=endpoints[0], recipe="stepwise", steps=3,
                                   release=releases[0] if n else None)
        report = Report.objects.create(title=f"report {n}", release=releases[0], created_by=curator)
        AcceptanceCriteria.objects.create(report=report, number=1, sha256="0" * 64)
        version = ReportVersion.objects.create(report=report, number=1, status="ready", pdf=b"%PDF-1.7")
        ReportSignature.objects.create(version=version, signer=users[Role.AUDITOR], signer_name="A. Auditor",
                                       signer_role="auditor", meaning="author", statement="I wrote it",
                                       signed_at=timezone.now(), document_hash="0" * 64, pdf_sha256="0" * 64)
        ReportSignedCopy.objects.create(version=version, document_hash="0" * 64)
        Token.objects.create(user=users[Role(["curator", "auditor"][n])])
    assert Group.objects.count() >= 2 and Chain.objects.count() >= 2
    return users


def test_every_model_of_every_project_app_is_registered():
    missing = [m._meta.label for m in _project_models() if not admin.site.is_registered(m)]
    assert not missing, f"not in the Django admin: {missing}"


def test_the_site_names_the_platform(users):
    client = Client()
    client.force_login(users[Role.ADMIN])
    page = client.get(reverse("admin:index"))
    assert page.status_code == 200
    assert b"Med-R2 Studio administration" in page.content
    assert b"<title>" in page.content and b"Med-R2 Studio administration</title>" in page.content


def test_names_read_as_words(populated):
    bad_str, bad_plural = [], []
    for model in _project_models():
        obj = model._default_manager.order_by("pk").first()
        assert obj is not None, f"the fixture made no {model._meta.label}"
        if DEFAULT_STR.match(str(obj)):
            bad_str.append(f"{model._meta.label}: {obj}")
        if BAD_PLURAL.search(str(model._meta.verbose_name_plural)):
            bad_plural.append(f"{model._meta.label}: {model._meta.verbose_name_plural}")
    assert not bad_str, "default __str__: " + "; ".join(bad_str)
    assert not bad_plural, "plural: " + "; ".join(bad_plural)


def _changelist_queries(client, url, model_admin, per_page: int, monkeypatch) -> tuple[int, int]:
    monkeypatch.setattr(model_admin, "list_per_page", per_page)
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    return response.status_code, len(ctx.captured_queries)


def test_changelists_cost_the_same_for_one_row_and_twenty(populated, monkeypatch):
    client = Client()
    client.force_login(populated[Role.ADMIN])
    growing, costly, small = [], [], []
    for model, model_admin in sorted(admin.site._registry.items(), key=lambda kv: kv[0]._meta.label):
        meta = model._meta
        rows = model._default_manager.count()
        if rows < 2:
            small.append(f"{meta.label}: {rows}")
            continue
        url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        client.get(url)   # warm caches (content types, sessions) out of the count
        status_one, one = _changelist_queries(client, url, model_admin, 1, monkeypatch)
        status_many, many = _changelist_queries(client, url, model_admin, 20, monkeypatch)
        assert status_one == status_many == 200, meta.label
        if many != one:
            growing.append(f"{meta.label}: {one} queries for 1 row, {many} for {min(rows, 20)}")
        if many > MAX_CHANGELIST_QUERIES:
            costly.append(f"{meta.label}: {many}")
    assert not small, f"the fixture made fewer than two rows of: {small}"
    assert not growing, "a query per row:\n" + "\n".join(growing)
    assert not costly, f"more than {MAX_CHANGELIST_QUERIES} queries: {costly}"


def test_big_lists_have_twenty_rows_in_the_fixture(populated):
    """The query-count comparison above is made on pages of twenty rows for the lists that grow."""
    from adjudication.models import AdjudicationCase, PredictionRescore
    from annotation.models import GroundingBox, QAItem, Variant
    from workers.models import Prediction, RunBatch

    for model in (Prediction, RunBatch, QAItem, Variant, GroundingBox, AdjudicationCase, PredictionRescore):
        assert model.objects.count() >= 20, model._meta.label


def test_change_and_add_pages_render(populated):
    client = Client()
    client.force_login(populated[Role.ADMIN])
    failures = []
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        obj = model._default_manager.order_by("pk").first()
        change = client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk]))
        if change.status_code != 200:
            failures.append(f"{meta.label} change: {change.status_code}")
        add = client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_add"))
        request = type("R", (), {"user": populated[Role.ADMIN]})()
        expected = 200 if model_admin.has_add_permission(request) else 403
        if add.status_code != expected:
            failures.append(f"{meta.label} add: {add.status_code} != {expected}")
    assert not failures, failures


def test_only_admins_reach_the_admin(populated):
    for role in (Role.CURATOR, Role.AUDITOR, Role.ANNOTATOR):
        client = Client()
        client.force_login(populated[role])
        response = client.get(reverse("admin:workers_prediction_changelist"))
        assert response.status_code == 302 and "login" in response["Location"], role


def test_the_query_count_check_sees_a_query_per_row(populated, monkeypatch):
    """Not vacuous: without its list_select_related the case list asks for each row's stage and category."""
    from adjudication.models import AdjudicationCase

    client = Client()
    client.force_login(populated[Role.ADMIN])
    model_admin = admin.site._registry[AdjudicationCase]
    monkeypatch.setattr(model_admin, "list_select_related", False)
    url = reverse("admin:adjudication_adjudicationcase_changelist")
    client.get(url)
    _, one = _changelist_queries(client, url, model_admin, 1, monkeypatch)
    _, many = _changelist_queries(client, url, model_admin, 20, monkeypatch)
    assert many >= one + 19
