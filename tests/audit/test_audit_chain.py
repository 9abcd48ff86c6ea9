"""The audit trail: hash chain, verification, tamper detection, database-level append-only."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.utils import DatabaseError

from audit.models import GENESIS_HASH, AuditEvent
from audit.services import audit_record, audit_verify, canonical_json, chain_hash

pytestmark = pytest.mark.django_db


def _append(n: int, actor=None) -> list[AuditEvent]:
    events = []
    for i in range(n):
        with transaction.atomic():
            events.append(audit_record(actor=actor, action="test.event.append", object_type="test.thing",
                                       object_id=i, after={"i": i, "ratio": 0.1 * i, "name": f"élément {i}"}))
    return events


def _tamper(sql: str, params=()) -> None:
    """Bypass the append-only trigger the way an attacker with DBA rights would."""
    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            cur.execute("SET LOCAL session_replication_role = replica")  # superuser: skip ordinary triggers
            cur.execute(sql, params)
            cur.execute("SET LOCAL session_replication_role = origin")
        else:
            cur.execute("DROP TRIGGER IF EXISTS audit_auditevent_no_update")
            cur.execute("DROP TRIGGER IF EXISTS audit_auditevent_no_delete")
            cur.execute(sql, params)


def test_events_are_chained_from_genesis():
    start = AuditEvent.objects.count()
    events = _append(3)
    first = events[0]
    if start == 0:
        assert first.prev_hash == GENESIS_HASH
    for prev, nxt in zip(events, events[1:]):
        assert nxt.prev_hash == prev.hash
        assert nxt.seq == prev.seq + 1
    for e in events:
        assert e.hash == chain_hash(e.prev_hash, e.canonical)


def test_canonical_text_is_reproducible_from_the_stored_row():
    (event,) = _append(1)
    stored = AuditEvent.objects.get(pk=event.pk)
    assert stored.canonical == event.canonical
    assert canonical_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'


def test_verify_passes_on_an_intact_chain():
    _append(5)
    result = audit_verify()
    assert result.ok, result.reason
    assert result.checked == AuditEvent.objects.count()
    assert result.head_hash == AuditEvent.objects.order_by("-seq").first().hash


@pytest.mark.django_db(transaction=True)
def test_record_outside_a_transaction_is_refused():
    with pytest.raises(RuntimeError, match="inside transaction.atomic"):
        audit_record(actor=None, action="test.no.transaction")


def test_audit_row_rolls_back_with_the_change():
    before = AuditEvent.objects.count()
    with pytest.raises(ZeroDivisionError):
        with transaction.atomic():
            audit_record(actor=None, action="test.rolled.back")
            raise ZeroDivisionError
    assert AuditEvent.objects.count() == before


def test_update_is_rejected_by_the_database():
    (event,) = _append(1)
    with pytest.raises(DatabaseError, match="append-only"):
        with transaction.atomic():
            AuditEvent.objects.filter(pk=event.pk).update(action="test.rewritten")
    with pytest.raises(DatabaseError, match="append-only"):
        with transaction.atomic():
            with connection.cursor() as cur:
                cur.execute("UPDATE audit_auditevent SET after = NULL WHERE id = %s", [event.pk])
    assert AuditEvent.objects.get(pk=event.pk).action == "test.event.append"


def test_delete_is_rejected_by_the_database():
    (event,) = _append(1)
    with pytest.raises(DatabaseError, match="append-only"):
        with transaction.atomic():
            AuditEvent.objects.filter(pk=event.pk).delete()
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_tampered_field_is_detected_and_named():
    events = _append(4)
    target = events[2]
    _tamper("UPDATE audit_auditevent SET after = %s WHERE id = %s", ['{"i": 999}', target.pk])
    result = audit_verify()
    assert not result.ok
    assert result.first_bad_seq == target.seq
    assert "altered" in result.reason


def test_rewritten_hash_breaks_the_next_link():
    events = _append(4)
    target = events[1]
    forged = canonical_json({"forged": True})
    _tamper("UPDATE audit_auditevent SET canonical = %s, hash = %s WHERE id = %s",
            [forged, chain_hash(target.prev_hash, forged), target.pk])
    result = audit_verify()
    assert not result.ok
    # the forged event itself no longer matches its fields; at the latest the next link breaks
    assert result.first_bad_seq in (target.seq, events[2].seq)


def test_deleted_event_is_detected_as_a_gap():
    events = _append(4)
    _tamper("DELETE FROM audit_auditevent WHERE id = %s", [events[1].pk])
    result = audit_verify()
    assert not result.ok
    assert result.first_bad_seq == events[2].seq
    assert "gap" in result.reason


def test_verify_audit_command_exit_status_and_message(capsys):
    events = _append(3)
    call_command("verify_audit")
    assert "intact" in capsys.readouterr().out
    _tamper("UPDATE audit_auditevent SET action = %s WHERE id = %s", ["test.forged", events[0].pk])
    with pytest.raises(CommandError, match=rf"BROKEN at event #{events[0].seq}"):
        call_command("verify_audit")
