"""The report pages: readers see them, the board manages and signs; the create form, the criteria form with
its history and flag, the generate button queueing a version with live progress, the ready version framed
(sandboxed) with its downloads, and the sign form (password re-entered, CSRF on)."""
from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from reports.models import Report, ReportSignature, ReportVersion

from .conftest import CRITERIA

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_create_form_makes_a_report_with_its_criteria(scored_run, users):
    run = scored_run(images=2)
    client = _client(users[Role.AUDITOR])
    page = client.get(reverse("reports:report-create")).content.decode()
    assert f'value="{run.pk}"' in page and "scored" in page
    bad = client.post(reverse("reports:report-create"), {"title": "T", "runs": [run.pk], "criteria": "[{"})
    assert bad.status_code == 400 and "not valid JSON" in bad.content.decode()
    response = client.post(reverse("reports:report-create"), {
        "title": "Chest CT triage", "runs": [run.pk], "scope": "research", "criteria": json.dumps(CRITERIA)})
    report = Report.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("reports:report-detail",
                                                                            kwargs={"pk": report.pk})
    page = client.get(response["Location"]).content.decode()
    assert "Chest CT triage" in page and "criteria set after results existed" in page
    assert 'id="generate-form"' in page and "No version yet" in page
    assert _client(users[Role.CURATOR]).post(reverse("reports:report-create"), {"title": "x"}).status_code == 403


def test_generating_shows_live_progress_then_the_framed_report_downloads_and_sign_form(
        scored_run, users, platform_key, report_sent, django_capture_on_commit_callbacks):
    from reports.services import report_create, report_version_build

    report = report_create(actor=users[Role.AUDITOR], title="Board", runs=[scored_run(images=2)], criteria=CRITERIA)
    client = _client(users[Role.ADMIN])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("reports:report-generate", kwargs={"pk": report.pk}))
    version = ReportVersion.objects.get()
    assert response["Location"] == reverse("reports:version-detail", kwargs={"pk": version.pk})
    assert report_sent == [("reports.build_version", (version.pk, users[Role.ADMIN].pk))]
    page = client.get(response["Location"]).content.decode()
    assert 'id="version-progress"' in page and "job_progress.js" in page and 'id="generate-form"' not in page
    assert client.get(reverse("reports:version-progress", kwargs={"pk": version.pk})).json() == {
        "status": "generating", "step": "queued", "done": 0, "total": 3, "error": ""}
    assert client.get(reverse("reports:version-file", kwargs={"pk": version.pk, "fmt": "pdf"})).status_code == 404

    report_version_build(version_id=version.pk)
    page = client.get(reverse("reports:report-detail", kwargs={"pk": report.pk})).content.decode()
    version.refresh_from_db()
    for marker in ('id="report-frame"', 'id="download-pdf"', 'id="download-json"', 'id="sign-form"',
                   version.document_hash, f"--version {version.pk}"):
        assert marker in page, marker
    framed = client.get(reverse("reports:version-file", kwargs={"pk": version.pk, "fmt": "html"}))
    assert framed["X-Frame-Options"] == "SAMEORIGIN" and framed["Content-Security-Policy"].startswith("sandbox")
    assert framed["Content-Disposition"].startswith("inline") and framed.content == bytes(
        ReportVersion.objects.get(pk=version.pk).html)
    pdf = client.get(reverse("reports:version-file", kwargs={"pk": version.pk, "fmt": "pdf"}))
    assert pdf["Content-Disposition"] == f'attachment; filename="report-{report.pk}-v1.pdf"'
    # a curator reads the same page but gets neither the buttons nor the sign form
    page = _client(users[Role.CURATOR]).get(reverse("reports:report-detail", kwargs={"pk": report.pk})).content
    assert b'id="report-frame"' in page and b'id="sign-form"' not in page and b'id="generate-form"' not in page


def test_signing_on_the_page_needs_the_password_and_the_csrf_token(ready_version, users):
    report, version = ready_version(images=2)
    auditor = users[Role.AUDITOR]
    url = reverse("reports:version-sign", kwargs={"pk": version.pk})
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(auditor)
    assert strict.post(url, {"meaning": "author", "password": "pw-Secret-123"}).status_code == 403
    client = _client(auditor)
    wrong = client.post(url, {"meaning": "author", "password": "nope"})
    assert wrong.status_code == 400 and "wrong password: nothing was signed" in wrong.content.decode()
    assert not ReportSignature.objects.exists()
    signed = client.post(url, {"meaning": "author", "password": "pw-Secret-123"})
    assert signed.status_code == 302
    page = client.get(signed["Location"]).content.decode()
    assert "Signed as author" in page and 'id="signed-already"' in page and 'id="sign-form"' not in page
    assert auditor.username in page and "this version" in page
    refused = _client(users[Role.CURATOR]).post(url, {"meaning": "author", "password": "pw-Secret-123"})
    assert refused.status_code == 403


def test_changing_criteria_on_the_page_after_results_is_flagged(ready_version, users):
    report, _ = ready_version(images=2)
    client = _client(users[Role.AUDITOR])
    url = reverse("reports:report-criteria", kwargs={"pk": report.pk})
    refused = client.post(url, {"criteria": json.dumps(CRITERIA[:1]), "reason": ""})
    assert refused.status_code == 400 and "say why" in refused.content.decode()
    done = client.post(url, {"criteria": json.dumps(CRITERIA[:1]), "reason": "simpler"})
    assert done.status_code == 302
    page = client.get(done["Location"]).content.decode()
    assert "criteria changed after results existed" in page and "simpler" in page
    assert "Acceptance criteria version 2 recorded. Results existed already" in page


def test_the_list_shows_each_reports_latest_version_verdict_and_signatures(ready_version, users):
    from reports.services import report_sign

    report, version = ready_version(images=2)
    report_sign(version=version, user=users[Role.ADMIN], password="pw-Secret-123", meaning="approver")
    html = _client(users[Role.CURATOR]).get(reverse("reports:report-list")).content.decode()
    row = html.split(f'href="/reports/{report.pk}/"')[1].split("</tr>")[0]
    assert "v1" in row and "ready" in row and version.summary["verdict"] in row and '<td class="num">1</td>' in row


def test_the_pages_name_the_release_without_loading_its_heavy_json(users):
    """A release at the paper's scale carries megabytes of JSON (its changelog): the report pages show its
    version and link, and never select those columns."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from releases.models import Release
    from releases.selectors import HEAVY_FIELDS

    release = Release.objects.create(version="3.1.0", created_date="2026-01-01", changes=[
        {"kind": "added", "item_key": f"key-{i}", "from_version": None, "to_version": 1, "reason": "new"}
        for i in range(500)])
    report = Report.objects.create(title="Named release", release=release)
    version = ReportVersion.objects.create(report=report, number=1)
    client = _client(users[Role.CURATOR])
    for url in (reverse("reports:report-list"), reverse("reports:report-detail", kwargs={"pk": report.pk}),
                reverse("reports:version-detail", kwargs={"pk": version.pk})):
        with CaptureQueriesContext(connection) as queries:
            html = client.get(url).content.decode()
        assert f'href="/releases/{release.pk}/"' in html and "3.1.0" in html, url
        loaded = [f for f in HEAVY_FIELDS for q in queries if f'"releases_release"."{f}"' in q["sql"]]
        assert loaded == [], (url, loaded)
