"""The reports API: who may read, create, generate and sign; the flow create → criteria → generate (202,
queued) → version → sign (201; a wrong password 400 with the one error shape) → download; and the schema
documenting every endpoint."""
from __future__ import annotations

import hashlib

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from reports.models import ReportVersion
from reports.services import report_version_build

from .conftest import CRITERIA

pytestmark = pytest.mark.django_db
READERS = {Role.CURATOR, Role.AUDITOR, Role.ADMIN}
BOARD = {Role.AUDITOR, Role.ADMIN}


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_each_role_reads_creates_and_signs_only_what_it_may(ready_version, users):
    report, version = ready_version(images=2)
    run_id = report.runs.get().pk
    reads = [reverse("reports:api-report-list"), reverse("reports:api-report-detail", kwargs={"pk": report.pk}),
             reverse("reports:api-version-detail", kwargs={"pk": version.pk}),
             reverse("reports:api-version-file", kwargs={"pk": version.pk, "fmt": "json"})]
    for n, role in enumerate([*Role, None]):
        client = _client(users[role])
        for url in reads:
            assert client.get(url).status_code == (200 if role in READERS else 403), (role, url)
        created = client.post(reverse("reports:api-report-list"), {"title": f"r{n}", "runs": [run_id]},
                              content_type="application/json")
        assert created.status_code == (201 if role in BOARD else 403), role
        signed = client.post(reverse("reports:api-version-sign", kwargs={"pk": version.pk}),
                             {"meaning": "reviewer", "password": "wrong"}, content_type="application/json")
        assert signed.status_code == (400 if role in BOARD else 403), role
    assert Client().get(reads[0]).status_code in (401, 403)


def test_the_board_creates_generates_signs_and_downloads_through_the_api(scored_run, users, platform_key,
                                                                        report_sent,
                                                                        django_capture_on_commit_callbacks):
    run = scored_run(images=2)
    auditor = _client(users[Role.AUDITOR])
    bad = auditor.post(reverse("reports:api-report-list"), {"title": "x", "runs": [run.pk],
                                                            "criteria": [{"metric": "m", "op": "~"}]},
                       content_type="application/json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid" and "op must be one of" in bad.json()["detail"]
    missing = auditor.post(reverse("reports:api-report-list"), {"title": "x", "runs": [run.pk, 987654]},
                           content_type="application/json")
    assert missing.status_code == 400 and missing.json()["fields"] == {"runs": ["no run with id 987654"]}

    created = auditor.post(reverse("reports:api-report-list"),
                           {"title": "API report", "runs": [run.pk], "criteria": CRITERIA, "scope": "research"},
                           content_type="application/json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert [c["number"] for c in body["criteria"]] == [1] and body["criteria"][0]["after_results"] is True
    assert body["runs"][0]["id"] == run.pk and body["versions"] == []
    pk = body["id"]
    changed = auditor.post(reverse("reports:api-report-criteria", kwargs={"pk": pk}),
                           {"criteria": CRITERIA[:1], "reason": "one is enough"}, content_type="application/json")
    assert changed.status_code == 201 and changed.json()["number"] == 2

    with django_capture_on_commit_callbacks(execute=True):
        queued = auditor.post(reverse("reports:api-report-generate", kwargs={"pk": pk}))
    assert queued.status_code == 202
    version = queued.json()
    assert (version["status"], version["progress"]["step"], version["files"]) == ("generating", "queued", {})
    assert report_sent == [("reports.build_version", (version["id"], users[Role.AUDITOR].pk))]
    again = auditor.post(reverse("reports:api-report-generate", kwargs={"pk": pk}))
    assert again.status_code == 409 and again.json()["code"] == "conflict"
    not_yet = auditor.post(reverse("reports:api-version-sign", kwargs={"pk": version["id"]}),
                           {"meaning": "author", "password": "pw-Secret-123"}, content_type="application/json")
    assert not_yet.status_code == 409

    report_version_build(version_id=version["id"])                      # what the worker does
    detail = auditor.get(reverse("reports:api-version-detail", kwargs={"pk": version["id"]})).json()
    assert detail["status"] == "ready" and detail["criteria"] == 2 and detail["signatures"] == []
    wrong = auditor.post(reverse("reports:api-version-sign", kwargs={"pk": version["id"]}),
                         {"meaning": "author", "password": "nope"}, content_type="application/json")
    assert wrong.status_code == 400
    assert wrong.json() == {"code": "invalid", "detail": "wrong password: nothing was signed",
                            "fields": {"password": ["wrong password: nothing was signed"]}}
    with django_capture_on_commit_callbacks(execute=True):
        signed = auditor.post(reverse("reports:api-version-sign", kwargs={"pk": version["id"]}),
                              {"meaning": "author", "password": "pw-Secret-123"}, content_type="application/json")
    assert signed.status_code == 201
    assert signed.json()["document_hash"] == detail["document_hash"] and "password" not in signed.json()

    row = ReportVersion.objects.get(pk=version["id"])
    for fmt, field, content_type in (("pdf", "pdf", "application/pdf"), ("json", "document_json", "application/json"),
                                     ("html", "html", "text/html; charset=utf-8")):
        response = auditor.get(detail["files"][fmt], HTTP_ACCEPT="*/*")
        assert response.status_code == 200 and response["Content-Type"] == content_type
        assert hashlib.sha256(response.content).hexdigest() == getattr(row, f"{fmt}_sha256")
        assert response.content == bytes(getattr(row, field))
    none_yet = auditor.get(reverse("reports:api-version-file", kwargs={"pk": row.pk, "fmt": "signed-pdf"}))
    assert none_yet.status_code == 404 and none_yet.json()["code"] == "not_found"   # the copy is not rendered yet


def test_the_schema_documents_every_reports_endpoint(users):
    schema = _client(users[Role.AUDITOR]).get(reverse("api-schema"), HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    for path, methods in {"/api/reports/": {"get", "post"}, "/api/reports/{id}/": {"get"},
                          "/api/reports/{id}/criteria/": {"post"}, "/api/reports/{id}/generate/": {"post"},
                          "/api/report-versions/{id}/": {"get"}, "/api/report-versions/{id}/sign/": {"post"},
                          "/api/report-versions/{id}/files/{fmt}/": {"get"}}.items():
        assert methods <= set(paths[path]), path
    sign = paths["/api/report-versions/{id}/sign/"]["post"]
    body = sign["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(schema["components"]["schemas"][body]["required"]) == {"meaning", "password"}
    assert "application/pdf" in paths["/api/report-versions/{id}/files/{fmt}/"]["get"]["responses"]["200"]["content"]
