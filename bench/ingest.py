#!/usr/bin/env python
"""Ingest throughput: the platform's importer against a bare decode-and-write loop, a re-import of the
same files, and the parallel import on 1 and N real Celery worker processes.

    .venv/bin/python bench/ingest.py --count 200                              # SQLite in a temp dir
    .venv/bin/python bench/ingest.py --count 200 --postgres --repeat 3        # PostgreSQL (--database, recreated)
    .venv/bin/python bench/ingest.py --count 200 --postgres --workers 2       # + 1 vs 2 `celery worker` processes

Each repetition writes N fresh synthetic phantom DICOM files (a new seed) and times, in this process:

- **bare**: decode (pydicom), window to 8 bit, PNG (zlib level 6, Pillow's default — the platform's
  level too), write one file per image; nothing else.
- **platform**: `images_import` over the folder, what `manage.py import_images` does: read, hash the decoded
  frames, de-identify (PS3.15 Annex E), render, PNG, store the de-identified source and the PNG
  (content-addressed, fsync + rename), rows + one audit event per file.
- **re-import** (unless `--no-reimport`): the same folder again: every file is a duplicate, recognised
  from the hash of its decoded frames before de-identification and rendering.

Ratios are medians over the repetitions, both sides measured in the same run. With `--workers N` the
parallel import (`images_import_dispatch`: chunks on queue `cpu`, one batch) runs on a fresh folder with
1 worker process and then with N (`celery -A medr2 worker -Q cpu --concurrency=1` each, started and pinged
before the clock starts; broker Redis db 10, flushed): timed from dispatch until the batch is finished.
The load average is printed: on a shared machine the ratios move with the neighbours' load.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _django import ROOT, busy_cores, cpu_ticks, peak_rss_mib, setup_django

BROKER = "redis://127.0.0.1:6379/10"


def bare_loop(paths: list[Path], out_dir: Path) -> tuple[float, float]:
    """Seconds (wall, CPU of this process) for the bare loop over `paths`."""
    import numpy as np
    import pydicom
    from PIL import Image

    out_dir.mkdir(parents=True, exist_ok=True)
    start, cpu = time.perf_counter(), time.process_time()
    for i, path in enumerate(paths):
        ds = pydicom.dcmread(path)
        arr = (ds.pixel_array.astype(np.float32) * float(ds.get("RescaleSlope", 1))
               + float(ds.get("RescaleIntercept", 0)))
        lo, hi = np.percentile(arr, (0.5, 99.5))
        img = np.clip((arr - lo) / max(hi - lo, 1e-6) * 255.0, 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG", compress_level=6)
        (out_dir / f"{i}.png").write_bytes(buf.getvalue())
    return time.perf_counter() - start, time.process_time() - cpu


def phantom_folder(root: Path, count: int, seed: int) -> tuple[Path, list[Path]]:
    """`count` phantom DICOMs alone in a folder (their ground-truth JSON moved aside)."""
    from annotation.phantoms import write_phantoms

    folder = root / f"phantoms-{seed}"
    paths = write_phantoms(folder, count, seed=seed)
    truth = root / f"truth-{seed}"
    truth.mkdir()
    for p in folder.glob("*.json"):
        p.rename(truth / p.name)
    return folder, paths


def timed_import(folder: Path) -> tuple[float, float, object]:
    from annotation.services.images import images_import, path_sources

    start, cpu = time.perf_counter(), time.process_time()
    batch = images_import(sources=path_sources([folder]), actor=None)
    return time.perf_counter() - start, time.process_time() - cpu, batch


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def process_cpu(procs: list[subprocess.Popen]) -> dict[str, float]:
    """CPU seconds so far of the worker processes (each with its pool children), of every PostgreSQL process
    (backends, autovacuum, checkpointer) and of the kernel's worker threads (kworker, jbd2: writeback, the
    journal and whatever else the kernel defers; no user process is charged with it)."""
    import psutil

    def total(proc) -> float:
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            return t.user + t.system
        return 0.0

    out = {"workers": 0.0, "postgres": 0.0, "kernel": 0.0, "this": time.process_time()}
    for p in procs:
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(p.pid)
            out["workers"] += total(root) + sum(total(c) for c in root.children(recursive=True))
    for p in psutil.process_iter(["name"]):
        name = p.info["name"] or ""
        if name.startswith("postgres"):
            out["postgres"] += total(p)
        elif name.startswith(("kworker", "jbd2", "ksoftirqd", "kswapd")):
            out["kernel"] += total(p)
    return out


def start_workers(n: int, logdir: Path) -> list[subprocess.Popen]:
    from medr2.celery import app

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs = [subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "medr2", "worker", "-Q", "cpu", "--concurrency=1",
         "--prefetch-multiplier=1", "-n", f"bench-ingest-{i}@%h", "--without-gossip", "--without-mingle",
         "--loglevel=WARNING"], cwd=ROOT, env=env, stdout=open(logdir / f"worker-{n}-{i}.log", "w"),
        stderr=subprocess.STDOUT, start_new_session=True) for i in range(n)]
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if len(app.control.ping(timeout=0.5) or []) >= n:
            return procs
    raise RuntimeError(f"{n} worker(s) did not start; see {logdir}")


def stop_workers(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def parallel_import(folder: Path, workers: int, logdir: Path, chunk_files: int) -> tuple[float, object]:
    from annotation.services.ingest_parallel import images_import_dispatch

    procs = start_workers(workers, logdir)
    try:
        time.sleep(1)  # let the workers settle after their start-up
        start, ticks, cpu = time.perf_counter(), cpu_ticks(), process_cpu(procs)
        batch = images_import_dispatch(paths=[folder], actor=None, chunk_files=chunk_files)
        while batch.finished_at is None:
            time.sleep(0.05)
            batch.refresh_from_db()
        seconds = time.perf_counter() - start
        machine = busy_cores(ticks, cpu_ticks())
        used = {k: v - cpu[k] for k, v in process_cpu(procs).items()}
        print(f"    (the whole machine kept {machine:.2f} of {os.cpu_count()} cores busy meanwhile: the workers "
              f"{used['workers'] / seconds:.2f}, PostgreSQL {used['postgres'] / seconds:.2f}, the kernel's worker "
              f"threads {used['kernel'] / seconds:.2f}, this process {used['this'] / seconds:.2f}, the rest "
              f"(Redis, the neighbours) {max(0.0, machine - sum(used.values()) / seconds):.2f})", flush=True)
        return seconds, batch
    finally:
        stop_workers(procs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--postgres", action="store_true",
                        help="use PostgreSQL on 127.0.0.1:5432 (database --database, dropped and recreated)")
    parser.add_argument("--database", default="medr2_bench_ingest", help="PostgreSQL database name")
    parser.add_argument("--repeat", type=int, default=1, help="repetitions of bare / platform / re-import")
    parser.add_argument("--no-reimport", dest="reimport", action="store_false")
    parser.add_argument("--workers", type=int, default=0,
                        help="also import through 1 and N real Celery worker processes (needs --postgres)")
    parser.add_argument("--chunk-files", type=int, default=16, help="files per chunk for --workers")
    args = parser.parse_args()
    if args.workers and not args.postgres:
        parser.error("--workers needs --postgres (worker processes share the database)")

    with tempfile.TemporaryDirectory(prefix="medr2-bench-") as tmp_name:
        tmp = Path(tmp_name)
        if args.workers:
            subprocess.run(["redis-cli", "-n", BROKER.rsplit("/", 1)[1], "FLUSHDB"], check=True, capture_output=True)
        backend = setup_django(tmp, args.postgres, broker=BROKER if args.workers else None, database=args.database)
        rows = []
        idle_probe = cpu_ticks()
        time.sleep(2)
        print(f"  before the run, other processes kept {busy_cores(idle_probe, cpu_ticks()):.2f} of "
              f"{os.cpu_count()} cores busy", flush=True)
        print(f"ingest benchmark: {args.count} phantom DICOM files per set, database {backend}; load {load()}",
              flush=True)
        for rep in range(args.repeat):
            folder, paths = phantom_folder(tmp, args.count, seed=12345 + rep)
            size = sum(p.stat().st_size for p in paths) / len(paths) / 1024
            bare, bare_cpu = bare_loop(paths, tmp / f"bare-out-{rep}")
            platform, cpu, batch = timed_import(folder)
            assert batch.files_imported == len(paths), f"only {batch.files_imported}/{len(paths)} imported"
            again = None
            if args.reimport:
                again, _, dup = timed_import(folder)
                assert dup.files_duplicate == len(paths), f"{dup.files_duplicate}/{len(paths)} duplicates"
            rows.append((bare, platform, again, bare_cpu, cpu))
            n = len(paths)
            print(f"  [{rep + 1}] {size:.0f} KiB/file  bare {n / bare:6.1f}/s  platform {n / platform:6.1f}/s  "
                  f"ratio {platform / bare:.2f}x (CPU of this process {bare_cpu / n * 1000:.1f} vs "
                  f"{cpu / n * 1000:.1f} ms/file: {cpu / bare_cpu:.2f}x)"
                  + (f"  re-import {n / again:6.1f}/s  first/re-import {platform / again:.1f}x" if again else "")
                  + f"  load {load()}", flush=True)
        n = args.count
        bare = statistics.median(r[0] for r in rows)
        platform = statistics.median(r[1] for r in rows)
        print(f"  bare decode+write loop : {n / bare:8.1f} images/s  (median {bare:.2f} s)")
        print(f"  platform import        : {n / platform:8.1f} images/s  (median {platform:.2f} s)")
        print(f"  ratio platform / bare  : {statistics.median(r[1] / r[0] for r in rows):8.2f}x (median; "
              f"CPU of this process {statistics.median(r[4] / r[3] for r in rows):.2f}x)")
        if args.reimport:
            again = statistics.median(r[2] for r in rows)
            print(f"  re-import (all dups)   : {n / again:8.1f} files/s   (median {again:.2f} s)")
            print(f"  first import / re-import: {statistics.median(r[1] / r[2] for r in rows):7.1f}x faster (median)")
        if args.workers:
            logdir = tmp / "worker-logs"
            logdir.mkdir()
            ratios = []
            for rep in range(args.repeat):  # 1 then N, N then 1, ...: both sides share the neighbours' drift
                times = {}
                for k in ((1, args.workers) if rep % 2 == 0 else (args.workers, 1)):
                    folder, _ = phantom_folder(tmp, args.count, seed=54321 + 10 * rep + k)
                    seconds, batch = parallel_import(folder, k, logdir, args.chunk_files)
                    assert batch.files_imported == args.count, f"{batch.files_imported}/{args.count} imported"
                    times[k] = seconds
                    print(f"  [{rep + 1}] {k} worker process(es): {n / seconds:8.1f} images/s  ({seconds:.2f} s, "
                          f"chunks of {args.chunk_files}; load {load()})", flush=True)
                ratios.append(times[1] / times[args.workers])
            print(f"  {args.workers} workers / 1 worker  : {statistics.median(ratios):8.2f}x the throughput (median of "
                  f"{', '.join(f'{r:.2f}' for r in ratios)})")
    print(f"  peak RSS               : {peak_rss_mib():8.0f} MiB")


if __name__ == "__main__":
    main()
