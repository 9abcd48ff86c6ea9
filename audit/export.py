"""CSV and JSONL exports of the (filtered) audit trail, streamed.

`export_response(filters, fmt)` answers a `StreamingHttpResponse` whose body is generated while it is
sent: the rows come from `audit_event_export_chunks` (server-side cursors, a chunk at a time), and
each chunk of rows is written as one piece of text, so memory stays bounded for any number of events.
Columns, in order (`EXPORT_COLUMNS`): seq, created_at (ISO 8601, UTC), actor, action, object_type,
object_id, objects (the touched list, JSON `[[type, id], ...]`), before, after (JSON text), prev_hash,
hash. JSONL writes the same keys, with objects/before/after as JSON values. Oldest event first, so an
export of the whole trail reads as the chain (each row's prev_hash is the previous row's hash).
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.http import StreamingHttpResponse
from django.utils import timezone

from .filters import EventFilters
from .selectors import audit_event_export_chunks

EXPORT_COLUMNS = ("seq", "created_at", "actor", "action", "object_type", "object_id", "objects", "before", "after",
                  "prev_hash", "hash")
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _rows(chunk: list[tuple], touched: dict[int, list]) -> list[tuple]:
    """A chunk of `EXPORT_VALUES` tuples as `EXPORT_COLUMNS` values (JSON as text)."""
    return [(seq, created_at, actor, action, object_type, object_id,
             _json(touched[seq]) if seq in touched else "[]", before or "null", after or "null", prev_hash, hash_)
            for seq, created_at, actor, action, object_type, object_id, before, after, prev_hash, hash_ in chunk]


def csv_pieces(chunks: Iterable[tuple[list[tuple], dict]]) -> Iterator[str]:
    """The header, then the CSV text of each chunk (RFC 4180 quoting, \\r\\n line ends)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_COLUMNS)
    for chunk, touched in chunks:
        writer.writerows(_rows(chunk, touched))
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def jsonl_pieces(chunks: Iterable[tuple[list[tuple], dict]]) -> Iterator[str]:
    """One JSON object per line (keys in `EXPORT_COLUMNS` order), a chunk at a time. The before/after
    JSON text from the database is placed as it is, not decoded and encoded again."""
    for chunk, touched in chunks:
        yield "".join(
            f'{{"seq":{seq},"created_at":"{created_at}","actor":{_json(actor)},"action":{_json(action)},'
            f'"object_type":{_json(object_type)},"object_id":{_json(object_id)},"objects":{objects},'
            f'"before":{before},"after":{after},"prev_hash":{_json(prev_hash)},"hash":{_json(hash_)}}}\n'
            for seq, created_at, actor, action, object_type, object_id, objects, before, after, prev_hash, hash_
            in _rows(chunk, touched))


def export_response(filters: EventFilters, fmt: str) -> StreamingHttpResponse:
    """The streamed export of the filtered events as `fmt` ("csv" or "jsonl")."""
    if fmt not in CONTENT_TYPES:
        raise ValueError(f"unknown export format {fmt!r}")
    pieces = (csv_pieces if fmt == "csv" else jsonl_pieces)(audit_event_export_chunks(filters))
    response = StreamingHttpResponse(pieces, content_type=CONTENT_TYPES[fmt])
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="audit-events-{stamp}.{fmt}"'
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response
