"""The audit trail for auditors: filters (and their refusals), hidden bookkeeping, links to objects,
full field-level changes — on the page and in the API."""
from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from accounts.roles import Role
from audit.filters import BOOKKEEPING_ACTIONS, EventFilters, parse_event_filters
from audit.links import object_link, register_object_link, registered_object_types, unregister_object_link
from audit.services import audit_record
from tests.audit.conftest import client_for

pytestmark = pytest.mark.django_db


def _record(actor=None, **kwargs):
    with transaction.atomic():
        return audit_record(actor=actor, **kwargs)


@pytest.fixture
def auditor(users):
    return client_for(users[Role.AUDITOR])


def _seqs(response) -> list[int]:
    if "results" in (data := response.json()):
        return [r["seq"] for r in data["results"]]
    raise AssertionError(data)


# ------------------------------------------------------------------ parsing

def test_filters_parse_and_round_trip_to_query_parameters():
    f = parse_event_filters({"action": " annotation.qa_item ", "actor": "ann", "date_from": "2026-01-02",
                             "date_to": "2026-01-31", "seq_from": "5", "seq_to": "9", "bookkeeping": "1",
                             "object_type": "annotation.qaitem", "object_id": "3"})
    assert f == EventFilters(action="annotation.qa_item", actor="ann", object_type="annotation.qaitem",
                             object_id="3", date_from=dt.date(2026, 1, 2), date_to=dt.date(2026, 1, 31),
                             seq_from=5, seq_to=9, bookkeeping=True)
    assert parse_event_filters(f.as_query()) == f
    assert parse_event_filters({}) == EventFilters()


@pytest.mark.parametrize("params,field,words", [
    ({"date_from": "2026-13-01"}, "date_from", "not a date"),
    ({"date_to": "yesterday"}, "date_to", "YYYY-MM-DD"),
    ({"date_from": "20260101"}, "date_from", "not a date"),
    ({"seq_from": "abc"}, "seq_from", "not an event number"),
    ({"seq_to": "-3"}, "seq_to", "not an event number"),
    ({"seq_to": "٣"}, "seq_to", "not an event number"),          # a non-ASCII digit
    ({"bookkeeping": "maybe"}, "bookkeeping", "yes/no"),
    ({"date_from": "2026-02-01", "date_to": "2026-01-01"}, "date_to", "before the start date"),
    ({"seq_from": "9", "seq_to": "3"}, "seq_to", "comes before"),
    ({"action": "a" * 101}, "action", "at most 100"),
])
def test_bad_filter_values_are_refused_by_name(params, field, words):
    with pytest.raises(ValidationError) as caught:
        parse_event_filters(params)
    assert field in caught.value.message_dict
    assert words in " ".join(caught.value.message_dict[field])


@pytest.mark.parametrize("params,field", [({"date_from": "2026-1-1"}, "date_from"), ({"seq_from": "x1"}, "seq_from"),
                                          ({"seq_to": "99999999999999999999999"}, "seq_to")])
def test_bad_filters_give_a_message_on_the_page_and_400_in_the_api(auditor, params, field):
    page = auditor.get(reverse("audit:event-list"), params)
    assert page.status_code == 400
    html = page.content.decode()
    assert "These filters cannot be used" in html and field in html
    assert f'value="{list(params.values())[0]}"' in html   # what was typed stays in the form
    api = auditor.get(reverse("audit:api-event-list"), params)
    assert api.status_code == 400
    body = api.json()
    assert body["code"] == "invalid" and field in body["fields"] and body["detail"]


# ------------------------------------------------------------------ filtering

def test_date_range_is_inclusive_utc_days(auditor):
    event = _record(action="test.dated.event")
    today = timezone.now().astimezone(dt.UTC).date()
    day = dt.timedelta(days=1)
    url = reverse("audit:api-event-list")
    assert event.seq in _seqs(auditor.get(url, {"date_from": today, "date_to": today}))
    assert event.seq in _seqs(auditor.get(url, {"date_to": today}))
    assert event.seq not in _seqs(auditor.get(url, {"date_to": today - day}))
    assert event.seq not in _seqs(auditor.get(url, {"date_from": today + day}))


def test_actor_action_and_sequence_filters(auditor, users):
    curator = users[Role.CURATOR]
    a = _record(actor=curator, action="test.alpha.one")
    b = _record(action="test.alpha.two")
    c = _record(action="test.beta.one")
    url = reverse("audit:api-event-list")
    assert _seqs(auditor.get(url, {"action": "test.alpha"})) == [b.seq, a.seq]
    assert _seqs(auditor.get(url, {"actor": curator.username, "action": "test."})) == [a.seq]
    assert _seqs(auditor.get(url, {"actor": "system", "action": "test."})) == [c.seq, b.seq]
    assert _seqs(auditor.get(url, {"seq_from": b.seq, "seq_to": c.seq})) == [c.seq, b.seq]
    page = auditor.get(reverse("audit:event-list"), {"seq_from": a.seq, "seq_to": a.seq})
    assert [e.seq for e in page.context["page"]] == [a.seq]


def test_worker_bookkeeping_is_hidden_unless_asked_for(auditor):
    assert {"workers.batch.complete", "workers.batch.fail"} <= BOOKKEEPING_ACTIONS
    real = _record(action="workers.run.finish", object_type="workers.evaluationrun", object_id=1)
    noise = _record(action="workers.batch.complete", object_type="workers.runbatch", object_id=1)
    url = reverse("audit:api-event-list")
    assert noise.seq not in _seqs(auditor.get(url)) and real.seq in _seqs(auditor.get(url))
    assert noise.seq in _seqs(auditor.get(url, {"bookkeeping": "1"}))
    page = auditor.get(reverse("audit:event-list"))
    assert noise.seq not in [e.seq for e in page.context["page"]]
    assert "workers.batch.complete" in page.content.decode()   # says what is hidden
    shown = auditor.get(reverse("audit:event-list"), {"bookkeeping": "1"})
    assert noise.seq in [e.seq for e in shown.context["page"]]
    assert 'name="bookkeeping" value="1" checked' in shown.content.decode()


# ------------------------------------------------------------------ what an event shows

def test_each_event_links_to_its_object_page_and_unknown_types_stay_text(auditor, items):
    item = items[0]
    _record(action="test.unknown.type", object_type="nowhere.thing", object_id=5)
    html = auditor.get(reverse("audit:event-list"), {"action": "annotation.qa_item.create"}).content.decode()
    assert f'<a href="/items/{item.pk}/">annotation.qaitem:{item.pk}</a>' in html
    html = auditor.get(reverse("audit:event-list"), {"action": "test.unknown"}).content.decode()
    assert "nowhere.thing:5" in html and 'href="/nowhere' not in html
    api = auditor.get(reverse("audit:api-event-list"), {"action": "annotation.qa_item.create"}).json()
    assert api["results"][-1]["object_url"] == f"/items/{item.pk}/"


def test_the_apps_register_links_for_their_object_types():
    assert {"annotation.qaitem", "annotation.image", "workers.evaluationrun", "adjudication.case",
            "labelstudio.annotationbatch", "validity.shortcutaudit"} <= set(registered_object_types())
    assert object_link("annotation.image", "12") == "/images/12/"
    assert object_link("workers.evaluationrun", 3) == "/runs/3/"
    assert object_link("adjudication.case", "4") == "/adjudication/cases/4/"
    assert object_link("annotation.image", "not-a-number") is None
    assert object_link("annotation.image", "") is None
    assert object_link("nobody.registered", "1") is None


def test_the_link_registry_refuses_clashes_and_takes_callables():
    register_object_link("test.widget", lambda object_id: f"/widgets/{object_id}/" if object_id != "0" else None)
    try:
        assert object_link("test.widget", "x7") == "/widgets/x7/"
        assert object_link("test.widget", "0") is None
        with pytest.raises(ValueError, match="already links"):
            register_object_link("test.widget", "annotation:image-detail")
        with pytest.raises(ValueError, match="dotted"):
            register_object_link("widget", "annotation:image-detail")
    finally:
        unregister_object_link("test.widget")


def test_the_full_change_is_shown_field_by_field_never_truncated(auditor):
    question = "Which of the following findings " + "is described in great detail " * 20 + "?"
    _record(action="test.item.revise", object_type="test.thing", object_id=1,
            before={"question": "short", "gold": "A", "options": ["A", "B"]},
            after={"question": question, "gold": "B", "options": ["A", "B"]})
    html = auditor.get(reverse("audit:event-list"), {"action": "test.item.revise"}).content.decode()
    assert question in html                                   # all of it, no "…"
    assert "<details class=\"diff\">" in html
    assert "2 fields: gold, question" in html                 # changed fields named in the summary
    assert '<tr class="changed"><td class="mono">gold <span class="tag">changed</span></td>' in html
    assert '<tr class="unchanged"><td class="mono">options</td>' in html


def test_lists_and_dicts_in_a_change_read_as_lists_tables_and_lines_with_exact_values(auditor):
    criteria = [{"metric": "step_accuracy", "op": ">=", "value": 0.5},
                {"metric": "guess_rate", "op": "<=", "value": 1.0}]
    _record(action="test.report.criteria", object_type="test.thing", object_id=2,
            before={"criteria": [], "status": "1", "note": None, "params": None},   # a dict shown whole
            after={"criteria": criteria, "evidence": ["run 1 scored 0.61", "run 2 scored 0.48"],
                   "params": {"seed": 3, "weights": "/srv/medr2/models/tiny"}, "ids": [1, 2, 3], "status": 1,
                   "note": ""})
    html = auditor.get(reverse("audit:event-list"), {"action": "test.report.criteria"}).content.decode()
    assert '{&quot;' not in html and '[&quot;' not in html                         # no JSON blob
    assert ("<table class=\"jv-table\"><thead><tr><th>metric</th><th>op</th><th>value</th></tr></thead><tbody>"
            "<tr><td>step_accuracy</td><td>&gt;=</td><td><span class=\"jv-literal\">0.5</span></td></tr>"
            "<tr><td>guess_rate</td><td>&lt;=</td><td><span class=\"jv-literal\">1.0</span></td></tr>") in html
    assert '<ol class="jv-list"><li>run 1 scored 0.61</li><li>run 2 scored 0.48</li></ol>' in html
    assert '<span class="jv-key">weights</span>: tiny</li>' in html               # a server path cut
    assert '<span class="jv-numbers">[1, 2, 3]</span>' in html
    # exact: the string "1" and the number 1 differ, and so do null and the empty string
    between = '</span></td><td class="mono"><span class="jv-'
    assert f'<span class="jv-quoted">&quot;1&quot;{between}literal">1</span>' in html
    assert f'<span class="jv-literal">null{between}quoted">&quot;&quot;</span>' in html
