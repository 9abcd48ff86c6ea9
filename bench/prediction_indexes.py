#!/usr/bin/env python
"""What each index and foreign key of `workers_prediction` costs an insert: COPY the same prediction rows
into an empty copy of the table (`CREATE TABLE … (LIKE workers_prediction INCLUDING DEFAULTS)`) with no
index, then with each index alone, the foreign keys together and alone, and everything; best of N.

    .venv/bin/python bench/prediction_indexes.py --database medr2_bench_eval     # after eval_throughput.py

Reads the rows the evaluation benchmark left in the database; changes nothing but its own scratch table.
"""
from __future__ import annotations

import argparse
import io
import time

import psycopg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default="medr2_bench")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    conn = psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{args.database}", autocommit=True)
    cols = ", ".join(r[0] for r in conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'workers_prediction' "
        "ORDER BY ordinal_position"))
    buf = io.BytesIO()
    with conn.cursor().copy(f"COPY (SELECT {cols} FROM workers_prediction ORDER BY id) TO STDOUT") as copy:
        for block in copy:
            buf.write(bytes(block))
    data = buf.getvalue()
    rows = data.count(b"\n")
    indexes = {name: d.replace(f"INDEX {name} ON public.workers_prediction", f"INDEX bench_{name} ON bench_pred")
               for name, d in conn.execute("SELECT indexname, indexdef FROM pg_indexes "
                                           "WHERE tablename = 'workers_prediction' ORDER BY indexname")}
    fks = [f"ALTER TABLE bench_pred ADD CONSTRAINT bench_fk{i} {d}" for i, (d,) in enumerate(conn.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'workers_prediction'::regclass "
        "AND contype = 'f' ORDER BY conname"))]

    def measure(setup: list[str]) -> float:
        best = float("inf")
        for _ in range(args.repeat):
            conn.execute("DROP TABLE IF EXISTS bench_pred")
            conn.execute("CREATE TABLE bench_pred (LIKE workers_prediction INCLUDING DEFAULTS)")
            for sql in setup:
                conn.execute(sql)
            start = time.perf_counter()
            with conn.transaction(), conn.cursor().copy(f"COPY bench_pred ({cols}) FROM STDIN") as copy:
                copy.write(data)
            best = min(best, time.perf_counter() - start)
        return best

    try:
        base = measure([])
        print(f"{rows} prediction rows; no index or constraint: {base:.3f} s ({rows / base:,.0f} rows/s)")

        def line(label: str, t: float) -> None:
            extra = t - base
            print(f"  + {label:70s} {t:6.3f} s  (+{extra / base * 100:4.0f} %, {extra / rows * 1e6:5.1f} µs/row)")

        for name, sql in indexes.items():
            line(name, measure([sql]))
        for sql in fks:
            line(sql.split(" ", 6)[-1][:70], measure([sql]))
        line(f"all {len(fks)} foreign keys (deferred: checked at commit)", measure(fks))
        line(f"all {len(indexes)} indexes", measure(list(indexes.values())))
        line("everything (the table as it is)", measure([*indexes.values(), *fks]))
    finally:
        conn.execute("DROP TABLE IF EXISTS bench_pred")


if __name__ == "__main__":
    main()
