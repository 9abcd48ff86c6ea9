"""Electronic signatures: made with the password re-entered, bound to the version's content hash and PDF,
audited; a wrong password, a version not ready and a second signature are refused and audited (and
repeated refusals throttled); the signed copy shows the signature on the PDF's sign-off page."""
from __future__ import annotations

import io

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from pypdf import PdfReader

from accounts.roles import Role
from audit.models import AuditEvent
from common.errors import Conflict
from reports.models import BuildStatus, ReportSignature, ReportSignedCopy
from reports.services import MAX_REFUSALS, TooManyAttempts, report_generate, report_sign, signed_copy_build

pytestmark = pytest.mark.django_db
PASSWORD = "pw-Secret-123"


def test_a_signature_records_who_when_and_what_bound_to_the_content_hash(ready_version, users, report_sent,
                                                                        django_capture_on_commit_callbacks):
    report, version = ready_version(images=2)
    auditor = users[Role.AUDITOR]
    auditor.first_name, auditor.last_name = "Ada", "Byron"
    auditor.save()
    with django_capture_on_commit_callbacks(execute=True):
        signature = report_sign(version=version, user=auditor, password=PASSWORD, meaning="approver")
    assert (signature.signer_name, signature.signer_role, signature.meaning) == ("Ada Byron", "auditor", "approver")
    assert signature.statement.startswith("I approve the model for the intended use")
    assert (signature.document_hash, signature.pdf_sha256) == (version.document_hash, version.pdf_sha256)
    event = AuditEvent.objects.get(action="reports.signature.create")
    assert event.actor_id == auditor.pk and event.object_id == str(signature.pk)
    assert (event.after["document_hash"], event.after["meaning"]) == (version.document_hash, "approver")
    copy = ReportSignedCopy.objects.get()
    assert copy.signatures == [signature.pk] and ("reports.build_signed_copy", (copy.pk,)) in report_sent


def test_a_wrong_password_is_refused_audited_and_signs_nothing(ready_version, users):
    _, version = ready_version(images=2)
    auditor = users[Role.AUDITOR]
    with pytest.raises(ValidationError) as refused:
        report_sign(version=version, user=auditor, password="not-my-password", meaning="author")
    assert refused.value.message_dict == {"password": ["wrong password: nothing was signed"]}
    assert not ReportSignature.objects.exists() and not ReportSignedCopy.objects.exists()
    event = AuditEvent.objects.get(action="reports.signature.refused")
    assert event.actor_id == auditor.pk and event.object_id == str(version.pk)
    assert event.after == {"report": version.report_id, "number": 1, "meaning": "author", "reason": "wrong password"}


def test_repeated_refusals_are_throttled(ready_version, users):
    _, version = ready_version(images=2)
    auditor = users[Role.AUDITOR]
    for _ in range(MAX_REFUSALS):
        with pytest.raises(ValidationError):
            report_sign(version=version, user=auditor, password="guess", meaning="author")
    with pytest.raises(TooManyAttempts, match="try again later"):
        report_sign(version=version, user=auditor, password=PASSWORD, meaning="author")   # even the right one
    assert not ReportSignature.objects.exists()
    reasons = list(AuditEvent.objects.filter(action="reports.signature.refused").order_by("seq")
                   .values_list("after__reason", flat=True))
    assert reasons == ["wrong password"] * MAX_REFUSALS + ["too many refusals"]
    # another board member is not affected
    assert report_sign(version=version, user=users[Role.ADMIN], password=PASSWORD, meaning="reviewer")


def test_only_a_ready_version_is_signed_once_per_person_and_only_by_the_board(ready_version, scored_run, users,
                                                                              report_sent):
    report, version = ready_version(images=2)
    auditor, admin = users[Role.AUDITOR], users[Role.ADMIN]
    report_sign(version=version, user=auditor, password=PASSWORD, meaning="author")
    with pytest.raises(Conflict, match="signed version 1 already"):
        report_sign(version=version, user=auditor, password=PASSWORD, meaning="approver")
    generating = report_generate(report=report, actor=auditor)
    with pytest.raises(Conflict, match="only a ready version"):
        report_sign(version=generating, user=admin, password=PASSWORD, meaning="approver")
    for role in (Role.CURATOR, Role.ADJUDICATOR):
        with pytest.raises(PermissionDenied):
            report_sign(version=version, user=users[role], password=PASSWORD, meaning="reviewer")
    with pytest.raises(ValidationError, match="choose one of"):
        report_sign(version=version, user=admin, password=PASSWORD, meaning="witness")
    assert list(AuditEvent.objects.filter(action="reports.signature.refused").order_by("seq")
                .values_list("after__reason", flat=True)) == ["signed already", "version generating"]
    assert generating.status == BuildStatus.GENERATING and version.signatures.count() == 1


def test_the_signed_copy_shows_each_signature_on_the_sign_off_page(ready_version, users):
    _, version = ready_version(images=2)
    report_sign(version=version, user=users[Role.AUDITOR], password=PASSWORD, meaning="author")
    report_sign(version=version, user=users[Role.ADMIN], password=PASSWORD, meaning="approver")
    copies = list(ReportSignedCopy.objects.order_by("pk"))
    assert [len(c.signatures) for c in copies] == [1, 2]
    latest = signed_copy_build(copy_id=copies[-1].pk)
    assert latest.status == BuildStatus.READY and latest.document_hash == version.document_hash
    pdf = bytes(ReportSignedCopy.objects.get(pk=latest.pk).pdf)
    sign_off = PdfReader(io.BytesIO(pdf)).pages[-1].extract_text()
    for user, meaning in ((users[Role.AUDITOR], "author"), (users[Role.ADMIN], "approver")):
        assert user.username in sign_off and meaning in sign_off
    assert "(not signed)" in sign_off          # the reviewer line is still open
    assert signed_copy_build(copy_id=latest.pk).pdf_sha256 == latest.pdf_sha256   # a second delivery is quiet
