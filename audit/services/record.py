"""Writing to the audit trail: one hash-chained event per change, in the change's transaction."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, models
from django.utils import timezone

from ..models import GENESIS_HASH, AuditEvent, AuditEventObject
from ..objects import normalize_objects

SYSTEM_ACTOR = "system"
_PG_LOCK_KEY = 0x4D45_4452_3241  # "MEDR2A": serialises appends to the chain on PostgreSQL


def _jsonable(value: Any) -> Any:
    """Round-trip through JSON so what we hash is exactly what we store."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def canonical_json(payload: dict) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, cls=DjangoJSONEncoder)


def chain_hash(prev_hash: str, canonical: str) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical.encode("utf-8")).hexdigest()


def event_payload(event: AuditEvent, objects: list[list[str]] | None = None) -> dict:
    """What an event's hash covers. `objects` (the normalized touched list) is a key only when the
    event has one: events from before the list existed keep their payload, and so their hash."""
    payload = {
        "seq": event.seq,
        "created_at": event.created_at.isoformat(),
        "actor": event.actor_name,
        "action": event.action,
        "object_type": event.object_type,
        "object_id": event.object_id,
        "before": event.before,
        "after": event.after,
    }
    if objects:
        payload["objects"] = objects
    return payload


def lock_chain() -> None:
    """Serialise appends to the chain (and checkpoints of its head) until the transaction ends."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_PG_LOCK_KEY])


def audit_record(
    *,
    actor,
    action: str,
    target: models.Model | None = None,
    object_type: str = "",
    object_id: str | int = "",
    before: Any = None,
    after: Any = None,
    objects: Iterable[tuple[str, Any]] | None = None,
) -> AuditEvent:
    """Append one event. Must run inside the transaction of the change it records, so the
    change and its audit row commit or roll back together.

    `objects`: every other object the event touched, as `(object_type, object_id)` pairs (a bulk
    approval's items). They enter the hashed payload and the indexed `AuditEventObject` rows, so each
    object's history (`audit_object_history`) finds the event."""
    if not connection.in_atomic_block:
        raise RuntimeError("audit_record() must be called inside transaction.atomic() with the change it records")
    if "." not in action:
        raise ValueError(f"audit action must be a dotted name, got {action!r}")
    touched = normalize_objects(objects)
    if target is not None:
        object_type = object_type or target._meta.label_lower
        object_id = object_id or target.pk
    is_user = actor is not None and getattr(actor, "is_authenticated", False)

    lock_chain()
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
    event.canonical = canonical_json(event_payload(event, touched))
    event.hash = chain_hash(event.prev_hash, event.canonical)
    event.save(force_insert=True)
    if touched:
        _write_objects(event.pk, touched)
    return event


def _write_objects(event_id: int, touched: list[list[str]]) -> None:
    """The event's `AuditEventObject` rows, in the list's order. PostgreSQL: one INSERT of two arrays
    (`unnest`), whatever their length, instead of a model instance and three placeholders per row (timed in
    docs/security.md). Other engines (SQLite, which the demo uses) go through `bulk_create`."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {AuditEventObject._meta.db_table} (event_id, object_type, object_id) "
                "SELECT %s, t, i FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS u(t, i, n) ORDER BY n",
                [event_id, [t for t, _ in touched], [i for _, i in touched]])
        return
    AuditEventObject.objects.bulk_create(
        [AuditEventObject(event_id=event_id, object_type=t, object_id=i) for t, i in touched], batch_size=5000)
