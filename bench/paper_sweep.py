#!/usr/bin/env python
"""The full paper-scale sweep on one machine: 14 models × the whole benchmark through real Celery workers,
each phase against its bare floor measured in the same run.

    .venv/bin/python bench/paper_sweep.py                    # the paper's scale: 42,432 images, ~15M predictions
    .venv/bin/python bench/paper_sweep.py --scale 0.1        # a tenth (~1.5M predictions)
    .venv/bin/python bench/paper_sweep.py --scale 0.01 --requests 5 --no-kill   # a quick check that it runs

Phases (database `--database`, default `medr2_sweep`, dropped and recreated; Redis db `--redis-db`):

1. **Set-up** — `round(42,432 × scale)` synthetic images with phantom findings (bench/generate.py),
   `chains_generate` (items), all approved, `variants_generate` of `--kinds` (about 7 variants per item:
   ~1M at scale 1). Variant generation is timed against a bare `COPY` of the same variant rows into an
   empty copy of the table: same columns, indexes and foreign keys (the same work), and again without the
   foreign keys (`LIKE … INCLUDING ALL` alone: a stricter floor); see `clone_copy`.
2. **A small run** — the same 14 models on the first `--small` items, for the pages' query counts at a
   small size.
3. **The sweep** — `--models` endpoints of the `null` backend (instant answers: what is measured is the
   platform) over every variant of every split, on `--workers` `celery worker -Q cpu,gpu --concurrency=1`
   processes (the first also runs Celery beat: the sweep of workers/services/dispatch.py). Timed from
   `run_create` (selection, batch rows, the first window sent) to the last prediction written, and to the
   run scored (scoring runs in the worker that finishes the last batch). Baseline: a bare `COPY` of the
   same prediction rows (dumped, untimed) into an empty copy of the table, with and without its foreign
   keys. Every worker's process tree and this process are sampled for RSS every 0.5 s (peak per process).
   Checked at the end: prediction count == run total, no (run, model, variant) twice.
4. **A worker killed with SIGKILL halfway** (`--no-kill` skips) — a second run (2 models, the same
   items); at half its predictions one worker's whole process tree is killed and a new one started.
   Same checks. The killed worker's batch is found by the sweep (no heartbeat for
   `MEDR2_EVAL_STALE_S`, 60 s here) or redelivered by Redis, and written once.
5. **Pages** — adjudication cases (COPY) on a fifth of the items, then full Django requests through the
   test client, `--requests` each: the run page, the predictions page (first page, a filtered page, a
   deep page), the adjudication queue; p50/p95 against 150 ms, and SQL queries per page for the small
   run against the sweep's (they must be equal).

Prints each phase's time, rows/s, ratio to its floor, peak RSS per process; copy the summary to
docs/benchmarks.md ("Paper-scale sweep").
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _django import ROOT, peak_rss_mib, setup_django

KINDS = ("clean", "misleading_hint", "correct_hint", "option_permutation", "false_premise", "true_premise",
         "image_ablation")
TARGET_MS = 150
WORKER_ENV = {"MEDR2_EVAL_STALE_S": "60", "MEDR2_EVAL_RECONCILE_S": "10", "MEDR2_EVAL_LOST_GRACE_S": "30",
              "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


class Workers:
    """`celery worker` processes (the first with beat), their RSS sampled in a thread."""

    def __init__(self, tmp: Path):
        self.tmp, self.procs, self.peak = tmp, [], {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def start(self) -> subprocess.Popen:
        k = len(self.procs)
        beat = ["-B", "-s", str(self.tmp / f"beat-{k}")] if k == 0 else []
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "medr2", "worker", "-Q", "cpu,gpu", "--concurrency=1",
             "--prefetch-multiplier=1", "-n", f"sweep{k}@%h", "--without-gossip", "--without-mingle",
             "--loglevel=WARNING", *beat],
            cwd=ROOT, env={**os.environ, **WORKER_ENV}, stdout=open(self.tmp / f"worker-{k}.log", "w"),
            stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def _sample(self) -> None:
        import psutil

        while not self._stop.is_set():
            for k, proc in enumerate(list(self.procs)):
                try:
                    tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
                except psutil.NoSuchProcess:
                    continue
                for p in tree:
                    try:
                        rss = p.memory_info().rss / 2**20
                    except psutil.NoSuchProcess:
                        continue
                    key = f"worker {k} pid {p.pid}" + (" (main)" if p.pid == proc.pid else " (pool)")
                    self.peak[key] = max(self.peak.get(key, 0.0), rss)
            self._stop.wait(0.5)

    def kill(self, proc: subprocess.Popen) -> None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop(self) -> None:
        self._stop.set()
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)


def clone_copy(table: str, columns: tuple[str, ...], where: str, tmp: Path) -> dict[str, tuple[float, int]]:
    """Bare COPYs of `table`'s rows (matching `where`), pre-formatted text, 50,000 rows per transaction,
    into an empty copy of the table: the floors for writing those rows. Two copies, each timed:
    `same table` — the same columns, indexes and foreign keys (deferred, checked at commit, as the
    platform's are): the same work; `no foreign keys` — `LIKE` alone, a stricter floor that skips the
    checks the platform must pay (bench/prediction_indexes.py: they are most of a row's insert cost).
    Returns {floor: (seconds, rows)}; the copies are dropped."""
    from _copy import Dump, copy_back, dump_tables
    from django.db import connection

    dump = dump_tables([(table, columns)], directory=tmp, where=where)[table]
    clone = f"bench_floor_{table}"
    with connection.cursor() as cur:
        cur.execute("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass "
                    "AND contype = 'f'", [table])
        foreign_keys = cur.fetchall()
    floors = {}
    try:
        for name, with_fks in (("same table", True), ("no foreign keys", False)):
            with connection.cursor() as cur:
                cur.execute(f"DROP TABLE IF EXISTS {clone}")
                cur.execute(f"CREATE TABLE {clone} (LIKE {table} INCLUDING ALL)")
                for k, (_, definition) in enumerate(foreign_keys if with_fks else ()):
                    cur.execute(f"ALTER TABLE {clone} ADD CONSTRAINT {clone}_fk{k} {definition}")
            floors[name] = copy_back(Dump(clone, dump.columns, dump.path, dump.rows))
    finally:
        with connection.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {clone}")
        dump.path.unlink(missing_ok=True)
    return floors


def wait_run(run_id: int, *, poll: float = 1.0, on_progress=None) -> tuple[float, float]:
    """Seconds until every batch of the run is done, and until it is scored."""
    from workers.models import EvaluationRun, RunBatch

    t0 = time.perf_counter()
    written = None
    while True:
        if written is None and not RunBatch.objects.filter(run_id=run_id).exclude(status="done").exists():
            written = time.perf_counter() - t0
        status, scored = EvaluationRun.objects.filter(pk=run_id).values_list("status", "scored_at").get()
        if status == "failed":
            raise RuntimeError(f"run {run_id} failed")
        if written is not None and scored is not None:
            return written, time.perf_counter() - t0
        if on_progress:
            on_progress()
        time.sleep(poll)


def check_complete(run_id: int) -> str:
    """Count == total and no (run, model, variant) twice, or the reason it is not."""
    from django.db import connection

    from workers.models import EvaluationRun, Prediction

    total = EvaluationRun.objects.get(pk=run_id).total
    n = Prediction.objects.filter(run_id=run_id).count()
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM (SELECT 1 FROM workers_prediction WHERE run_id = %s "
                    "GROUP BY endpoint_id, variant_id HAVING count(*) > 1) d", [run_id])
        dupes = cur.fetchone()[0]
    ok = n == total and dupes == 0
    return f"{'OK' if ok else 'FAILED'}: {n:,} predictions of {total:,}, {dupes} duplicated keys"


def make_cases(item_ids: list[int], run_id: int, users: dict, rate: float, seed: int) -> int:
    """Adjudication cases on `rate` of these items, by COPY (what the detection would open at that rate)."""
    from ui_latency import copy_rows, reset_sequences

    from adjudication.models import AdjudicationCase, CaseReading
    from annotation.models import QAItem

    rng = random.Random(seed)
    chosen = [i for i in item_ids if rng.random() < rate]
    rows = QAItem.objects.filter(pk__in=chosen).values("pk", "item_key", "chain__image_id", "stage_id", "category_id",
                                                       "chain__image__modality", "gold_answer")
    base = (AdjudicationCase.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1
    base_r = (CaseReading.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1
    cases, readings = [], []
    for n, it in enumerate(rows.iterator(chunk_size=5000)):
        cid = base + n
        status = rng.choices(["open", "resolved", "in_progress"], weights=[75, 22, 3])[0]
        hit = {"rule": "model_consensus", "priority": round(rng.uniform(0.3, 1.0), 3), "models": ["null-01"],
               "item_id": it["pk"], "evidence": {"answer": "A", "gold": it["gold_answer"], "agree": 3, "answered": 14}}
        cases.append({"id": cid, "key": f"item:{it['item_key']}", "item_id": it["pk"], "item_key": it["item_key"],
                      "image_id": it["chain__image_id"], "stage_id": it["stage_id"],
                      "category_id": it["category_id"], "modality": it["chain__image__modality"],
                      "rules": ",model_consensus,", "hits": [hit], "priority": hit["priority"], "run_ids": [run_id],
                      "status": status, "outcome": "confirmed" if status == "resolved" else ""})
        if status != "open" or n % 3 == 0:
            readings.append({"id": base_r + len(readings), "case_id": cid, "reader_id": users["adjudicator"].pk,
                             "role": "primary", "status": "submitted" if status != "open" else "assigned",
                             "verdict": "confirmed" if status != "open" else "", "time_spent_s": 30.0})
    copy_rows(AdjudicationCase, cases)
    copy_rows(CaseReading, readings)
    reset_sequences(AdjudicationCase, CaseReading)
    return len(cases)


def time_pages(run_id: int, users: dict, n: int) -> list[dict]:
    """p50/p95 (ms) and SQL queries of the pages that grow with predictions and cases."""
    from django.test import Client
    from ui_latency import timed

    pages = [("run page", "auditor", f"/runs/{run_id}/"),
             ("predictions, first page", "auditor", f"/runs/{run_id}/predictions/"),
             ("predictions, wrong answers", "auditor", f"/runs/{run_id}/predictions/?correct=false"),
             ("predictions, deep page (page 2000)", "auditor", f"/runs/{run_id}/predictions/?page=2000"),
             ("predictions API", "auditor", f"/api/runs/{run_id}/predictions/"),
             ("adjudication queue", "adjudicator", "/adjudication/"),
             ("adjudication queue", "curator", "/adjudication/"),
             ("adjudication queue, page 100", "curator", "/adjudication/?page=100&status=all")]
    out = []
    for name, role, url in pages:
        client = Client()
        client.force_login(users[role])
        times, queries = [], set()
        for _ in range(n):
            answer = timed(client, url)
            if isinstance(answer, int):
                raise RuntimeError(f"{url} as {role}: {answer}")
            times.append(answer[0])
            queries.add(answer[1])
        out.append({"page": name, "user": role, "p50": statistics.median(times), "queries": sorted(queries),
                    "p95": statistics.quantiles(times, n=20)[-1] if len(times) >= 20 else max(times)})
    return out


def bench_users() -> dict:
    from accounts.roles import Role
    from accounts.services import user_create

    return {role.value: user_create(username=f"sweep-{role.value}", email=f"sweep-{role.value}@example.org",
                                    password="pw-Secret-123", roles=[role], actor=None)
            for role in (Role.ADJUDICATOR, Role.CURATOR, Role.AUDITOR)}


def main() -> None:  # noqa: PLR0915 - one script, phase after phase
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the paper's 42,432 images")
    parser.add_argument("--models", type=int, default=14)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=5000,
                        help="variants per batch: the most run_create allows (docs/benchmarks.md measures 1,000-5,000)")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--small", type=int, default=2000, help="items of the small run (query counts)")
    parser.add_argument("--requests", type=int, default=20, help="timed requests per page")
    parser.add_argument("--database", default="medr2_sweep")
    parser.add_argument("--redis-db", type=int, default=6)
    parser.add_argument("--no-kill", action="store_true", help="skip the run with a worker killed halfway")
    args = parser.parse_args()
    broker = f"redis://127.0.0.1:6379/{args.redis_db}"
    subprocess.run(["redis-cli", "-n", str(args.redis_db), "FLUSHDB"], check=True, capture_output=True)
    phases: list[tuple[str, str]] = []

    def phase(name: str, text: str) -> None:
        phases.append((name, text))
        print(f"[{time.strftime('%H:%M:%S')}] {name}: {text}", flush=True)

    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        setup_django(tmp, postgres=True, broker=broker, database=args.database)
        import logging

        from django.conf import settings
        from generate import populate

        from annotation.models import Image, QAItem, Variant
        from annotation.services.chains import chains_generate
        from annotation.services.variants import variants_generate
        from workers.models import Prediction
        from workers.services.endpoints import endpoint_create
        from workers.services.runs import run_create

        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
        logging.disable(logging.WARNING)
        n_images = max(200, round(42_432 * args.scale))

        # 1. set-up
        t0 = time.perf_counter()
        populate(n_images)
        phase("images", f"{n_images:,} images with phantom findings in {time.perf_counter() - t0:.0f} s "
              "(untimed set-up)")
        t0 = time.perf_counter()
        chains_generate(image_ids=list(Image.objects.values_list("pk", flat=True)), actor=None, seed=0, batch_size=1000)
        n_items = QAItem.objects.count()
        phase("items", f"{n_items:,} items in {time.perf_counter() - t0:.0f} s")
        QAItem.objects.update(status=QAItem.Status.APPROVED)
        t0 = time.perf_counter()
        variants_generate(items=list(QAItem.objects.order_by("pk").values_list("pk", flat=True)), actor=None, seed=0,
                          kinds=args.kinds.split(","), batch_size=1000)
        t_var = time.perf_counter() - t0
        n_var = Variant.objects.count()
        floors = clone_copy(Variant._meta.db_table, tuple(f.column for f in Variant._meta.concrete_fields), "", tmp)
        phase("variant generation", f"{n_var:,} variants in {t_var:.1f} s = {n_var / t_var:,.0f}/s; " + "; ".join(
            f"bare COPY of the same rows, {name}: {fs:.1f} s = {fn / fs:,.0f}/s, ratio time {t_var / fs:.2f}x"
            for name, (fs, fn) in floors.items()) + " (target <= 1.5x)")

        endpoints = [endpoint_create(name=f"null-{k + 1:02d}", backend="null", actor=None) for k in range(args.models)]
        users = bench_users()
        workers = Workers(tmp)
        try:
            for _ in range(args.workers):
                workers.start()
            # 2. the small run (query counts at a small size)
            small_items = list(QAItem.objects.order_by("pk").values_list("pk", flat=True)[:args.small])
            small = run_create(name="small", endpoints=endpoints, actor=None, batch_size=args.batch_size, split="all",
                               item_filters={"item_ids": small_items})
            w, s = wait_run(small.pk)
            make_cases(small_items, small.pk, users, 0.2, seed=1)
            small_pages = time_pages(small.pk, users, 2)
            phase("small run", f"{small.total:,} predictions written in {w:.1f} s, scored at {s:.1f} s; "
                  f"{check_complete(small.pk)}")

            # 3. the sweep
            t0 = time.perf_counter()
            sweep = run_create(name="sweep", endpoints=endpoints, actor=None, batch_size=args.batch_size, split="all")
            t_create = time.perf_counter() - t0
            w, s = wait_run(sweep.pk)
            w, s = w + t_create, s + t_create
            n = sweep.total
            phase("sweep", f"{n:,} predictions ({args.models} models × {sweep.n_variants:,} variants, "
                  f"{sweep.batches.count():,} batches of {args.batch_size}) on {args.workers} workers: run_create "
                  f"{t_create:.1f} s; last prediction written at {w:.0f} s = {n / w:,.0f}/s; scored at {s:.0f} s "
                  f"(scoring {s - w:.0f} s); {check_complete(sweep.pk)}")
            floors = clone_copy(Prediction._meta.db_table,
                                tuple(f.column for f in Prediction._meta.concrete_fields if f.column != "id"),
                                f"WHERE run_id = {sweep.pk}", tmp)
            phase("prediction floor", "; ".join(
                f"bare COPY of the same {fn:,} rows, {name}: {fs:.0f} s = {fn / fs:,.0f}/s, platform rate / floor "
                f"rate {n / w / (fn / fs):.2f}" for name, (fs, fn) in floors.items()) + " (target >= 0.50)")

            # 4. a worker killed with SIGKILL halfway
            if not args.no_kill:
                kill = run_create(name="kill", endpoints=endpoints[:2], actor=None, batch_size=args.batch_size,
                                  split="all")
                state = {"killed": False}

                def maybe_kill() -> None:
                    if not state["killed"] and Prediction.objects.filter(run_id=kill.pk).count() >= kill.total // 2:
                        victim = workers.procs[-1]
                        workers.kill(victim)
                        state["killed"] = True
                        workers.start()

                w, s = wait_run(kill.pk, on_progress=maybe_kill)
                phase("SIGKILL run", f"{kill.total:,} predictions, a worker killed at half: written at {w:.0f} s, "
                      f"scored at {s:.0f} s; {check_complete(kill.pk)}")
        finally:
            workers.stop()
        for name, rss in sorted(workers.peak.items()):
            phase("peak RSS", f"{name}: {rss:,.0f} MiB")
        phase("peak RSS", f"this process: {peak_rss_mib():,.0f} MiB")

        # 5. pages
        make_cases(list(QAItem.objects.order_by("pk").values_list("pk", flat=True)[args.small:]), sweep.pk, users,
                   0.2, seed=2)
        from django.core.cache import cache
        from django.db import connection

        with connection.cursor() as cur:
            # what autovacuum does after a bulk write anyway (statistics, the visibility map that lets an
            # index-only scan count and skip): done first, so the pages are timed in the steady state and not
            # beside the vacuum of millions of new rows
            cur.execute("VACUUM ANALYZE")
        cache.clear()
        from common.collector import freeze_startup

        freeze_startup()    # what medr2/wsgi.py does in the served process: full collections skip start-up's objects
        big_pages = time_pages(sweep.pk, users, args.requests)
        small_q = {(p["page"], p["user"]): p["queries"] for p in small_pages}
        for p in big_pages:
            same = "same" if small_q.get((p["page"], p["user"])) == p["queries"] else \
                f"small run: {small_q.get((p['page'], p['user']))}"
            flag = "" if p["p95"] <= TARGET_MS else "  OVER"
            phase("page", f"{p['page']:<36} {p['user']:<12} p50 {p['p50']:6.0f} ms  p95 {p['p95']:6.0f} ms{flag}  "
                  f"queries {p['queries']} ({same})")
        print("\n## summary\n")
        for name, text in phases:
            print(f"- {name}: {text}")


if __name__ == "__main__":
    main()
