"""Writing to, and verifying, the audit trail."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models, transaction
from django.utils import timezone

from .models import GENESIS_HASH, AuditEvent

SYSTEM_ACTOR = "system"
_PG_LOCK_KEY = 0x4D45_4452_3241  # "MEDR2A": serialises appends to the chain on PostgreSQL


def _jsonable(value: Any) -> Any:
    """Round-trip through JSON so what we hash is exactly what we store."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def canonical_json(payload: dict) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, cls=DjangoJSONEncoder)


def chain_hash(prev_hash: str, canonical: str) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical.encode("utf-8")).hexdigest()


def _payload(event: AuditEvent) -> dict:
    return {
        "seq": event.seq,
        "created_at": event.created_at.isoformat(),
        "actor": event.actor_name,
        "action": event.action,
        "object_type": event.object_type,
        "object_id": event.object_id,
        "before": event.before,
        "after": event.after,
    }


def audit_record(
    *,
    actor,
    action: str,
    target: models.Model | None = None,
    object_type: str = "",
    object_id: str | int = "",
    before: Any = None,
    after: Any = None,
) -> AuditEvent:
    """Append one event. Must run inside the transaction of the change it records, so the
    change and its audit row commit or roll back together."""
    if not connection.in_atomic_block:
        raise RuntimeError("audit_record() must be called inside transaction.atomic() with the change it records")
    if "." not in action:
        raise ValueError(f"audit action must be a dotted name, got {action!r}")
    if target is not None:
        object_type = object_type or target._meta.label_lower
        object_id = object_id or target.pk
    is_user = actor is not None and getattr(actor, "is_authenticated", False)

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_PG_LOCK_KEY])
    last = AuditEvent.objects.order_by("-seq").only("seq", "hash").first()
    event = AuditEvent(
        seq=(last.seq + 1) if last else 1,
        created_at=timezone.now(),
        actor=actor if is_user else None,
        actor_name=actor.get_username() if is_user else SYSTEM_ACTOR,
        action=action,
        object_type=object_type,
        object_id=str(object_id),
        before=_jsonable(before),
        after=_jsonable(after),
        prev_hash=last.hash if last else GENESIS_HASH,
    )
    event.canonical = canonical_json(_payload(event))
    event.hash = chain_hash(event.prev_hash, event.canonical)
    event.save(force_insert=True)
    return event


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    checked: int
    head_hash: str
    first_bad_seq: int | None = None
    reason: str = ""


def audit_verify(*, chunk_size: int = 5000) -> VerifyResult:
    """Walk the chain in order; name the first event whose content, hash, link or sequence
    number does not hold."""
    prev_hash = GENESIS_HASH
    expected_seq = 1
    checked = 0
    with transaction.atomic():
        for event in AuditEvent.objects.order_by("seq").iterator(chunk_size=chunk_size):
            reason = ""
            if event.seq != expected_seq:
                reason = f"sequence gap: expected #{expected_seq}, found #{event.seq} (events deleted?)"
            elif event.prev_hash != prev_hash:
                reason = "prev_hash does not match the previous event's hash (chain broken)"
            elif chain_hash(event.prev_hash, event.canonical) != event.hash:
                reason = "hash does not match the recorded content (canonical text altered)"
            else:
                try:
                    recorded = json.loads(event.canonical)
                except ValueError:
                    recorded = None
                if recorded != _jsonable(_payload(event)):
                    reason = "row fields differ from the hashed record (row altered)"
            if reason:
                return VerifyResult(False, checked, prev_hash, first_bad_seq=event.seq, reason=reason)
            prev_hash = event.hash
            expected_seq += 1
            checked += 1
    return VerifyResult(True, checked, prev_hash)
