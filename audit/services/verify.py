"""Verifying the audit trail: the hash chain, the touched-object rows, and the signed checkpoints."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction

from common.signing import verify as verify_signature

from ..models import GENESIS_HASH, AuditCheckpoint, AuditEvent, AuditEventObject
from ..objects import legacy_objects, normalize_objects
from .checkpoints import checkpoint_message
from .record import _jsonable, chain_hash, event_payload

TRUNCATED = "the log's tail was truncated"
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


@dataclass(frozen=True)
class CheckpointCheck:
    """One checkpoint and what verification found (`problem` is empty when it holds)."""

    id: int
    seq: int
    head_hash: str
    reason: str
    created_at: datetime
    public_key: str
    problem: str = ""

    @property
    def ok(self) -> bool:
        return not self.problem


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    checked: int
    head_hash: str
    first_bad_seq: int | None = None
    reason: str = ""
    checkpoints: tuple[CheckpointCheck, ...] = field(default=())
    bad_checkpoint: int | None = None   # id of the first checkpoint that does not hold
    chain_ok: bool = True               # the events themselves verify (False: first_bad_seq names the break)

    @property
    def checkpoints_ok(self) -> int:
        return sum(c.ok for c in self.checkpoints)


def _event_problem(event: AuditEvent, listed: list, prev_hash: str, expected_seq: int) -> str:
    if event.seq != expected_seq:
        return f"sequence gap: expected #{expected_seq}, found #{event.seq} (events deleted?)"
    if event.prev_hash != prev_hash:
        return "prev_hash does not match the previous event's hash (chain broken)"
    if chain_hash(event.prev_hash, event.canonical) != event.hash:
        return "hash does not match the recorded content (canonical text altered)"
    try:
        recorded = json.loads(event.canonical)
    except ValueError:
        recorded = None
    rows = normalize_objects(listed)
    if isinstance(recorded, dict) and "objects" not in recorded and rows:
        # written before the hashed list existed: rows may only repeat what `after` names (backfill)
        if rows != legacy_objects(event.action, event.after):
            return "touched-object rows differ from what the hashed record names (rows added)"
        rows = []
    if recorded != _jsonable(event_payload(event, rows)):
        if isinstance(recorded, dict) and recorded.get("objects", []) != rows:
            return "touched-object rows differ from the hashed list (rows added or removed)"
        return "row fields differ from the hashed record (row altered)"
    return ""


def _walk(chunk_size: int, wanted: set[int]) -> tuple[int, str, int | None, str, dict[int, str]]:
    """(events verified, last good hash, first bad seq, why, hashes of the `wanted` seqs seen)."""
    prev_hash, expected_seq, checked, seen = GENESIS_HASH, 1, 0, {}
    rows = (AuditEventObject.objects.order_by("event__seq")
            .values_list("event__seq", "object_type", "object_id").iterator(chunk_size=chunk_size))
    pending = next(rows, None)
    for event in AuditEvent.objects.order_by("seq").iterator(chunk_size=chunk_size):
        listed = []
        while pending is not None and pending[0] <= event.seq:
            if pending[0] == event.seq:
                listed.append(pending[1:])
            pending = next(rows, None)
        problem = _event_problem(event, listed, prev_hash, expected_seq)
        if problem:
            return checked, prev_hash, event.seq, problem, seen
        if event.seq in wanted:
            seen[event.seq] = event.hash
        prev_hash = event.hash
        expected_seq += 1
        checked += 1
    return checked, prev_hash, None, "", seen


def _checkpoint_problem(cp: AuditCheckpoint, *, head_seq: int, broken_at: int | None, seen: dict[int, str],
                        public_key: str | None) -> str:
    if public_key and cp.public_key.lower() != public_key.strip().lower():
        return f"signed by key {cp.public_key[:16]}…, not the expected key {public_key.strip()[:16]}…"
    if not verify_signature(cp.public_key, cp.message.encode("utf-8"), cp.signature):
        return "signature does not verify (checkpoint forged or altered)"
    expected = checkpoint_message(seq=cp.seq, head_hash=cp.head_hash, created_at=cp.created_at, reason=cp.reason)
    if cp.message != expected:
        return "row fields differ from the signed message (row altered)"
    if broken_at is not None and cp.seq >= broken_at:
        return f"not checked: the chain is broken at event #{broken_at}, before the checkpoint's event #{cp.seq}"
    if cp.seq > head_seq:
        return (f"{TRUNCATED}: checkpoint #{cp.id} at event #{cp.seq} "
                f"but the chain ends at #{head_seq}")
    if seen.get(cp.seq) != cp.head_hash:
        return (f"event #{cp.seq} has hash {str(seen.get(cp.seq))[:16]}…, the checkpoint signed {cp.head_hash[:16]}… "
                "(the chain was rewritten after the checkpoint)")
    return ""


def audit_verify(*, chunk_size: int = 5000, public_key: str | None = None) -> VerifyResult:
    """Walk the chain in order and name the first event whose content, hash, link, sequence number or
    touched-object rows do not hold; then check every checkpoint (its signature, its message, and that
    the chain still reaches its event with the signed hash). `public_key` (hex): also require every
    checkpoint to be signed by that key."""
    if public_key is not None and not _HEX64.fullmatch(public_key.strip()):
        raise ValidationError({"public_key": ["an Ed25519 public key is 64 hex characters"]})
    with transaction.atomic():
        checkpoints = list(AuditCheckpoint.objects.order_by("seq", "id"))
        checked, head_hash, bad_seq, reason, seen = _walk(chunk_size, {cp.seq for cp in checkpoints})
    head_seq = checked   # seqs run 1..checked without gaps
    checks = tuple(
        CheckpointCheck(cp.id, cp.seq, cp.head_hash, cp.reason, cp.created_at, cp.public_key,
                        _checkpoint_problem(cp, head_seq=head_seq, broken_at=bad_seq, seen=seen,
                                            public_key=public_key))
        for cp in checkpoints)
    first_bad_cp = next((c for c in checks if not c.ok), None)
    if bad_seq is not None:
        return VerifyResult(False, checked, head_hash, first_bad_seq=bad_seq, reason=reason, checkpoints=checks,
                            bad_checkpoint=first_bad_cp.id if first_bad_cp else None, chain_ok=False)
    if first_bad_cp is not None:
        missing = head_seq + 1 if first_bad_cp.seq > head_seq else None
        return VerifyResult(False, checked, head_hash, first_bad_seq=missing,
                            reason=(first_bad_cp.problem if first_bad_cp.problem.startswith(TRUNCATED)
                                    else f"checkpoint #{first_bad_cp.id}: {first_bad_cp.problem}"),
                            checkpoints=checks, bad_checkpoint=first_bad_cp.id)
    return VerifyResult(True, checked, head_hash, checkpoints=checks)
