"""A report from request to stored version: create it (runs, release, the requester's texts, criteria),
change its acceptance criteria (a new version of them, flagged when results already existed), generate a
version (a row, a signed audit checkpoint, a task for a worker) and build it there (document → HTML → PDF,
progress on the row; a failure marks the version failed with its reason, never leaves it generating)."""
from __future__ import annotations

import hashlib
from collections.abc import Callable

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.models import AuditCheckpoint
from audit.services import audit_checkpoint, audit_record, platform_signing_key
from common.dispatch import send_after_commit
from common.errors import Conflict

from .. import selectors
from ..criteria import normalise_criteria
from ..document import canonical_json, document_hash, report_document
from ..models import AcceptanceCriteria, BuildStatus, Report, ReportVersion
from ..render import render_html, render_pdf

BUILD_STEPS = ("document", "html", "pdf")   # progress: done of len(BUILD_STEPS)
MAX_TITLE = Report._meta.get_field("title").max_length


def _user(actor):
    return actor if getattr(actor, "is_authenticated", False) else None


def _criteria_sha256(rules: list[dict]) -> str:
    return hashlib.sha256(canonical_json(rules)).hexdigest()


@transaction.atomic
def report_create(*, actor, title: str, runs, release=None, scope: str = "", out_of_scope: str = "",
                  limitations: str = "", criteria=None, reason: str = "") -> Report:
    """A report of these evaluation runs (scored or not yet: criteria written before the results are the
    point), evaluated on `release` if named. `criteria` (reports.criteria), if given, become version 1."""
    title = " ".join(str(title or "").split())
    runs = sorted(runs, key=lambda r: r.pk)
    errors = {}
    if not title:
        errors["title"] = ["a report needs a title"]
    elif len(title) > MAX_TITLE:
        errors["title"] = [f"at most {MAX_TITLE} characters"]
    if not runs:
        errors["runs"] = ["choose at least one evaluation run"]
    if errors:
        raise ValidationError(errors)
    rules = normalise_criteria(criteria) if criteria not in (None, "") else None
    report = Report.objects.create(title=title, scope=scope.strip(), out_of_scope=out_of_scope.strip(),
                                   limitations=limitations.strip(), release=release, created_by=_user(actor))
    report.runs.set(runs)
    touched = [("workers.evaluationrun", r.pk) for r in runs]
    if release is not None:
        touched.append(("releases.release", release.pk))
    audit_record(actor=actor, action="reports.report.create", target=report, objects=touched,
                 after={"title": title, "runs": [r.pk for r in runs],
                        "release": release.version if release is not None else None, "scope": report.scope,
                        "out_of_scope": report.out_of_scope, "limitations": report.limitations})
    if rules:
        criteria_set(report=report, actor=actor, criteria=rules, reason=reason or "set when the report was created")
    return report


@transaction.atomic
def criteria_set(*, report: Report, actor, criteria, reason: str = "") -> AcceptanceCriteria:
    """Record a new version of the report's acceptance criteria. The first needs no reason; a change does.
    A version recorded while results exist (a scored run of the report, a generated version) is stored
    with that evidence, and every report version judged by it shows "criteria … after results existed"."""
    rules = normalise_criteria(criteria)
    report = Report.objects.select_for_update().get(pk=report.pk)   # one numbering at a time
    current = selectors.criteria_current(report=report)
    digest = _criteria_sha256(rules)
    reason = reason.strip()
    if current is not None and current.sha256 == digest:
        raise ValidationError({"criteria": [f"unchanged: these are the criteria of version {current.number}"]})
    if current is not None and not reason:
        raise ValidationError({"reason": ["say why the acceptance criteria change"]})
    evidence = selectors.results_evidence(report=report)
    row = AcceptanceCriteria.objects.create(
        report=report, number=current.number + 1 if current else 1, criteria=rules, sha256=digest, reason=reason,
        after_results=bool(evidence), results_evidence=evidence, created_by=_user(actor))
    audit_record(actor=actor, action="reports.criteria.set", target=row, objects=[("reports.report", report.pk)],
                 before=({"number": current.number, "sha256": current.sha256, "criteria": current.criteria}
                         if current else None),
                 after={"report": report.pk, "number": row.number, "sha256": digest, "criteria": rules,
                        "reason": reason, "after_results": row.after_results, "evidence": evidence})
    return row


def _checkpoint_entry(cp: AuditCheckpoint | None) -> dict | None:
    if cp is None:
        return None
    return {"id": cp.pk, "seq": cp.seq, "head_hash": cp.head_hash, "reason": cp.reason,
            "created_at": cp.created_at.isoformat(), "public_key": cp.public_key, "signature": cp.signature}


def _history(report: Report, upto: AcceptanceCriteria | None) -> list[dict]:
    """The criteria versions up to the one judged, as the document shows them (roles, not names)."""
    if upto is None:
        return []
    return [{"number": c.number, "sha256": c.sha256, "n_criteria": len(c.criteria),
             "recorded_at": c.created_at.isoformat(), "reason": c.reason, "after_results": c.after_results,
             "evidence": c.results_evidence}
            for c in selectors.criteria_list(report=report) if c.number <= upto.number]


def report_generate(*, report: Report, actor, queue: bool = True) -> ReportVersion:
    """A new version of the report: its row (status generating), a signed audit checkpoint of the chain's
    head for it (`report <id> v<n>`), and, after commit, the build on a worker (`queue=False`: the caller
    builds it, e.g. a command). Refused: a run not scored yet; a version still generating; no platform
    signing key (MEDR2_SIGNING_KEY)."""
    from ..tasks import report_version_build_task  # lazy: tasks.py imports the services (a real cycle)

    platform_signing_key()   # refuse at once, with the setting's name, before anything is written
    with transaction.atomic():
        report = Report.objects.select_for_update().get(pk=report.pk)
        runs = list(report.runs.order_by("pk").only("pk", "status", "scored_at"))
        unscored = [r.pk for r in runs if r.scored_at is None]
        if unscored:
            raise ValidationError(f"runs {', '.join(map(str, unscored))} are not scored yet: generate the report "
                                  "once every run is scored")
        busy = ReportVersion.objects.filter(report=report, status=BuildStatus.GENERATING).order_by("number").first()
        if busy is not None:
            raise Conflict(f"version {busy.number} is being generated: wait for it, or queue it again from its page")
        last = ReportVersion.objects.filter(report=report).order_by("-number").values_list("number", flat=True).first()
        criteria = selectors.criteria_current(report=report)
        version = ReportVersion.objects.create(
            report=report, number=(last or 0) + 1, criteria=criteria, created_by=_user(actor),
            progress={"step": "queued", "done": 0, "total": len(BUILD_STEPS)})
        audit_record(actor=actor, action="reports.version.generate", target=version,
                     objects=[("reports.report", report.pk)],
                     after={"report": report.pk, "number": version.number, "runs": [r.pk for r in runs],
                            "criteria": criteria.number if criteria else None})
        version.checkpoint = audit_checkpoint(reason=f"report {report.pk} v{version.number}", actor=actor)
        ReportVersion.objects.filter(pk=version.pk).update(checkpoint=version.checkpoint)
        if queue:
            send_after_commit(report_version_build_task, version.pk, getattr(_user(actor), "pk", None))
    return version


def report_version_requeue(*, version: ReportVersion, actor) -> None:
    """Send a version's build again (the broker was down, or the worker vanished for good)."""
    from ..tasks import report_version_build_task

    if version.status != BuildStatus.GENERATING:
        raise Conflict(f"version {version.number} is {version.status}: it never changes; generate a new version")
    with transaction.atomic():
        ReportVersion.objects.filter(pk=version.pk, status=BuildStatus.GENERATING).update(
            progress={"step": "queued", "done": 0, "total": len(BUILD_STEPS)})
        audit_record(actor=actor, action="reports.version.requeue", target=version,
                     after={"report": version.report_id, "number": version.number})
        send_after_commit(report_version_build_task, version.pk, getattr(_user(actor), "pk", None))


def _fail(version: ReportVersion, actor, reason: str) -> None:
    with transaction.atomic():
        updated = ReportVersion.objects.filter(pk=version.pk, status=BuildStatus.GENERATING).update(
            status=BuildStatus.FAILED, error=reason[:4000])
        if updated:
            audit_record(actor=actor, action="reports.version.failed", target=version,
                         after={"report": version.report_id, "number": version.number, "error": reason[:4000]})


def report_version_build(*, version_id: int, actor=None,
                         progress: Callable[[str, int, int], None] | None = None) -> ReportVersion | None:
    """Build a generating version: the document of every number, its HTML and its PDF, written to the row
    in one step with their SHA-256 (it is then `ready` and never changes). Quiet for a version that is gone
    or no longer generating (a second delivery of the task). Any failure marks the version failed with its
    reason (audited); a ValidationError (bad input) is not raised again, anything else is."""
    version = ReportVersion.objects.select_related("report", "report__release", "criteria", "checkpoint").defer(
        *selectors.VERSION_FILES).filter(pk=version_id).first()
    if version is None or version.status != BuildStatus.GENERATING:
        return version
    total = len(BUILD_STEPS)

    def step(name: str, done: int) -> None:
        ReportVersion.objects.filter(pk=version.pk, status=BuildStatus.GENERATING).update(
            progress={"step": name, "done": done, "total": total})
        if progress:
            progress(name, done, total)

    report = version.report
    try:
        step("document", 0)
        document = report_document(
            runs=selectors.report_runs(report=report), release=report.release, scope=report.scope,
            out_of_scope=report.out_of_scope, limitations=report.limitations,
            criteria=version.criteria.criteria if version.criteria else None,
            report={"id": report.pk, "version": version.number, "title": report.title},
            checkpoint=_checkpoint_entry(version.checkpoint), criteria_history=_history(report, version.criteria))
        step("html", 1)
        html = render_html(document).encode("utf-8")
        step("pdf", 2)
        pdf = render_pdf(document, html=html.decode("utf-8"))
    except Exception as exc:
        reason = "; ".join(exc.messages) if isinstance(exc, ValidationError) else f"{type(exc).__name__}: {exc}"
        _fail(version, actor, reason)
        if not isinstance(exc, ValidationError):
            raise
        return ReportVersion.objects.defer(*selectors.VERSION_FILES).get(pk=version.pk)
    data = canonical_json(document)
    digest = document_hash(document)
    with transaction.atomic():
        row = ReportVersion.objects.select_for_update().defer(*selectors.VERSION_FILES).get(pk=version.pk)
        if row.status != BuildStatus.GENERATING:   # another delivery finished it first
            return row
        row.document_json, row.html, row.pdf = data, html, pdf
        row.json_sha256 = hashlib.sha256(data).hexdigest()
        row.html_sha256 = hashlib.sha256(html).hexdigest()
        row.pdf_sha256 = hashlib.sha256(pdf).hexdigest()
        row.document_hash = digest
        acceptance = document["sections"]["acceptance"]["summary"]
        row.summary = {"models": [m["label"] for m in document["models"]], "verdict": acceptance["verdict"],
                       "acceptance": acceptance, "bytes": {"json": len(data), "html": len(html), "pdf": len(pdf)},
                       "limitations": len(document["sections"]["limitations"]["generated"])}
        row.status, row.ready_at, row.error = BuildStatus.READY, timezone.now(), ""
        row.progress = {"step": "done", "done": total, "total": total}
        row.save()
        audit_record(actor=actor, action="reports.version.ready", target=row,
                     after={"report": report.pk, "number": row.number, "document_hash": digest,
                            "json_sha256": row.json_sha256, "html_sha256": row.html_sha256,
                            "pdf_sha256": row.pdf_sha256, "verdict": acceptance["verdict"]})
    if progress:
        progress("done", total, total)
    return row
