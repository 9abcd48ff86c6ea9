"""Electronic signatures of a report version, and the signed copy of its PDF.

A signature is made by the signed-in user re-entering their password. It records the signer's name and
roles as they are at that moment, the time, the meaning (author, reviewer, approver) and the statement
signed, bound to the version's document hash and PDF SHA-256. It is never edited (the database refuses),
and a new version of the report carries none of them. Every refusal (wrong password, a version not
ready, a second signature of the same person) is audited; after MAX_REFUSALS refusals in REFUSAL_WINDOW
the user may not try again until the window has passed.

After each signature a worker renders the version again with its sign-off page filled in (a
`ReportSignedCopy`): the PDF a board files. The version's own files never change."""
from __future__ import annotations

import hashlib
import json
from datetime import timedelta

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.roles import Capability, user_can, user_roles
from audit.services import audit_record
from common.dispatch import send_after_commit
from common.errors import Conflict, ServiceError

from .. import selectors
from ..document import SIGN_OFF_MEANINGS
from ..formatting import fmt_time
from ..models import BuildStatus, Meaning, ReportSignature, ReportSignedCopy, ReportVersion
from ..render import render_pdf

MAX_REFUSALS = 5
REFUSAL_WINDOW = timedelta(minutes=15)
STATEMENTS = dict(SIGN_OFF_MEANINGS)


class TooManyAttempts(ServiceError):
    code = "throttled"
    status_code = 429


def signer_role(user) -> str:
    return ", ".join(sorted(r.value for r in user_roles(user))) or "no role"


def _refusal(user, version: ReportVersion, password: str) -> tuple[Exception, str] | None:
    """(the error to raise, the reason to audit), or None when the signature may be made."""
    since = timezone.now() - REFUSAL_WINDOW
    if selectors.signature_refusals_since(user=user, since=since) >= MAX_REFUSALS:
        minutes = int(REFUSAL_WINDOW.total_seconds() // 60)
        return (TooManyAttempts(f"{MAX_REFUSALS} refused signatures in {minutes} minutes: try again later"),
                "too many refusals")
    if not user.has_usable_password() or not user.check_password(password or ""):
        return (ValidationError({"password": ["wrong password: nothing was signed"]}), "wrong password")
    if version.status != BuildStatus.READY:
        return (Conflict(f"version {version.number} is {version.status}: only a ready version can be signed"),
                f"version {version.status}")
    earlier = ReportSignature.objects.filter(version=version, signer=user).first()
    if earlier is not None:
        return (Conflict(f"you signed version {version.number} already (as {earlier.meaning}): one signature per "
                         "person per version"), "signed already")
    return None


def report_sign(*, version: ReportVersion, user, password: str, meaning: str) -> ReportSignature:
    """Sign a ready version as `user` (who re-enters their password) with this meaning."""
    if not user_can(user, Capability.SIGN_REPORTS):
        raise PermissionDenied("signing reports is not part of your role")
    if meaning not in Meaning.values:
        raise ValidationError({"meaning": [f"choose one of {', '.join(Meaning.values)}"]})
    refusal = None
    with transaction.atomic():
        version = ReportVersion.objects.select_for_update().defer(*selectors.VERSION_FILES).get(pk=version.pk)
        refusal = _refusal(user, version, password)
        if refusal is not None:
            # committed with the refusal, which is raised only after the transaction
            audit_record(actor=user, action="reports.signature.refused", target=version,
                         after={"report": version.report_id, "number": version.number, "meaning": meaning,
                                "reason": refusal[1]})
        else:
            signature = ReportSignature.objects.create(
                version=version, signer=user, signer_name=user.get_full_name().strip() or user.get_username(),
                signer_role=signer_role(user), meaning=meaning, statement=STATEMENTS[meaning],
                signed_at=timezone.now(), document_hash=version.document_hash, pdf_sha256=version.pdf_sha256)
            audit_record(actor=user, action="reports.signature.create", target=signature,
                         objects=[("reports.reportversion", version.pk), ("reports.report", version.report_id)],
                         after={"report": version.report_id, "version": version.pk, "number": version.number,
                                "meaning": meaning, "signer_name": signature.signer_name,
                                "signer_role": signature.signer_role, "signed_at": signature.signed_at.isoformat(),
                                "document_hash": signature.document_hash, "pdf_sha256": signature.pdf_sha256})
            _signed_copy_later(version)
    if refusal is not None:
        raise refusal[0]
    return signature


def _signed_copy_later(version: ReportVersion) -> ReportSignedCopy:
    from ..tasks import signed_copy_build_task  # lazy: tasks.py imports the services

    ids = sorted(ReportSignature.objects.filter(version=version).values_list("pk", flat=True))
    copy = ReportSignedCopy.objects.create(version=version, signatures=ids, document_hash=version.document_hash)
    send_after_commit(signed_copy_build_task, copy.pk)
    return copy


def signature_entry(signature: ReportSignature) -> dict:
    """A signature as the sign-off page shows it."""
    return {"meaning": signature.meaning, "name": signature.signer_name, "role": signature.signer_role,
            "signed_at": fmt_time(signature.signed_at.isoformat())}


def signed_copy_build(*, copy_id: int) -> ReportSignedCopy | None:
    """Render the version's stored document with the copy's signatures on its sign-off page. Quiet when the
    copy is gone or built; a failure marks it failed (audited) and is raised."""
    copy = ReportSignedCopy.objects.defer("pdf").filter(pk=copy_id).first()
    if copy is None or copy.status != BuildStatus.GENERATING:
        return copy
    try:
        document = json.loads(selectors.version_file(pk=copy.version_id, field="document_json"))
        signatures = ReportSignature.objects.filter(pk__in=copy.signatures).order_by("signed_at", "id")
        pdf = render_pdf(document, signatures=[signature_entry(s) for s in signatures])
    except Exception as exc:
        with transaction.atomic():
            if ReportSignedCopy.objects.filter(pk=copy.pk, status=BuildStatus.GENERATING).update(
                    status=BuildStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:4000]):
                audit_record(actor=None, action="reports.signed_copy.failed", target=copy,
                             after={"version": copy.version_id, "error": f"{type(exc).__name__}: {exc}"[:4000]})
        raise
    with transaction.atomic():
        row = ReportSignedCopy.objects.select_for_update().defer("pdf").get(pk=copy.pk)
        if row.status != BuildStatus.GENERATING:
            return row
        row.pdf, row.pdf_sha256 = pdf, hashlib.sha256(pdf).hexdigest()
        row.status, row.ready_at = BuildStatus.READY, timezone.now()
        row.save()
        audit_record(actor=None, action="reports.signed_copy.ready", target=row,
                     after={"version": row.version_id, "signatures": row.signatures, "pdf_sha256": row.pdf_sha256,
                            "document_hash": row.document_hash})
    return row
