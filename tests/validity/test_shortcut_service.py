"""Service writes, audit events, verdicts on the items, bad input, the command and the task."""
from __future__ import annotations

import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.roles import Role
from annotation.models import QAItem
from audit.models import AuditEvent
from validity.models import ShortcutAudit, ShortcutAuditItem
from validity.services import shortcut_audit_create, shortcut_audit_execute, shortcut_audit_run
from validity.shortcuts import BIT

pytestmark = pytest.mark.django_db
FAST = {"n_boot": 200}


def test_run_writes_the_audit_items_verdicts_and_events(audit_items, users):
    curator = users[Role.CURATOR]
    audit_items(120)
    events_before = AuditEvent.objects.count()
    audit = shortcut_audit_run(filters={}, split="test", actor=curator, params=FAST)
    assert audit.status == "done" and audit.seq == 1 and audit.finished_at is not None
    assert audit.filters == {"status": "approved"} and audit.item_count == 360 and len(audit.digest) == 64
    assert ShortcutAuditItem.objects.filter(audit=audit).count() == 360
    actions = list(AuditEvent.objects.filter(seq__gt=events_before).order_by("seq").values_list("action", flat=True))
    assert actions == ["validity.shortcut_audit.create", "validity.shortcut_audit.finish"]
    finish = AuditEvent.objects.get(action="validity.shortcut_audit.finish")
    assert finish.actor == curator and finish.after["flags"]["margin"] == "red"
    # the planted shortcut: answerable blind, every margin item flagged image_necessary=False
    margin = QAItem.objects.filter(category__code="margin")
    assert set(margin.values_list("image_necessary", flat=True)) == {False}
    rows = ShortcutAuditItem.objects.filter(audit=audit, item__category__code="margin")
    assert all(r.correct_mask & BIT["longest"] for r in rows)
    # balanced shape items mostly need the image; box items are not assessed
    shape = list(QAItem.objects.filter(category__code="shape").values_list("image_necessary", flat=True))
    assert shape.count(True) > 0.5 * len(shape)
    boxes = QAItem.objects.filter(category__code="lesion-grounding")
    assert set(boxes.values_list("image_necessary", flat=True)) == {None}
    cell = next(c for c in audit.results["categories"] if c["key"] == "margin")
    assert cell["label"] == "Margin" and cell["best"]["accuracy"] == 1.0 and cell["flag"] == "red"
    assert cell["options"]["always_gold"][0][0] == "ill-defined with irregular infiltrating border"


def test_the_latest_audit_wins_and_digests_change_with_content(audit_items, users):
    audit_items(80)
    first = shortcut_audit_run(filters={}, split="test", actor=None, params=FAST)
    item = QAItem.objects.filter(category__code="margin").first()
    QAItem.objects.filter(pk=item.pk).update(image_necessary=None, content_hash="0" * 64)
    second = shortcut_audit_run(filters={"category": "margin"}, split="test", actor=None, params=FAST)
    assert second.seq == first.seq + 1 and second.digest != first.digest and second.item_count == 80
    assert QAItem.objects.get(pk=item.pk).image_necessary is False


def test_bad_input_is_refused_and_nothing_is_written(audit_items, users):
    audit_items(10)
    before = (ShortcutAudit.objects.count(), AuditEvent.objects.count())
    cases = [({"status": "draft"}, "test", "no current items match"),
             ({}, "holdout", "unknown split 'holdout'"),
             ({}, "train", "training data"),
             ({"category": "margin,no-such-category"}, "test", "unknown category 'no-such-category'"),
             ({"modality": "PET"}, "test", "unknown modality 'PET'"),
             ({"colour": "red"}, "test", r"unknown filter\(s\): colour")]
    for filters, split, message in cases:
        with pytest.raises(ValidationError, match=message):
            shortcut_audit_create(filters=filters, split=split, actor=users[Role.CURATOR])
    assert (ShortcutAudit.objects.count(), AuditEvent.objects.count()) == before
    assert not QAItem.objects.exclude(image_necessary=None).exists()


def test_execute_is_idempotent_and_a_missing_audit_is_quiet(audit_items):
    audit_items(40)
    audit = shortcut_audit_create(filters={}, split="test", actor=None, params=FAST)
    assert shortcut_audit_execute(audit_id=audit.pk).status == "done"
    n_events = AuditEvent.objects.count()
    assert shortcut_audit_execute(audit_id=audit.pk).status == "done"      # a redelivered task does nothing
    assert AuditEvent.objects.count() == n_events
    assert ShortcutAuditItem.objects.filter(audit=audit).count() == 120
    assert shortcut_audit_execute(audit_id=999999) is None


def test_items_that_vanish_before_the_run_fail_the_audit_with_a_reason(audit_items):
    audit_items(5)
    audit = shortcut_audit_create(filters={}, split="test", actor=None)
    QAItem.objects.update(status="rejected")
    audit = shortcut_audit_execute(audit_id=audit.pk)
    assert audit.status == "failed" and "empty" in audit.error
    assert AuditEvent.objects.filter(action="validity.shortcut_audit.fail").count() == 1
    assert not ShortcutAuditItem.objects.exists()


def test_task_runs_the_audit_by_id(audit_items):
    from validity.tasks import shortcut_audit_task

    audit_items(30)
    audit = shortcut_audit_create(filters={}, split="val", actor=None, params=FAST)
    assert shortcut_audit_task.name == "validity.shortcut_audit"
    assert shortcut_audit_task.acks_late is True
    assert shortcut_audit_task.run(audit.pk) == {"audit_id": audit.pk, "status": "done"}
    assert shortcut_audit_task.run(audit.pk)["status"] == "done"


def test_command_prints_a_summary_and_json(audit_items, users):
    audit_items(60)
    out, err = io.StringIO(), io.StringIO()
    call_command("audit_shortcuts", "--category", "margin,shape", "--n-boot", "100", "--user",
                 users[Role.CURATOR].username, stdout=out, stderr=err)
    text = out.getvalue()
    assert "shortcut audit #1: 120 items" in text and "red" in text and "margin" in text
    assert "shortcut audit" in err.getvalue()     # the tqdm progress bar
    out = io.StringIO()
    call_command("audit_shortcuts", "--json", "--stage", "S3", "--n-boot", "50", stdout=out)
    data = json.loads(out.getvalue())
    assert data["seq"] == 2 and data["counts"]["items"] == 120 and data["params"]["split"] == "test"
    with pytest.raises(CommandError, match="unknown split"):
        call_command("audit_shortcuts", "--split", "holdout", stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError, match="no such user"):
        call_command("audit_shortcuts", "--user", "nobody", stdout=io.StringIO(), stderr=io.StringIO())
    assert ShortcutAudit.objects.count() == 2
