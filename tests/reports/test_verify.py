"""`manage.py report_verify`: the stored PDF, JSON and signed PDF verify; a tampered PDF, a file of another
version, and a version whose row was changed behind its signatures' back (by someone with database rights
who bypasses the triggers) do not, each with the reason named."""
from __future__ import annotations

import hashlib
import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from accounts.roles import Role
from reports.models import ReportSignedCopy, ReportVersion
from reports.services import report_generate, report_sign, report_version_build, signed_copy_build

pytestmark = pytest.mark.django_db
PASSWORD = "pw-Secret-123"


def tamper(sql: str, params=()) -> None:
    """Change rows the triggers protect, as a database superuser can (ordinary triggers skipped)."""
    with connection.cursor() as cur:
        cur.execute("SET LOCAL session_replication_role = replica")
        cur.execute(sql, params)
        cur.execute("SET LOCAL session_replication_role = origin")


def verify(path, *extra) -> tuple[bool, str]:
    out = io.StringIO()
    try:
        call_command("report_verify", str(path), *extra, stdout=out)
    except CommandError as exc:
        return False, out.getvalue() + str(exc)
    return True, out.getvalue()


@pytest.fixture
def signed(ready_version, users, tmp_path):
    """A ready version signed by an auditor (author) and an admin (approver), its files written out."""
    report, version = ready_version(images=2)
    report_sign(version=version, user=users[Role.AUDITOR], password=PASSWORD, meaning="author")
    report_sign(version=version, user=users[Role.ADMIN], password=PASSWORD, meaning="approver")
    copy = signed_copy_build(copy_id=ReportSignedCopy.objects.order_by("-pk").first().pk)
    row = ReportVersion.objects.get(pk=version.pk)
    files = {"pdf": bytes(row.pdf), "json": bytes(row.document_json), "signed": bytes(copy.pdf)}
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / f"{name}.bin"
        paths[name].write_bytes(data)
    return report, row, paths


def test_the_stored_pdf_json_and_signed_pdf_verify(signed):
    report, version, paths = signed
    for name in ("pdf", "json", "signed"):
        ok, out = verify(paths[name], "--version", str(version.pk))
        assert ok, out
        assert "report file verifies" in out and "2 signature(s)" in out and "signature valid" in out
    ok, out = verify(paths["pdf"])                                  # found by its hash alone
    assert ok and f"the PDF of report {report.pk} version 1 (version id {version.pk})" in out
    assert "author: " in out and "approver: " in out


def test_a_tampered_pdf_fails_and_says_which_version_it_claims_to_be(signed):
    report, version, paths = signed
    data = bytearray(paths["pdf"].read_bytes())
    data[len(data) // 2] ^= 0x01                                    # one bit in the middle of the file
    paths["pdf"].write_bytes(bytes(data))
    ok, out = verify(paths["pdf"])
    assert not ok
    assert f"unknown file: its SHA-256 {hashlib.sha256(bytes(data)).hexdigest()} matches no stored" in out
    assert f"claims to be report {report.pk} version 1 (version id {version.pk})" in out
    ok, out = verify(paths["pdf"], "--version", str(version.pk))
    assert not ok and f"is neither that version's PDF ({version.pdf_sha256})" in out


def test_a_file_of_another_version_and_an_unknown_version_id_fail(signed, users, tmp_path):
    report, version, paths = signed
    second = report_version_build(version_id=report_generate(report=report, actor=users[Role.AUDITOR]).pk)
    ok, out = verify(paths["pdf"], "--version", str(second.pk))
    assert not ok and f"not a file of report {report.pk} version 2" in out
    ok, out = verify(paths["pdf"], "--version", "999999")
    assert not ok and "no report version with id 999999" in out
    edited = paths["json"].read_bytes().replace(b'"title":"Board report"', b'"title":"Board report!"', 1)
    (tmp_path / "edited.json").write_bytes(edited)
    ok, out = verify(tmp_path / "edited.json")
    assert not ok and f"claims to be report {report.pk} version 1" in out


def test_a_signature_bound_to_another_hash_fails_after_the_version_row_was_changed(signed):
    report, version, paths = signed
    forged = "f" * 64
    tamper("UPDATE reports_reportversion SET document_hash = %s, json_sha256 = %s WHERE id = %s",
           [forged, forged, version.pk])
    ok, out = verify(paths["pdf"])
    assert not ok
    assert f"is bound to document hash {version.document_hash}, not this version's {forged}" in out
    assert "author" in out and "approver" in out


def test_a_forged_pdf_swapped_into_the_row_is_caught_by_its_signatures(signed, tmp_path):
    """Someone with database rights replaces the stored PDF and its recorded hash consistently: the file
    matches the row, but not what was signed (nor the signature's audit event)."""
    report, version, paths = signed
    forged = paths["pdf"].read_bytes() + b"% forged\n"
    tamper("UPDATE reports_reportversion SET pdf = %s, pdf_sha256 = %s WHERE id = %s",
           [forged, hashlib.sha256(forged).hexdigest(), version.pk])
    (tmp_path / "forged.pdf").write_bytes(forged)
    ok, out = verify(tmp_path / "forged.pdf")
    assert not ok and f"is bound to PDF SHA-256 {version.pdf_sha256}, not this version's" in out
    tamper("UPDATE reports_reportsignature SET pdf_sha256 = %s WHERE version_id = %s",
           [hashlib.sha256(forged).hexdigest(), version.pk])
    ok, out = verify(tmp_path / "forged.pdf")
    assert not ok and "differs from its audit event" in out


def test_an_unreadable_path_fails(tmp_path):
    ok, out = verify(tmp_path / "missing.pdf")
    assert not ok and "cannot read" in out
