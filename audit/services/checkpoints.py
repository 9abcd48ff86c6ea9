"""Checkpoints: the chain's head signed with the platform's Ed25519 key (setting MEDR2_SIGNING_KEY).

The hash chain shows an edited or removed event in the middle, but not a cut-off tail: the shorter
chain still verifies. A checkpoint records the head (sequence number and hash) at a moment that
matters (a report, a release) and signs it; `audit_verify` then reports a checkpoint naming an event
the chain no longer reaches as a truncated tail.

Writing a checkpoint first appends an `audit.checkpoint.create` event (who asked, why, with which
public key), then signs the head *including that event*: a checkpoint's `seq` and `head_hash` are those
of its own `audit.checkpoint.create` event, so the chain up to and including it is covered.
"""
from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from common.signing import SigningKeyError, load_signing_key, public_key_hex, sign

from ..models import AuditCheckpoint
from .record import audit_record, canonical_json, lock_chain

CHECKPOINT_ACTION = "audit.checkpoint.create"
MESSAGE_KIND = "medr2.audit.checkpoint"   # domain separation: a checkpoint signature signs nothing else
MAX_REASON = 200


def checkpoint_message(*, seq: int, head_hash: str, created_at: datetime, reason: str) -> str:
    """The exact text a checkpoint signs (canonical JSON, UTF-8)."""
    return canonical_json({"kind": MESSAGE_KIND, "seq": seq, "head_hash": head_hash,
                           "created_at": created_at.isoformat(), "reason": reason})


def platform_signing_key() -> bytes:
    """The platform's Ed25519 private key, from the environment (never stored)."""
    text = getattr(settings, "MEDR2_SIGNING_KEY", "") or ""
    if not text.strip():
        raise ValidationError("no platform signing key: set MEDR2_SIGNING_KEY (an Ed25519 private key, "
                              "e.g. from `manage.py audit_checkpoint --generate-key`) to write audit checkpoints")
    try:
        return load_signing_key(text)
    except SigningKeyError as exc:
        raise ValidationError(f"MEDR2_SIGNING_KEY: {exc}") from exc


def audit_checkpoint(*, reason: str, actor) -> AuditCheckpoint:
    """Sign the chain's head now. Refuses (ValidationError) without a reason or without MEDR2_SIGNING_KEY."""
    reason = " ".join(str(reason or "").split())
    if not reason:
        raise ValidationError({"reason": ['a checkpoint needs a reason, e.g. "release med-r2 1.0.0"']})
    if len(reason) > MAX_REASON:
        raise ValidationError({"reason": [f"at most {MAX_REASON} characters"]})
    key = platform_signing_key()
    public = public_key_hex(key)
    with transaction.atomic():
        lock_chain()   # the head cannot move between our event and our signature
        event = audit_record(actor=actor, action=CHECKPOINT_ACTION, after={"reason": reason, "public_key": public})
        message = checkpoint_message(seq=event.seq, head_hash=event.hash, created_at=event.created_at, reason=reason)
        return AuditCheckpoint.objects.create(
            seq=event.seq, head_hash=event.hash, reason=reason, created_at=event.created_at, message=message,
            signature=sign(key, message.encode("utf-8")), public_key=public)
