"""An auditor makes, generates and signs a model report in Debian chromium: the list, the form, the report
page while the version is generated (its progress line updates live and the page reloads itself when the
version is ready), the rendered report in its frame, the downloads, and signing with the password
re-entered (a wrong one refused first). Screenshots land in $MEDR2_SCREENSHOT_DIR."""
from __future__ import annotations

import hashlib
import json

import pytest

from accounts.roles import Role
from reports.models import Report, ReportSignedCopy, ReportVersion
from reports.services import report_version_build, signed_copy_build

from ..e2e.test_pages_in_chromium import SCREENSHOTS, _login, browser  # noqa: F401  (fixture)
from .conftest import CRITERIA

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_auditor_creates_generates_and_signs_a_report(browser, live_server, users, scored_run,  # noqa: F811
                                                      platform_key, report_sent):
    run = scored_run(images=2)
    auditor = users[Role.AUDITOR]
    auditor.first_name, auditor.last_name = "Grace", "Hopper"
    auditor.save()
    page = browser.new_page(viewport={"width": 1360, "height": 1000})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    _login(page, live_server.url, auditor.username)

    page.click("header nav >> text=Reports")
    assert page.locator("h1").inner_text().startswith("Model reports")
    assert "No reports yet" in page.locator("#report-table").inner_text()
    page.click("#new-report")
    page.fill("#id_title", "Chest phantom triage: board review")
    page.select_option("#id_runs", [str(run.pk)])
    page.fill("#id_scope", "Research use: triage support on phantom CT.")
    page.fill("#id_criteria", json.dumps(CRITERIA))
    page.click("#report-form button[type=submit]")

    page.wait_for_selector("#report-facts")
    report = Report.objects.get()
    assert page.url.endswith(f"/reports/{report.pk}/")
    assert "criteria set after results existed" in page.locator("#criteria-history").inner_text()
    page.click("#generate-form button[type=submit]")
    page.wait_for_selector("#version-progress")
    version = ReportVersion.objects.get()
    assert report_sent == [("reports.build_version", (version.pk, auditor.pk))]   # queued for a worker
    assert page.locator("#version-progress-text").inner_text() == "queued: 0 / 3"
    ReportVersion.objects.filter(pk=version.pk).update(progress={"step": "pdf", "done": 2, "total": 3})
    page.wait_for_function("() => document.getElementById('version-progress-text')"
                           ".textContent.startsWith('pdf: 2 / 3')",
                           timeout=6000)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "report_generating.png"), full_page=True)

    report_version_build(version_id=version.pk, actor=auditor)             # what the worker does
    page.wait_for_selector("#report-frame", timeout=8000)                  # the page reloaded by itself
    version.refresh_from_db()
    assert page.locator("#document-hash").inner_text() == version.document_hash
    frame = page.frame_locator("#report-frame")
    frame.locator("#section-signoff").wait_for()
    assert frame.locator("h2").first.inner_text() == "1. Scope and intended use"
    assert "Research use: triage support on phantom CT." in frame.locator("#section-scope").inner_text()
    pdf = page.request.get(live_server.url + page.locator("#download-pdf").get_attribute("href"))
    assert hashlib.sha256(pdf.body()).hexdigest() == version.pdf_sha256

    page.check("#sign-form input[name=meaning][value=reviewer]")
    page.fill("#id_password", "not-my-password")
    page.click("#sign-form button[type=submit]")
    assert "wrong password: nothing was signed" in page.locator("#sign-form").inner_text()
    page.check("#sign-form input[name=meaning][value=reviewer]")
    page.fill("#id_password", "pw-Secret-123")
    page.click("#sign-form button[type=submit]")
    page.wait_for_selector("#signed-already")
    assert "Signed as reviewer" in page.locator(".msg.success").inner_text()
    row = page.locator("#signature-table tbody tr").first.inner_text()
    assert "reviewer" in row and "Grace Hopper" in row and "auditor" in row and "this version" in row
    assert page.locator("#signed-pending").count() == 1                    # the signed PDF is rendered next

    signed_copy_build(copy_id=ReportSignedCopy.objects.get().pk)          # what the worker does
    page.reload()
    assert page.locator("#download-signed").inner_text() == "Signed PDF (1 signature)"
    signed = page.request.get(live_server.url + page.locator("#download-signed").get_attribute("href"))
    assert signed.status == 200 and signed.body().startswith(b"%PDF-")
    assert hashlib.sha256(signed.body()).hexdigest() == ReportSignedCopy.objects.get().pdf_sha256
    page.screenshot(path=str(SCREENSHOTS / "report_signed.png"), full_page=True)
    page.click("header nav >> text=Reports")
    assert page.locator("#report-table tbody tr td.num").first.inner_text() == "1"
    assert errors == []
