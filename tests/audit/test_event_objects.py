"""Bulk events name every object they touched: hashed in the chain, indexed for each object's history."""
from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps
from django.db import transaction
from django.db.utils import DatabaseError
from django.urls import reverse

from accounts.roles import Role
from annotation.services.qa import qa_items_review
from audit.filters import EventFilters
from audit.models import AuditEvent, AuditEventObject
from audit.objects import legacy_objects, normalize_objects
from audit.selectors import audit_event_list, audit_object_history
from audit.services import audit_record, audit_verify, canonical_json, chain_hash
from tests.audit.conftest import client_for, tamper

pytestmark = pytest.mark.django_db


def _record(**kwargs) -> AuditEvent:
    with transaction.atomic():
        return audit_record(actor=None, **kwargs)


def test_the_touched_list_is_hashed_and_indexed():
    event = _record(action="test.bulk.touch", objects=[("test.thing", 10), ("test.thing", 9), ("other.kind", "a")])
    recorded = json.loads(event.canonical)
    assert recorded["objects"] == [["other.kind", "a"], ["test.thing", "9"], ["test.thing", "10"]]
    assert event.hash == chain_hash(event.prev_hash, event.canonical)
    rows = AuditEventObject.objects.filter(event=event).order_by("id").values_list("object_type", "object_id")
    assert list(rows) == [("other.kind", "a"), ("test.thing", "9"), ("test.thing", "10")]
    assert audit_verify().ok


def test_a_large_list_with_awkward_ids_is_stored_whole_and_in_order():
    """Thousands of objects (a generation batch's items) in one statement: ids that array literals quote
    (commas, braces, quotes, backslashes, the word NULL, spaces, non-ASCII) arrive as given, in the list's order."""
    awkward = ["a,b", "{x}", 'q"uote', "back\\slash", "NULL", "null", " padded ", "ümlaut", "x" * 64, "'"]
    pairs = [("annotation.qaitem", i) for i in range(2500, 0, -1)] + [("test.awkward", v) for v in awkward]
    event = _record(action="test.bulk.large", objects=pairs)
    expected = [tuple(p) for p in normalize_objects(pairs)]
    rows = AuditEventObject.objects.filter(event=event).order_by("id").values_list("object_type", "object_id")
    assert list(rows) == expected and len(expected) == 2510
    assert [tuple(p) for p in json.loads(event.canonical)["objects"]] == expected
    assert audit_verify().ok


def test_an_event_without_objects_hashes_exactly_as_before():
    event = _record(action="test.single.touch", object_type="test.thing", object_id=4, after={"x": 1})
    old_payload = {"seq": event.seq, "created_at": event.created_at.isoformat(), "actor": "system",
                   "action": "test.single.touch", "object_type": "test.thing", "object_id": "4", "before": None,
                   "after": {"x": 1}}
    assert event.canonical == canonical_json(old_payload)   # no "objects" key: old events still verify
    assert not AuditEventObject.objects.filter(event=event).exists()
    assert _record(action="test.empty.list", objects=[]).canonical.find('"objects"') == -1


def test_the_list_is_normalized_and_refuses_bad_pairs():
    assert normalize_objects([("a.b", 2), ("a.b", "2"), ("a.b", 10), ("a.a", "z")]) == \
        [["a.a", "z"], ["a.b", "2"], ["a.b", "10"]]
    for bad in ([("nodot", 1)], [("a.b", "")], [("a.b", "x" * 65)], [("a.b",)], [3]):
        with pytest.raises(ValueError):
            normalize_objects(bad)


def test_an_added_object_row_is_detected():
    event = _record(action="test.bulk.touch", objects=[("test.thing", 1)])
    AuditEventObject.objects.create(event=event, object_type="test.thing", object_id="2")   # inserts are allowed
    result = audit_verify()
    assert not result.ok and result.first_bad_seq == event.seq
    assert "touched-object rows" in result.reason


def test_an_object_row_added_to_an_event_without_a_list_is_detected():
    event = _record(action="test.single.touch", object_type="test.thing", object_id=1)
    AuditEventObject.objects.create(event=event, object_type="annotation.qaitem", object_id="3")
    result = audit_verify()
    assert not result.ok and result.first_bad_seq == event.seq and "rows added" in result.reason


def test_a_removed_object_row_is_detected():
    event = _record(action="test.bulk.touch", objects=[("test.thing", 1), ("test.thing", 2)])
    tamper("DELETE FROM audit_auditeventobject WHERE event_id = %s AND object_id = '2'", [event.pk])
    result = audit_verify()
    assert not result.ok and result.first_bad_seq == event.seq and "touched-object rows" in result.reason


def test_object_rows_are_append_only():
    event = _record(action="test.bulk.touch", objects=[("test.thing", 1)])
    row = AuditEventObject.objects.get(event=event)
    with pytest.raises(DatabaseError, match="append-only"):
        with transaction.atomic():
            AuditEventObject.objects.filter(pk=row.pk).update(object_id="7")
    with pytest.raises(DatabaseError, match="append-only"):
        with transaction.atomic():
            AuditEventObject.objects.filter(pk=row.pk).delete()


def test_old_bulk_events_are_backfilled_from_after_and_still_verify():
    """An event from before the list (its after names item_ids) gets rows from the data migration;
    verification accepts exactly those rows and no others."""
    old = _record(action="annotation.qa_item.review", object_type="annotation.qaitem",
                  before={"status": {"3": "draft", "5": "draft"}},
                  after={"status": "approved", "item_ids": [3, 5], "note": ""})
    assert "objects" not in json.loads(old.canonical)
    migration = importlib.import_module("audit.migrations.0005_backfill_event_objects")
    migration.backfill(apps, None)
    migration.backfill(apps, None)   # idempotent
    assert sorted(AuditEventObject.objects.filter(event=old).values_list("object_id", flat=True)) == ["3", "5"]
    assert audit_verify().ok
    assert list(audit_object_history("annotation.qaitem", "5")) == [old]
    AuditEventObject.objects.create(event=old, object_type="annotation.qaitem", object_id="9")
    assert not audit_verify().ok


def test_legacy_lists_are_read_only_for_the_known_bulk_actions():
    assert legacy_objects("annotation.image.assign", {"image_ids": [4, 2]}) == \
        [["annotation.image", "2"], ["annotation.image", "4"]]
    assert legacy_objects("annotation.qa_item.review", {"status": "approved", "case": 3}) == []
    assert legacy_objects("annotation.chain.generate_batch", {"chain_ids": [1, 9]}) == []   # a range, not a list
    assert legacy_objects("annotation.qa_item.review", None) == []


def test_a_bulk_approval_is_in_the_history_of_each_item_it_approved(items, curator, users):
    """Who approved item 5? The bulk approval of [3, 5, 9] (here: the 1st, 3rd and 5th item) answers."""
    approved = [items[0], items[2], items[4]]
    assert qa_items_review(item_ids=[i.pk for i in approved], status="approved", actor=curator) == 3
    event = AuditEvent.objects.get(action="annotation.qa_item.review")
    assert event.object_id == "" and event.actor_name == curator.username
    middle, untouched = approved[1], items[1]

    history = list(audit_object_history("annotation.qaitem", str(middle.pk)))
    assert event in history
    assert history[0].action == "annotation.qa_item.review"   # newest first: the approval after the creation
    assert {e.action for e in history} == {"annotation.qa_item.create", "annotation.qa_item.review"}
    assert event not in audit_object_history("annotation.qaitem", str(untouched.pk))

    filters = {"object_type": "annotation.qaitem", "object_id": str(middle.pk)}
    auditor = client_for(users[Role.AUDITOR])
    page = auditor.get(reverse("audit:event-list"), filters)
    assert page.status_code == 200
    assert [e.seq for e in page.context["page"]] == [e.seq for e in history]
    html = page.content.decode()
    assert "3 objects touched" in html and f'href="/items/{middle.pk}/"' in html

    api = auditor.get(reverse("audit:api-event-list"), filters).json()
    assert [r["seq"] for r in api["results"]] == [e.seq for e in history]
    review = api["results"][0]
    assert review["objects"] == [["annotation.qaitem", str(i.pk)] for i in approved]
    assert review["actor"] == curator.username

    other = auditor.get(reverse("audit:api-event-list"), {**filters, "object_id": str(untouched.pk)}).json()
    assert "annotation.qa_item.review" not in {r["action"] for r in other["results"]}
    assert audit_verify().ok


def test_a_type_alone_or_an_id_alone_filters_own_and_listed_objects():
    own = _record(action="test.single.touch", object_type="test.thing", object_id=7)
    listed = _record(action="test.bulk.touch", objects=[("test.thing", 8)])
    _record(action="test.unrelated.touch", object_type="other.kind", object_id=9)
    assert list(audit_event_list(EventFilters(object_type="test.thing"))) == [listed, own]
    assert list(audit_event_list(EventFilters(object_id="8"))) == [listed]


def test_image_assignment_names_each_image(curator, users):
    from annotation.services.images import BytesSource, image_assign, images_import
    from tests.conftest import png_bytes

    images = list(images_import(sources=[BytesSource(f"{n}.png", png_bytes(color=n + 20)) for n in range(3)],
                                actor=curator).images.all())
    image_assign(images=images, user=users[Role.ANNOTATOR], actor=curator)
    event = AuditEvent.objects.get(action="annotation.image.assign")
    assert sorted(int(i) for i in event.touched.values_list("object_id", flat=True)) == sorted(i.pk for i in images)
    assert event in audit_object_history("annotation.image", str(images[1].pk))
    assert audit_verify().ok
