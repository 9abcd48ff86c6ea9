"""Writing many rows at the speed of the database: PostgreSQL `COPY ... FROM STDIN` with ids
reserved from the table's sequence in one query, so the caller knows every id (a variant's parent,
an item's evidence links) before the rows are sent. Other databases (SQLite runs the demo) keep
`bulk_create`; callers branch on `copy_supported()`.

A COPY is all or nothing inside the caller's transaction: a row that breaks a unique constraint
fails the whole statement (as a plain INSERT would), raised as Django's `IntegrityError`.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import orjson
from django.db import connection, models

_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_SORTED = orjson.OPT_SORT_KEYS


def encode_json(value) -> str:
    """`json.dumps(value, sort_keys=True, separators=(",", ":"))`, the same text (content hashes are
    computed on it; jsonb takes it as is), 2-3x faster: see `encode_json_bytes`."""
    return encode_json_bytes(value).decode()


def encode_json_bytes(value) -> bytes:
    """`encode_json` as ASCII bytes (what a hash or a COPY takes, without a decode and re-encode). orjson
    writes it where its output is provably the standard library's — ASCII only (the library escapes the
    rest as \\uXXXX, orjson does not), no DEL, no exponent or leading "0.0000" (floats under 1e-4 are
    written differently) — and the library where not (also for what orjson refuses: ints past 64 bits,
    non-string keys). A NaN, which PostgreSQL's jsonb refuses from the library's text, is written as null.
    A string, an integer or None (a variant's kind, prompt and seed) take a shorter path to the same text.
    Either way control characters are escaped (never a raw tab, newline or carriage return)."""
    kind = type(value)
    if kind is str:
        if value.isascii():
            out = orjson.dumps(value)
            if b"\x7f" not in out:
                return out
        return _encode(value).encode()      # the standard library's text: \uXXXX escapes, lone surrogates too
    if kind is int:
        return b"%d" % value
    if value is None:
        return b"null"
    try:
        out = orjson.dumps(value, option=_SORTED)
    except TypeError:
        return _encode(value).encode()
    if out.isascii() and b"\x7f" not in out and b"e-" not in out and b"0.0000" not in out:
        return out
    return _encode(value).encode()


def copy_supported() -> bool:
    return connection.vendor == "postgresql"


_SEQUENCES: dict[str, str] = {}


def reserve_ids(model: type[models.Model], n: int) -> list[int]:
    """`n` fresh ids from the model's id sequence, in one query (ascending; consecutive unless another
    writer draws from the sequence at the same moment). Unused ids are simply never used, as after a
    rollback."""
    if n <= 0:
        return []
    table = model._meta.db_table
    with connection.cursor() as cur:
        if table not in _SEQUENCES:
            cur.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
            _SEQUENCES[table] = cur.fetchone()[0]
        cur.execute("SELECT nextval(%s::regclass) FROM generate_series(1, %s)", [_SEQUENCES[table], n])
        return [r[0] for r in cur.fetchall()]


def copy_rows(model: type[models.Model], columns: Sequence[str], rows: Iterable[Sequence]) -> int:
    """COPY `rows` (tuples in the order of `columns`; JSON columns as already-encoded text) into the
    model's table. Returns the number of rows sent."""
    table = model._meta.db_table
    n = 0
    with connection.cursor() as cur, connection.wrap_database_errors:
        with cur.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            write = copy.write_row
            for row in rows:
                write(row)
                n += 1
    return n


NULL = "\\N"                                  # COPY text's NULL
NULL_BYTES = NULL.encode()


def copy_escape(text: str) -> str:
    """`text` as one value of COPY's text format: backslash, tab, newline and carriage return escaped (what
    PostgreSQL requires of a value; every other character stands for itself). Four `replace` calls, each a C
    scan that returns the string itself when there is nothing to replace: `str.translate` with a mapping
    looked up every character and was the largest single cost of a variant's COPY text."""
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def copy_escape_json(text: bytes) -> bytes:
    """`copy_escape` of JSON text from `encode_json_bytes`: only backslashes can occur among the four
    characters COPY escapes (JSON writes tab, newline and carriage return as escapes), so one scan."""
    return text.replace(b"\\", b"\\\\")


def copy_text(model: type[models.Model], columns: Sequence[str], text: str | bytes) -> None:
    """COPY a block of COPY text (lines of tab-separated values in the order of `columns`, each line ending
    in a newline, values escaped with `copy_escape`; str, or bytes in UTF-8) into the model's table, in one
    write."""
    with connection.cursor() as cur, connection.wrap_database_errors:
        with cur.cursor.copy(f"COPY {model._meta.db_table} ({', '.join(columns)}) FROM STDIN") as copy:
            copy.write(text)
