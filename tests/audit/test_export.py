"""Exports of the filtered trail: CSV and JSONL, streamed, role-gated, in bounded memory."""
from __future__ import annotations

import csv
import datetime as dt
import io
import json
import time
import tracemalloc

import pytest
from django.db import connection, transaction
from django.http import StreamingHttpResponse
from django.urls import reverse

from accounts.roles import Role
from audit.export import EXPORT_COLUMNS
from audit.models import AuditEvent
from audit.services import audit_record
from tests.audit.conftest import client_for

pytestmark = pytest.mark.django_db


def _record(**kwargs):
    with transaction.atomic():
        return audit_record(actor=None, **kwargs)


def _body(response) -> str:
    assert isinstance(response, StreamingHttpResponse)
    return b"".join(response.streaming_content).decode("utf-8")


@pytest.fixture
def events():
    return [
        _record(action="test.export.one", object_type="test.thing", object_id=1, before={"a": 1},
                after={"a": 2, "text": 'comma, "quote"\nnew line', "name": "élément"}),
        _record(action="test.export.bulk", objects=[("test.thing", 2), ("test.thing", 3)], after={"n": 2}),
        _record(action="workers.batch.complete", object_type="workers.runbatch", object_id=1),
    ]


@pytest.mark.parametrize("route", ["audit:event-export", "audit:api-event-export"])
def test_csv_export_has_every_column_and_the_filtered_rows(route, events, users):
    response = client_for(users[Role.AUDITOR]).get(reverse(route, args=["csv"]), {"action": "test.export"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith('attachment; filename="audit-events-')
    rows = list(csv.DictReader(io.StringIO(_body(response))))
    assert tuple(rows[0]) == EXPORT_COLUMNS
    one, bulk = events[0], events[1]
    assert [int(r["seq"]) for r in rows] == [one.seq, bulk.seq]   # oldest first; bookkeeping hidden
    assert dt.datetime.fromisoformat(rows[0]["created_at"]) == one.created_at   # ISO 8601, UTC
    assert (rows[0]["actor"], rows[0]["object_type"], rows[0]["object_id"]) == ("system", "test.thing", "1")
    assert json.loads(rows[0]["before"]) == {"a": 1} and json.loads(rows[0]["after"]) == one.after
    assert json.loads(rows[0]["objects"]) == []
    assert json.loads(rows[1]["objects"]) == [["test.thing", "2"], ["test.thing", "3"]]
    assert (rows[1]["prev_hash"], rows[1]["hash"]) == (bulk.prev_hash, bulk.hash)


def test_jsonl_export_reads_as_the_chain_and_honours_bookkeeping(events, users):
    response = client_for(users[Role.AUDITOR]).get(reverse("audit:api-event-export", args=["jsonl"]),
                                                   {"bookkeeping": "1", "seq_from": events[0].seq,
                                                    "seq_to": events[-1].seq})
    assert response["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in _body(response).splitlines()]
    assert [r["seq"] for r in lines] == [e.seq for e in events]
    assert list(lines[0]) == list(EXPORT_COLUMNS)
    assert lines[1]["objects"] == [["test.thing", "2"], ["test.thing", "3"]]
    assert lines[0]["after"]["text"] == 'comma, "quote"\nnew line'
    for prev, nxt in zip(lines, lines[1:]):
        assert nxt["prev_hash"] == prev["hash"]


def test_the_page_offers_the_export_with_its_current_filters(events, users):
    html = client_for(users[Role.AUDITOR]).get(reverse("audit:event-list"),
                                               {"action": "test.export", "bookkeeping": "1"}).content.decode()
    assert 'href="/audit/export.csv?action=test.export&amp;bookkeeping=1"' in html
    assert 'href="/audit/export.jsonl?action=test.export&amp;bookkeeping=1"' in html


def test_exports_are_for_the_audit_role_only(events, users):
    for role in (Role.CURATOR, Role.ANNOTATOR, None):
        client = client_for(users[role])
        assert client.get(reverse("audit:event-export", args=["csv"])).status_code == 403
        denied = client.get(reverse("audit:api-event-export", args=["jsonl"]))
        assert denied.status_code == 403 and denied.json()["code"] == "permission_denied"
    from django.test import Client

    assert Client().get(reverse("audit:event-export", args=["csv"])).status_code == 302
    assert Client().get(reverse("audit:api-event-export", args=["csv"])).status_code in (401, 403)
    assert client_for(users[Role.ADMIN]).get(reverse("audit:event-export", args=["csv"])).status_code == 200


def test_bad_filters_and_formats_are_refused_before_streaming(users):
    client = client_for(users[Role.AUDITOR])
    api = client.get(reverse("audit:api-event-export", args=["csv"]), {"date_from": "01/02/2026"},
                     HTTP_ACCEPT="text/csv")
    assert api.status_code == 400
    assert api.json()["code"] == "invalid" and "date_from" in api.json()["fields"]
    page = client.get(reverse("audit:event-export", args=["csv"]), {"seq_to": "ten"})
    assert page.status_code == 400 and b"seq_to" in page.content
    assert client.get(reverse("audit:event-export", args=["xlsx"])).status_code == 404
    assert client.get(reverse("audit:api-event-export", args=["xlsx"])).json()["code"] == "not_found"


N_EVENTS = 1_000_000
PEAK_BYTES = 50 * 1024 * 1024


def test_a_million_events_stream_in_bounded_memory(users):
    """1M events written straight into the table (one INSERT ... SELECT; the trigger only refuses
    UPDATE and DELETE), exported as CSV while tracemalloc watches Python's allocations."""
    start = AuditEvent.objects.count() + 1
    t0 = time.monotonic()
    with connection.cursor() as cur:
        cur.execute("""
            INSERT INTO audit_auditevent (seq, created_at, actor_id, actor_name, action, object_type, object_id,
                                          before, after, canonical, prev_hash, hash)
            SELECT g, now(), NULL, 'system', 'test.bulk.load', 'test.thing', g::text, NULL,
                   jsonb_build_object('i', g), '{}', repeat('0', 64), lpad(to_hex(g), 64, '0')
            FROM generate_series(%s, %s) AS g""", [start, start + N_EVENTS - 1])
    inserted = time.monotonic()
    client = client_for(users[Role.AUDITOR])
    url = reverse("audit:event-export", args=["csv"])
    b"".join(client.get(url, {"action": "test.none"}).streaming_content)   # imports happen outside the count
    began = time.monotonic()
    tracemalloc.start()
    try:
        response = client.get(url, {"action": "test.bulk.load"})
        assert isinstance(response, StreamingHttpResponse)
        lines = pieces = 0
        last = b""
        for piece in response.streaming_content:
            lines += piece.count(b"\n")
            pieces += 1
            last = piece or last
        response.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == N_EVENTS + 1                      # the header and one line per event
    assert pieces > 100                                # really streamed, not one body
    assert last.decode().splitlines()[-1].startswith(f"{start + N_EVENTS - 1},")
    assert peak < PEAK_BYTES, f"peak Python allocation {peak / 2**20:.1f} MiB"
    print(f"inserted in {inserted - t0:.1f} s; streamed {N_EVENTS} events in {time.monotonic() - began:.1f} s, "
          f"peak {peak / 2**20:.1f} MiB")
