"""Writing prediction rows: one COPY straight into `workers_prediction`, its text formatted here.

`predictions_insert` is what a batch (workers/services/execution.py) writes with; the row layout is
`PREDICTION_COLUMNS`, JSON columns as Python values (encoded here)."""
from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from math import copysign

import orjson
from django.db import IntegrityError, connection, transaction

from annotation.services.bulkwrite import NULL, copy_escape

from ..models import Prediction

PREDICTION_COLUMNS = ("run_id", "endpoint_id", "variant_id", "item_id", "raw_output", "outcome", "parsed",
                      "parse_method", "parse_detail", "correct", "iou", "box", "cue_adopted", "latency_ms", "tokens_in",
                      "tokens_out", "error", "created_at")
JSON_COLUMNS = ("parsed", "box")
COL = {name: i for i, name in enumerate(PREDICTION_COLUMNS)}


def json_text(value) -> str | None:
    """A JSON column's value as text for COPY (orjson; the standard library for what orjson refuses)."""
    if value is None:
        return None
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value)


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _float_text(value: float) -> str:
    text = repr(value)
    return _NON_FINITE.get(text, text)


def _copy_value(value, as_json: bool = False) -> str:
    """One value in COPY's text format: NULL as \\N; backslash, tab, newline and carriage return escaped."""
    if value is None:
        return NULL
    if as_json:
        value = json_text(value)
    if isinstance(value, str):
        return copy_escape(value)
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"no COPY text for {type(value).__name__}")


_REMEMBERED = frozenset((str, int, bool, type(None), datetime))


def _formatter(json_at: Sequence[int]):
    """text_of(column, value): each distinct value formatted once per call of the caller (per batch)."""
    seen: dict = {}
    json_at = frozenset(json_at)

    def text_of(i: int, value) -> str:
        kind = type(value)
        if kind in _REMEMBERED:   # the type is in the key: True == 1 == 1.0, but their texts differ
            key = (i, kind, value)
            text = seen.get(key)
            if text is None:
                text = seen[key] = _copy_value(value, i in json_at)
            return text
        return _copy_value(value, i in json_at)

    return text_of


def copy_text(rows: list[tuple], json_at: Sequence[int]) -> str:
    """Rows as one block of COPY text, any layout. A batch's rows repeat the same few values (an answer, its
    judgement, the run, the model, the time), so each distinct value is formatted once per batch: psycopg's
    `write_row`, value by value, was about a third of a baseline batch's CPU time (py-spy)."""
    text_of = _formatter(json_at)
    lines = ["\t".join([text_of(i, value) for i, value in enumerate(r)]) for r in rows]
    lines.append("")
    return "\n".join(lines)


_IDS = (int,) * 4   # run, model, variant, item: the columns before the response
_LATENCY = COL["latency_ms"]
_JUDGEMENT = (COL["raw_output"], _LATENCY)      # the response and its judgement
_REST = (_LATENCY + 1, len(PREDICTION_COLUMNS))  # tokens, error, time


def prediction_text(rows: list[tuple]) -> str:
    """`copy_text` of PREDICTION_COLUMNS rows, the same text, at about three quarters of its cost (5.9 -> 4.3 µs
    per row on real `null` batches): the four ids are joined as they are, and the columns that repeat together
    (a response and its judgement; tokens, error and time) are formatted once per distinct combination
    (`_span_text`); the latency differs on every row."""
    text_of = _formatter([COL[c] for c in JSON_COLUMNS])
    judgements: dict = {}
    rests: dict = {}
    (j0, j1), (r0, r1) = _JUDGEMENT, _REST
    lines = []
    for r in rows:
        ids = r[:4]
        head = ("\t".join(map(str, ids)) if tuple(map(type, ids)) == _IDS
                else "\t".join([text_of(i, value) for i, value in enumerate(ids)]))
        latency = r[_LATENCY]
        latency = _float_text(latency) if type(latency) is float else text_of(_LATENCY, latency)
        lines.append(f"{head}\t{_span_text(r, j0, j1, judgements, text_of)}\t{latency}\t"
                     f"{_span_text(r, r0, r1, rests, text_of)}")
    lines.append("")
    return "\n".join(lines)


def _span_text(row: tuple, start: int, stop: int, cache: dict, text_of) -> str:
    """The text of row[start:stop], kept in `cache` per distinct combination of the values *and their types*
    (True == 1 == 1.0: their texts differ). Where equal values of one type can still differ in text, it is
    kept with the signs of its float zeros (-0.0 == 0.0), which a hit must match; combinations holding a tuple
    or frozenset are not kept (their members' types are not in the key); a list or dict cannot be a key."""
    span = row[start:stop]
    key = (span, tuple(map(type, span)))
    try:
        hit = cache.get(key)
    except TypeError:   # a list or dict among the values
        key = hit = None
    if hit is not None and (hit[1] is None or hit[1] == _zero_signs(span)):
        return hit[0]
    text = "\t".join([text_of(i, value) for i, value in enumerate(span, start)])
    if key is not None and hit is None and not any(type(v) in (tuple, frozenset) for v in span):
        cache[key] = (text, _zero_signs(span) or None)
    return text


def _zero_signs(span: tuple) -> tuple:
    return tuple(copysign(1.0, v) for v in span if type(v) is float and v == 0.0)


def predictions_insert(rows: list[tuple]) -> int | None:
    """Insert prediction rows, skipping any (run, model, variant) already there. Returns how many
    were inserted (None where the database cannot tell). PostgreSQL: one COPY straight into the table
    inside a savepoint — the batch already left out what was stored, so a conflict means a concurrent
    duplicate of this batch; then the savepoint rolls back and the rows go through a temporary table
    and INSERT ... SELECT ... ON CONFLICT DO NOTHING. Elsewhere: bulk_create(ignore_conflicts=True)."""
    if not rows:
        return 0
    if connection.vendor != "postgresql":
        objs = [Prediction(**dict(zip(PREDICTION_COLUMNS, r))) for r in rows]
        Prediction.objects.bulk_create(objs, ignore_conflicts=True, batch_size=2000)
        return None
    table, cols = Prediction._meta.db_table, ", ".join(PREDICTION_COLUMNS)

    text = prediction_text(rows)

    def copy_into(target: str) -> None:
        with cur.cursor.copy(f"COPY {target} ({cols}) FROM STDIN") as copy:
            copy.write(text)

    with connection.cursor() as cur:
        try:
            with transaction.atomic(), connection.wrap_database_errors:
                copy_into(table)
            return len(rows)
        except IntegrityError:
            pass
        cur.execute(f"CREATE TEMP TABLE IF NOT EXISTS medr2_prediction_load ON COMMIT DELETE ROWS AS "
                    f"SELECT {cols} FROM {table} WITH NO DATA")
        copy_into("medr2_prediction_load")
        cur.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM medr2_prediction_load "
                    f"ON CONFLICT (run_id, endpoint_id, variant_id) DO NOTHING")
        inserted = cur.rowcount
        cur.execute("TRUNCATE medr2_prediction_load")
    return inserted
