"""Does a PDF or JSON file match a stored report version, and do that version's signatures hold?
(`manage.py report_verify`; docs/reports.md, "Verifying a file"). Reads only.

A file is matched by its SHA-256 against the stored versions' PDF, JSON and HTML and the signed copies.
Then the matched version is checked: it is ready; its stored files still have their recorded SHA-256; its
JSON's SHA-256 is its document hash; every signature is bound to that document hash and PDF SHA-256 and
agrees with its own audit event (the hash chain protects what was signed); its audit checkpoint's Ed25519
signature verifies and is the one its document names. A signed copy must list only signatures of its
version, rendered over the same document hash."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from common.signing import verify as signature_valid

from .. import selectors
from ..formatting import fmt_time
from ..models import BuildStatus, ReportSignedCopy, ReportVersion

PDF_ID = re.compile(rb"/ID\s*\[\s*\(([0-9a-f]{64})\)")   # WeasyPrint's file identifier: the document hash


@dataclass
class FileCheck:
    ok: bool
    sha256: str
    matches: list[str] = field(default_factory=list)     # what the file is
    problems: list[str] = field(default_factory=list)    # why it does not verify
    notes: list[str] = field(default_factory=list)       # the signatures found, the checkpoint


def _sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _name(v: ReportVersion) -> str:
    return f"report {v.report_id} version {v.number} (version id {v.pk})"


def _claimed(data: bytes) -> str:
    """Which stored version an unknown file says it is (the JSON's report entry, the PDF's identifier)."""
    version = None
    try:
        claimed = (json.loads(data.decode("utf-8")) or {}).get("report") or {}
        version = selectors.version_find(report_id=int(claimed["id"]), number=int(claimed["version"]))
    except (ValueError, TypeError, KeyError, AttributeError):
        found = PDF_ID.search(data[-4096:])   # in the cross-reference stream at the end
        if found:
            version = selectors.version_find(document_hash=found[1].decode("ascii"))
    if version is None:
        return ""
    return f"; it claims to be {_name(version)}, whose stored files differ: it was changed after it was stored"


def _version_problems(v: ReportVersion, notes: list[str]) -> list[str]:
    problems = []
    if v.status != BuildStatus.READY:
        return [f"{_name(v)} is {v.status}, not ready"]
    stored = {f: selectors.version_file(pk=v.pk, field=f) for f in selectors.VERSION_FILES}
    for f, label, recorded in (("document_json", "JSON", v.json_sha256), ("html", "HTML", v.html_sha256),
                               ("pdf", "PDF", v.pdf_sha256)):
        if _sha(stored[f]) != recorded:
            problems.append(f"{_name(v)}: the stored {label} no longer has its recorded SHA-256 {recorded}")
    if v.json_sha256 != v.document_hash:
        problems.append(f"{_name(v)}: its document hash {v.document_hash} is not its JSON's SHA-256 {v.json_sha256}")
    signatures = list(selectors.signature_list(version=v))
    events = selectors.signature_events(signature_ids=[s.pk for s in signatures])
    for s in signatures:
        who = f"signature {s.pk} ({s.meaning}, {s.signer_name})"
        if s.document_hash != v.document_hash:
            problems.append(f"{who} is bound to document hash {s.document_hash}, not this version's {v.document_hash}")
        if s.pdf_sha256 != v.pdf_sha256:
            problems.append(f"{who} is bound to PDF SHA-256 {s.pdf_sha256}, not this version's {v.pdf_sha256}")
        event = events.get(str(s.pk))
        if event is None:
            problems.append(f"{who} has no reports.signature.create event in the audit trail")
        elif any(event.get(k) != getattr(s, k) for k in ("document_hash", "pdf_sha256", "meaning", "signer_name")):
            problems.append(f"{who} differs from its audit event, which recorded document hash "
                            f"{event.get('document_hash')} and meaning {event.get('meaning')}")
    notes.append(f"{_name(v)}: {len(signatures)} signature(s)" + "".join(
        f"\n  {s.meaning}: {s.signer_name} ({s.signer_role}), {fmt_time(s.signed_at.isoformat())}" for s in signatures))
    cp = v.checkpoint
    if cp is None:
        problems.append(f"{_name(v)} has no audit checkpoint")
    else:
        named = ((json.loads(stored["document_json"] or b"{}").get("sections") or {}).get("logging") or {}).get(
            "report_checkpoint") or {}
        if not signature_valid(cp.public_key, cp.message.encode("utf-8"), cp.signature):
            problems.append(f"{_name(v)}: the Ed25519 signature of its audit checkpoint {cp.pk} does not verify")
        elif named.get("head_hash") != cp.head_hash or named.get("seq") != cp.seq:
            problems.append(f"{_name(v)}: its document names another audit checkpoint than the one stored")
        else:
            notes.append(f"audit checkpoint {cp.pk} ({cp.reason}): head #{cp.seq} {cp.head_hash}, signature valid "
                         f"(public key {cp.public_key})")
    return problems


def _copy_problems(c: ReportSignedCopy, v: ReportVersion) -> list[str]:
    problems = []
    if c.document_hash != v.document_hash:
        problems.append(f"signed copy {c.pk} was rendered over document hash {c.document_hash}, not {_name(v)}'s "
                        f"{v.document_hash}")
    own = {s.pk for s in selectors.signature_list(version=v)}
    strangers = sorted(set(c.signatures) - own)
    if strangers:
        problems.append(f"signed copy {c.pk} shows signatures {strangers} that are not signatures of {_name(v)}")
    return problems


def report_file_verify(*, data: bytes, version_id: int | None = None) -> FileCheck:
    """Check a file (`data`: its bytes) against the stored versions, or against version `version_id` only."""
    sha = _sha(data)
    versions, copies = selectors.files_with_sha256(sha256=sha)
    if version_id is not None:
        target = selectors.version_find(pk=version_id)
        if target is None:
            return FileCheck(False, sha, problems=[f"no report version with id {version_id}"])
        versions = [(k, v) for k, v in versions if v.pk == version_id]
        copies = [c for c in copies if c.version_id == version_id]
        if not versions and not copies:
            return FileCheck(False, sha, problems=[
                f"not a file of {_name(target)}, or changed: its SHA-256 {sha} is neither that version's PDF "
                f"({target.pdf_sha256 or 'none'}) nor its JSON ({target.json_sha256 or 'none'}) nor a signed copy's"])
    elif not versions and not copies:
        return FileCheck(False, sha, problems=[
            f"unknown file: its SHA-256 {sha} matches no stored report version or signed copy{_claimed(data)}"])
    check = FileCheck(True, sha)
    for kind, v in versions:
        check.matches.append(f"the {kind.upper()} of {_name(v)}")
        check.problems += _version_problems(selectors.version_find(pk=v.pk), check.notes)
    for c in copies:
        v = selectors.version_find(pk=c.version_id)
        check.matches.append(f"signed copy {c.pk} of {_name(v)}, showing {len(c.signatures)} signature(s)")
        check.problems += _copy_problems(c, v) + _version_problems(v, check.notes)
    check.problems = list(dict.fromkeys(check.problems))
    check.ok = not check.problems
    return check
