"""The bare baseline for database writes: PostgreSQL `COPY ... FROM STDIN` (psycopg 3
`cursor.copy`) of rows the platform already wrote, with the same columns, into the same table in
the same state (emptied first, so the indexes start as small as they did for the platform).

    tables = dump_tables([("annotation_variant", VARIANT_COLUMNS)])      # untimed: COPY ... TO STDOUT
    truncate(["annotation_variant"])                                    # untimed
    seconds, rows = copy_back(tables["annotation_variant"])            # timed: COPY ... FROM STDIN

The dump is COPY's own text format, so the timed side does no per-row work in Python at all — the
fastest way a client can hand these rows to PostgreSQL. `copy_back` writes in chunks of
`chunk_rows` lines, one transaction each, and leaves the table as it was before the truncation
(same ids, same values): the benchmark can go on using it.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Dump:
    table: str
    columns: tuple[str, ...]
    path: Path
    rows: int


def dump_tables(specs: list[tuple[str, tuple[str, ...]]], *, directory: Path | None = None,
                where: str = "") -> dict[str, Dump]:
    """COPY each table's rows (ordered by id) to a file in COPY text format. Untimed."""
    from django.db import connection

    out = {}
    directory = Path(directory or tempfile.mkdtemp(prefix="medr2-copy-"))
    with connection.cursor() as cur:
        for table, columns in specs:
            path = directory / f"{table}.copy"
            rows = 0
            cols = ", ".join(columns)
            with open(path, "wb") as fh, cur.cursor.copy(
                    f"COPY (SELECT {cols} FROM {table} {where} ORDER BY id) TO STDOUT") as copy:
                for block in copy:
                    fh.write(block)
                    rows += bytes(block).count(b"\n")
            out[table] = Dump(table, tuple(columns), path, rows)
    return out


def truncate(tables: list[str]) -> None:
    """Empty the tables (and whatever references them: CASCADE) — only in a benchmark database."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(f"TRUNCATE {', '.join(tables)} CASCADE")


def _chunks(path: Path, chunk_rows: int, block: int = 1 << 20):
    """The file in pieces of about `chunk_rows` whole lines (COPY text rows never hold a raw newline)."""
    pending, lines = [], 0
    with open(path, "rb") as fh:
        for piece in iter(lambda: fh.read(block), b""):
            pending.append(piece)
            lines += piece.count(b"\n")
            if lines >= chunk_rows:
                data = b"".join(pending)
                cut = data.rfind(b"\n") + 1
                yield data[:cut]
                pending, lines = [data[cut:]], 0
    tail = b"".join(pending)
    if tail:
        yield tail


def copy_back(dump: Dump, *, chunk_rows: int = 50_000) -> tuple[float, int]:
    """Timed: COPY the dumped rows back into their table, `chunk_rows` per transaction. Returns
    (seconds spent in COPY and commit, rows). Reading the file is outside the timing."""
    from django.db import connection, transaction

    cols = ", ".join(dump.columns)
    elapsed = 0.0
    for data in _chunks(dump.path, chunk_rows):
        start = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cur:
            with cur.cursor.copy(f"COPY {dump.table} ({cols}) FROM STDIN") as copy:
                copy.write(data)
        elapsed += time.perf_counter() - start
    return elapsed, dump.rows

