"""Writing prediction rows: one COPY straight into `workers_prediction`, its text formatted here.

`predictions_insert` is what a batch (workers/services/execution.py) writes with; the row layout is
`PREDICTION_COLUMNS`, JSON columns as Python values (encoded here)."""
from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

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
        text = repr(value)
        return _NON_FINITE.get(text, text)
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"no COPY text for {type(value).__name__}")


_REMEMBERED = frozenset((str, int, bool, type(None), datetime))


def copy_text(rows: list[tuple], json_at: Sequence[int]) -> str:
    """Prediction rows as one block of COPY text. A batch's rows repeat the same few values (an answer, its
    judgement, the run, the model, the time), so each distinct value is formatted once per batch: psycopg's
    `write_row`, value by value, was about a third of a baseline batch's CPU time (py-spy)."""
    seen: dict = {}
    lines = []
    for r in rows:
        fields = []
        for i, value in enumerate(r):
            kind = type(value)
            if kind in _REMEMBERED:   # the type is in the key: True == 1 == 1.0, but their texts differ
                key = (i, kind, value)
                text = seen.get(key)
                if text is None:
                    text = seen[key] = _copy_value(value, i in json_at)
            else:
                text = _copy_value(value, i in json_at)
            fields.append(text)
        lines.append("\t".join(fields))
    lines.append("")
    return "\n".join(lines)


def predictions_insert(rows: list[tuple]) -> int | None:
    """Insert prediction rows, skipping any (run, model, variant) already there. Returns how many
    were inserted (None where the database cannot tell). PostgreSQL: one COPY straight into the table
    inside a savepoint — the batch already left out what was stored, so a conflict means a concurrent
    duplicate of this batch; then the savepoint rolls back and the rows go through a temporary table
    and INSERT ... SELECT ... ON CONFLICT DO NOTHING. Elsewhere: bulk_create(ignore_conflicts=True)."""
    if not rows:
        return 0
    json_at = [COL[c] for c in JSON_COLUMNS]
    if connection.vendor != "postgresql":
        objs = [Prediction(**dict(zip(PREDICTION_COLUMNS, r))) for r in rows]
        Prediction.objects.bulk_create(objs, ignore_conflicts=True, batch_size=2000)
        return None
    table, cols = Prediction._meta.db_table, ", ".join(PREDICTION_COLUMNS)

    def copy_into(target: str) -> None:
        with cur.cursor.copy(f"COPY {target} ({cols}) FROM STDIN") as copy:
            copy.write(copy_text(rows, json_at))

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
