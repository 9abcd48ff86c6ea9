"""Signed checkpoints of the chain's head: written with the platform key, verified with the chain, and
the one way a cut-off tail shows."""
from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from django.db.utils import DatabaseError
from django.urls import reverse

from accounts.roles import Role
from audit.models import AuditCheckpoint, AuditEvent
from audit.services import CHECKPOINT_ACTION, audit_checkpoint, audit_record, audit_verify
from common.signing import generate_signing_key, load_signing_key, public_key_hex, verify
from tests.audit.conftest import client_for, tamper

pytestmark = pytest.mark.django_db


@pytest.fixture
def platform_key(settings) -> str:
    settings.MEDR2_SIGNING_KEY = generate_signing_key()
    return public_key_hex(load_signing_key(settings.MEDR2_SIGNING_KEY))


def _append(n: int) -> list[AuditEvent]:
    events = []
    for i in range(n):
        with transaction.atomic():
            events.append(audit_record(actor=None, action="test.event.append", object_type="test.thing", object_id=i))
    return events


def test_a_checkpoint_signs_the_head_including_its_own_event(platform_key, curator):
    _append(3)
    checkpoint = audit_checkpoint(reason="release med-r2 1.0.0", actor=curator)
    head = AuditEvent.objects.order_by("-seq").first()
    assert (head.action, head.actor_name, head.after) == (
        CHECKPOINT_ACTION, curator.username, {"reason": "release med-r2 1.0.0", "public_key": platform_key})
    assert (checkpoint.seq, checkpoint.head_hash) == (head.seq, head.hash)
    assert checkpoint.public_key == platform_key
    message = json.loads(checkpoint.message)
    assert message == {"kind": "medr2.audit.checkpoint", "seq": head.seq, "head_hash": head.hash,
                       "created_at": checkpoint.created_at.isoformat(), "reason": "release med-r2 1.0.0"}
    assert verify(platform_key, checkpoint.message.encode(), checkpoint.signature)
    result = audit_verify()
    assert result.ok, result.reason
    assert [c.id for c in result.checkpoints] == [checkpoint.pk] and result.checkpoints[0].ok


def test_without_the_platform_key_a_checkpoint_is_refused(settings):
    settings.MEDR2_SIGNING_KEY = ""
    with pytest.raises(ValidationError, match="MEDR2_SIGNING_KEY"):
        audit_checkpoint(reason="report 3 v1", actor=None)
    settings.MEDR2_SIGNING_KEY = "not-a-key-but-secret"
    with pytest.raises(ValidationError) as caught:
        audit_checkpoint(reason="report 3 v1", actor=None)
    assert "MEDR2_SIGNING_KEY" in str(caught.value) and "not-a-key-but-secret" not in str(caught.value)
    assert not AuditCheckpoint.objects.exists()
    assert not AuditEvent.objects.filter(action=CHECKPOINT_ACTION).exists()


def test_a_checkpoint_needs_a_reason(platform_key):
    with pytest.raises(ValidationError, match="reason"):
        audit_checkpoint(reason="  ", actor=None)


def test_a_tampered_signature_fails(platform_key):
    checkpoint = audit_checkpoint(reason="report 3 v1", actor=None)
    forged = ("0" if checkpoint.signature[0] != "0" else "1") + checkpoint.signature[1:]
    tamper("UPDATE audit_auditcheckpoint SET signature = %s WHERE id = %s", [forged, checkpoint.pk])
    result = audit_verify()
    assert not result.ok and result.chain_ok
    assert result.bad_checkpoint == checkpoint.pk
    assert "signature does not verify" in result.reason


def test_an_altered_checkpoint_row_fails(platform_key):
    checkpoint = audit_checkpoint(reason="report 3 v1", actor=None)
    tamper("UPDATE audit_auditcheckpoint SET reason = %s WHERE id = %s", ["report 4 v1", checkpoint.pk])
    result = audit_verify()
    assert not result.ok and "row altered" in result.reason


def test_a_checkpoint_forged_with_another_key_fails_only_against_the_published_key(platform_key, settings):
    audit_checkpoint(reason="release 1.0.0", actor=None)
    settings.MEDR2_SIGNING_KEY = generate_signing_key()            # an attacker's own key
    audit_checkpoint(reason="release 1.0.1", actor=None)
    assert audit_verify().ok                                          # each signature holds for its own key
    result = audit_verify(public_key=platform_key)
    assert not result.ok and "not the expected key" in result.reason
    with pytest.raises(ValidationError, match="64 hex"):
        audit_verify(public_key="abc")


def test_truncating_the_tail_is_detected_only_thanks_to_the_checkpoint(platform_key):
    events = _append(5)
    checkpoint = audit_checkpoint(reason="release med-r2 1.0.0", actor=None)
    _append(2)
    # an attacker with database rights removes everything from the checkpoint's event on
    tamper("DELETE FROM audit_auditevent WHERE seq >= %s", [checkpoint.seq])
    result = audit_verify()
    assert result.chain_ok and result.checked == events[-1].seq   # the shorter chain itself verifies
    assert not result.ok
    assert result.reason == (f"the log's tail was truncated: checkpoint #{checkpoint.pk} at event "
                             f"#{checkpoint.seq} but the chain ends at #{events[-1].seq}")
    assert result.first_bad_seq == events[-1].seq + 1
    # without the checkpoint nothing would show it
    tamper("DELETE FROM audit_auditcheckpoint WHERE id = %s", [checkpoint.pk])
    assert audit_verify().ok


def test_a_rewritten_chain_after_the_checkpoint_is_detected(platform_key):
    _append(2)
    checkpoint = audit_checkpoint(reason="report 1 v1", actor=None)
    tamper("UPDATE audit_auditevent SET hash = %s WHERE seq = %s", ["f" * 64, checkpoint.seq])
    result = audit_verify()
    assert not result.ok and not result.chain_ok   # the chain's own check already names the event
    assert result.first_bad_seq == checkpoint.seq
    assert result.checkpoints[0].problem.startswith("not checked: the chain is broken")


def test_checkpoints_are_append_only(platform_key):
    checkpoint = audit_checkpoint(reason="report 1 v1", actor=None)
    with pytest.raises(DatabaseError, match="append-only"):
        with transaction.atomic():
            AuditCheckpoint.objects.filter(pk=checkpoint.pk).update(reason="other")
    with pytest.raises(DatabaseError, match="append-only"):
        with transaction.atomic():
            AuditCheckpoint.objects.filter(pk=checkpoint.pk).delete()


def test_the_commands_write_and_check_checkpoints(platform_key, capsys, settings):
    call_command("audit_checkpoint", "--reason", "board review 2026-Q4")
    out = capsys.readouterr().out
    checkpoint = AuditCheckpoint.objects.get()
    assert f"checkpoint #{checkpoint.pk} at event #{checkpoint.seq}" in out
    call_command("verify_audit", "--public-key", platform_key)
    out = capsys.readouterr().out
    assert "intact" in out and "1 signed checkpoint(s) hold" in out and "board review 2026-Q4" in out
    with pytest.raises(CommandError, match="not the expected key"):
        call_command("verify_audit", "--public-key", "ab" * 32)
    tamper("DELETE FROM audit_auditevent WHERE seq >= %s", [checkpoint.seq])
    with pytest.raises(CommandError, match="the log's tail was truncated"):
        call_command("verify_audit")
    settings.MEDR2_SIGNING_KEY = ""
    with pytest.raises(CommandError, match="MEDR2_SIGNING_KEY"):
        call_command("audit_checkpoint", "--reason", "x")
    call_command("audit_checkpoint", "--generate-key")
    assert len(load_signing_key(capsys.readouterr().out.strip())) == 32


def test_the_verify_page_and_api_show_the_checkpoints(platform_key, users):
    checkpoint = audit_checkpoint(reason="release med-r2 1.0.0", actor=None)
    auditor = client_for(users[Role.AUDITOR])
    html = auditor.get(reverse("audit:verify")).content.decode()
    assert "release med-r2 1.0.0" in html and f"#{checkpoint.seq}" in html and "holds" in html
    body = auditor.get(reverse("audit:api-verify")).json()
    assert body["ok"] and body["checkpoints"][0]["seq"] == checkpoint.seq
    assert body["checkpoints"][0]["public_key"] == platform_key and body["checkpoints"][0]["ok"]
    bad = auditor.get(reverse("audit:api-verify"), {"public_key": "xyz"})
    assert bad.status_code == 400 and "public_key" in bad.json()["fields"]
    tamper("DELETE FROM audit_auditevent WHERE seq >= %s", [checkpoint.seq])
    html = auditor.get(reverse("audit:verify")).content.decode()
    assert "the log&#x27;s tail was truncated" in html
    assert not auditor.get(reverse("audit:api-verify")).json()["ok"]
