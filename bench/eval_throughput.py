#!/usr/bin/env python
"""Evaluation throughput through real Celery workers, Redis and PostgreSQL, against bare baselines.

    .venv/bin/python bench/eval_throughput.py                       # both parts (PostgreSQL + Redis db 13)
    .venv/bin/python bench/eval_throughput.py --part overhead --variants 100000
    .venv/bin/python bench/eval_throughput.py --part vlm --vlm-images 60

(a) platform overhead: the `null` backend (instant answers) on >= N variants. Timed from run_create
    (dispatch included) until the last batch is written, and until the run is scored; workers are
    `celery worker -Q cpu --concurrency=W`. Baseline: a bare `COPY ... FROM STDIN` (psycopg 3) of the
    very Prediction rows the platform wrote — dumped untimed, the table emptied, then copied back with
    the same columns, 50,000 rows per transaction, from this process into the same database
    (bench/_copy.py; best of `--baseline-repeat`). `--profile-worker FILE` also runs one batch in this
    process under cProfile (after the timed run, on a second run of the same variants).
(b) a random-init VLM big enough that one generation takes >= 20 ms, through one worker
    (`-Q gpu --concurrency=1`, model warmed up by a one-batch run first) vs a bare loop in this
    process over the same variants: open image, build request, batched `generate`; and batched vs
    one-by-one generation on the same items.
(c) `--part batch`: one worker's batch path in this process (no Celery): `--batch-models` null models over
    the same `--batch-slices` slices of 1,000 variants in dispatch order; CPU and wall time per prediction.
Set-up (untimed): a fresh database (`--database`, default `medr2_bench`); for (a) synthetic images
with phantom ground truth (no pixels needed: the null backend does not read images); for (b) real
phantom DICOMs imported through the pipeline.
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _django import ROOT, setup_django

BROKER = "redis://127.0.0.1:6379/13"


def flush_broker() -> None:
    subprocess.run(["redis-cli", "-n", BROKER.rsplit("/", 1)[1], "FLUSHDB"], check=True, capture_output=True)


def start_worker(queue: str, concurrency: int, log: Path, pool: str = "prefork") -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "medr2", "worker", "-Q", queue, f"--concurrency={concurrency}",
         "--prefetch-multiplier=1", f"--pool={pool}", "-n", f"bench-{queue}@%h", "--without-gossip", "--without-mingle",
         "--loglevel=INFO"], cwd=ROOT, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT,
        start_new_session=True)
    from medr2.celery import app

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if app.control.ping(timeout=0.5):
            return proc
    raise RuntimeError(f"worker did not start; see {log}")


def stop_worker(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def follow(run, *, poll: float = 0.2) -> tuple[float, float]:
    """Seconds from now until every batch is done, and until the run is finished and scored."""
    from workers.models import EvaluationRun, RunBatch

    t0 = time.perf_counter()
    t_written = None
    while True:
        if t_written is None and not RunBatch.objects.filter(run=run).exclude(status="done").exists():
            t_written = time.perf_counter() - t0
        status, scored = EvaluationRun.objects.filter(pk=run.pk).values_list("status", "scored_at").get()
        if status not in ("pending", "running") and scored is not None:
            return t_written or time.perf_counter() - t0, time.perf_counter() - t0
        if status == "failed":
            raise RuntimeError(f"run {run.pk} failed")
        time.sleep(poll)


def bare_prediction_copy(tmp: Path, repeat: int) -> tuple[float, int]:
    """The predictions the platform wrote, dumped (untimed), the table emptied, then COPYed back (timed,
    best of `repeat`): (seconds, rows). The table ends as the platform left it."""
    from _copy import copy_back, dump_tables, truncate

    from workers.models import Prediction

    table = Prediction._meta.db_table
    dump = dump_tables([(table, tuple(f.column for f in Prediction._meta.concrete_fields))], directory=tmp)[table]
    best = (float("inf"), 0)
    for _ in range(repeat):
        truncate([table])
        best = min(best, copy_back(dump))
    return best


def profile_one_batch(run, path: str) -> None:
    """cProfile of `batch_execute` on one batch of a new run over the same variants (null backend)."""
    import cProfile

    from workers.models import EvaluationRun, RunBatch
    from workers.services.execution import batch_execute

    batch = RunBatch.objects.filter(run=run).order_by("index").first()
    copy = EvaluationRun.objects.create(name="profile", status=EvaluationRun.Status.RUNNING)
    one = RunBatch.objects.create(run=copy, endpoint=batch.endpoint, index=0, variant_ids=batch.variant_ids,
                                  size=len(batch.variant_ids))
    profiler = cProfile.Profile()
    profiler.runcall(batch_execute, batch_id=one.pk)
    profiler.dump_stats(path)
    print(f"    profile of one batch ({len(batch.variant_ids)} variants) written to {path}")


def part_overhead(args, tmp: Path) -> None:
    from generate import populate

    from annotation.models import Image, QAItem
    from annotation.services.chains import chains_generate
    from annotation.services.variants import variants_generate
    from workers.services.endpoints import endpoint_create
    from workers.services.runs import run_create

    n_images = math.ceil(args.variants / 45) + 10
    t0 = time.perf_counter()
    populate(n_images)
    chains_generate(image_ids=list(Image.objects.values_list("pk", flat=True)), actor=None, seed=0, batch_size=1000)
    QAItem.objects.update(status=QAItem.Status.APPROVED)
    variants_generate(items=list(QAItem.objects.values_list("pk", flat=True)), actor=None, seed=0, batch_size=1000)
    t_setup = time.perf_counter() - t0
    endpoint = endpoint_create(name="null", backend="null", actor=None)
    flush_broker()
    worker = start_worker("cpu", args.workers, tmp / "worker-cpu.log")
    try:
        t0 = time.perf_counter()
        run = run_create(name="overhead", endpoints=[endpoint], actor=None, batch_size=args.batch_size, split="all")
        t_create = time.perf_counter() - t0
        t_written, t_scored = follow(run)
    finally:
        stop_worker(worker)
    t_written += t_create
    t_scored += t_create
    n = run.total
    bare_s, bare_n = bare_prediction_copy(tmp, args.baseline_repeat)
    if args.profile_worker:
        profile_one_batch(run, args.profile_worker)
    rate, bare = n / t_written, bare_n / bare_s
    print(f"(a) platform overhead: null backend, {n} predictions, batches of {args.batch_size}, "
          f"{args.workers} worker processes, PostgreSQL + Redis   (set-up {t_setup:.0f} s, untimed)")
    print(f"    run_create (select + {run.batches.count()} batch rows + dispatch): {t_create:6.2f} s")
    print(f"    all predictions written : {t_written:6.1f} s = {rate:8.0f} predictions/s")
    print(f"    scored (metrics stored) : {t_scored:6.1f} s = {n / t_scored:8.0f} predictions/s end to end")
    print(f"    bare COPY of the same {bare_n} rows (best of {args.baseline_repeat}): {bare_s:6.1f} s = "
          f"{bare:8.0f} rows/s")
    print(f"    ratio platform / bare rate: {rate / bare:5.2f}  (target >= 0.50; >= 5,000 predictions/s)")


def part_batch(args, tmp: Path) -> None:
    """(c) one worker's batch path in this process: `--batch-models` null models, each run over the same
    `--batch-slices` slices of 1,000 variants in dispatch order (slice by slice, model by model), as one worker
    process sees them; CPU and wall time per prediction, after one warm-up batch."""
    from generate import populate

    from annotation.models import Image, QAItem, Variant
    from annotation.services.chains import chains_generate
    from annotation.services.variants import variants_generate
    from workers.models import EvaluationRun, RunBatch
    from workers.services.endpoints import endpoint_create
    from workers.services.execution import batch_execute

    n = args.batch_slices * 1000
    populate(math.ceil(n / 45) + 10)
    chains_generate(image_ids=list(Image.objects.values_list("pk", flat=True)), actor=None, seed=0, batch_size=1000)
    QAItem.objects.update(status=QAItem.Status.APPROVED)
    variants_generate(items=list(QAItem.objects.values_list("pk", flat=True)), actor=None, seed=0, batch_size=1000)
    ids = list(Variant.objects.order_by("pk").values_list("pk", flat=True)[:n])
    slices = [ids[s:s + 1000] for s in range(0, len(ids), 1000)]
    models = [endpoint_create(name=f"null-{k}", backend="null", actor=None) for k in range(args.batch_models)]

    def batches() -> list[int]:
        run = EvaluationRun.objects.create(name="batch", status=EvaluationRun.Status.RUNNING)
        return [RunBatch.objects.create(run=run, endpoint=m, index=k * len(models) + j, variant_ids=s, size=len(s)).pk
                for k, s in enumerate(slices) for j, m in enumerate(models)]

    batch_execute(batch_id=batches()[0])   # warm-up: imports, connection, caches of parsing
    try:   # nothing kept from the warm-up's variants (the code before issue 19's last changes kept none)
        from workers.services.execution import _INPUTS
        _INPUTS.clear()
    except ImportError:
        pass
    todo = batches()
    c0, w0 = time.process_time(), time.perf_counter()
    for pk in todo:
        batch_execute(batch_id=pk)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    n_pred = len(ids) * len(models)
    print(f"(c) one worker's batches in-process: {len(todo)} batches ({len(slices)} slices x {len(models)} null "
          f"models), {n_pred} predictions: CPU {cpu * 1e6 / n_pred:.1f} us and wall {wall * 1e6 / n_pred:.1f} us "
          f"per prediction ({n_pred / wall:,.0f}/s)")


def part_vlm(args, tmp: Path) -> None:
    import json

    from annotation.models import QAItem, Variant
    from annotation.phantoms import write_phantoms
    from annotation.services.chains import chains_generate
    from annotation.services.demo import PHANTOM_DATASET, PHANTOM_LICENSE, _ground_truth_findings
    from annotation.services.images import BytesSource, ImportDefaults, images_import
    from annotation.services.variants import variants_generate
    from workers.backends import clear_backend_cache, load_backend
    from workers.models import Prediction, RunBatch
    from workers.services.endpoints import endpoint_create
    from workers.services.execution import IMAGE_FIELDS, VARIANT_FIELDS, _requests
    from workers.services.runs import run_create
    from workers.tiny_vlm import build_tiny_vlm, describe_tiny_vlm

    src = tmp / "phantoms"
    paths = write_phantoms(src, args.vlm_images, seed=11)
    truths = {p.name: json.loads(p.with_suffix(".json").read_text()) for p in paths}
    batch = images_import(sources=[BytesSource(p.name, p.read_bytes()) for p in paths], actor=None,
                          defaults=ImportDefaults(source_dataset=PHANTOM_DATASET, license=PHANTOM_LICENSE))
    for result in batch.files.all():
        for image in result.images.all():
            _ground_truth_findings(image, truths[result.name], None)
    chains_generate(image_ids=list(batch.images.values_list("pk", flat=True)), actor=None, seed=0)
    QAItem.objects.update(status=QAItem.Status.APPROVED)
    variants_generate(items=list(QAItem.objects.values_list("pk", flat=True)), actor=None, seed=0,
                      kinds=args.vlm_kinds.split(","))
    model_dir = build_tiny_vlm(tmp / "vlm", hidden_size=args.vlm_hidden, num_layers=args.vlm_layers, num_heads=8,
                               seed=0)
    params = {"path": str(model_dir), "max_new_tokens": args.vlm_tokens, "batch_size": args.vlm_batch}
    endpoint = endpoint_create(name="vlm", backend="transformers", parameters=params, actor=None)
    ids = list(Variant.objects.order_by("pk").values_list("pk", flat=True))

    # bare: this process, same variants, same requests, same batch size
    backend = load_backend("transformers", params)
    rows = {r["pk"]: r for r in Variant.objects.filter(pk__in=ids).values(*VARIANT_FIELDS, *IMAGE_FIELDS)}
    one = _requests([rows[ids[0]]], endpoint, True)[0]
    backend.generate(one)  # warm-up
    t0 = time.perf_counter()
    for _ in range(5):
        backend.generate(one)
    single_ms = (time.perf_counter() - t0) / 5 * 1000

    def bare(batch_size: int, subset: list[int]) -> float:
        t0 = time.perf_counter()
        for s in range(0, len(subset), batch_size):
            requests, _ = _requests([rows[i] for i in subset[s:s + batch_size]], endpoint, True)
            backend.generate(requests)
        return time.perf_counter() - t0

    t_bare_before = bare(args.vlm_batch, ids)
    subset = ids[: args.one_by_one]
    t_sub_batched, t_sub_single = bare(args.vlm_batch, subset), bare(1, subset)
    backend.close()
    clear_backend_cache()

    flush_broker()
    worker = start_worker("gpu", 1, Path(tempfile.gettempdir()) / "medr2-bench-worker-gpu.log", pool=args.gpu_pool)
    try:
        warm = run_create(name="warm-up", endpoints=[endpoint], actor=None, split="all", item_filters={"item_ids": [
            Variant.objects.get(pk=ids[0]).item_id]}, batch_size=args.vlm_batch)
        follow(warm)
        t0 = time.perf_counter()
        run = run_create(name="vlm", endpoints=[endpoint], actor=None, batch_size=args.run_batch, split="all")
        t_create = time.perf_counter() - t0
        t_written, _ = follow(run)
    finally:
        stop_worker(worker)
    t_platform = t_create + t_written
    gen_s = sum(Prediction.objects.filter(run=run).values_list("latency_ms", flat=True)) / 1000
    # the bare loop again, after the worker run: the machine's speed drifts; compare with the mean
    backend = load_backend("transformers", params)
    backend.generate(one)
    t_bare_after = bare(args.vlm_batch, ids)
    backend.close()
    t_bare = (t_bare_before + t_bare_after) / 2
    n = len(ids)
    print(f"(b) VLM: random-init LLaVA {describe_tiny_vlm(model_dir).get('parameters', '?')} parameters "
          f"(hidden {args.vlm_hidden}, {args.vlm_layers} layers), {args.vlm_tokens} new tokens, "
          f"{n} variants ({args.vlm_kinds}) on {args.vlm_images} phantom images")
    print(f"    one generation (batch of 1, warm)       : {single_ms:7.1f} ms  (target >= 20 ms)")
    print(f"    bare batched loop (batch {args.vlm_batch}), before/after: {t_bare_before:5.1f} / {t_bare_after:5.1f} s,"
          f" mean {t_bare:5.1f} s = {n / t_bare:6.2f} variants/s")
    print(f"    through a Celery worker (run batches {args.run_batch}): "
          f"{t_platform:7.1f} s = {n / t_platform:6.2f} variants/s")
    print(f"    of which generation inside the worker    : {gen_s:7.1f} s "
          f"({100 * gen_s / t_platform:.0f}% of the wall time)")
    print(f"    ratio platform / bare throughput         : {t_bare / t_platform:5.2f}  (target >= 0.90)")
    print(f"    batched vs one-by-one on {len(subset)} variants   : "
          f"{t_sub_single / t_sub_batched:5.2f}x faster batched "
          f"({len(subset) / t_sub_batched:.2f} vs {len(subset) / t_sub_single:.2f} variants/s)")
    print(f"    batches: {RunBatch.objects.filter(run=run).count()}, attempts "
          f"{sum(RunBatch.objects.filter(run=run).values_list('attempts', flat=True))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["overhead", "vlm", "both", "batch"], default="both")
    parser.add_argument("--batch-models", type=int, default=7, help="(c): models over the same slices")
    parser.add_argument("--batch-slices", type=int, default=8, help="(c): slices of 1,000 variants")
    parser.add_argument("--variants", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--database", default="medr2_bench", help="PostgreSQL database (dropped and recreated)")
    parser.add_argument("--baseline-repeat", type=int, default=3, help="the bare COPY's best of this many")
    parser.add_argument("--profile-worker", help="(a): also cProfile one batch in this process, to this file")
    parser.add_argument("--vlm-images", type=int, default=40)
    parser.add_argument("--vlm-kinds", default="clean,misleading_hint,correct_hint",
                        help="text-only kinds by default: rendered images would be cached by whichever side runs first")
    parser.add_argument("--gpu-pool", default="prefork", choices=["prefork", "solo"])
    parser.add_argument("--vlm-hidden", type=int, default=256)
    parser.add_argument("--vlm-layers", type=int, default=4)
    parser.add_argument("--vlm-tokens", type=int, default=8)
    parser.add_argument("--vlm-batch", type=int, default=8)
    parser.add_argument("--run-batch", type=int, default=64, help="variants per Celery task in (b) (the run default)")
    parser.add_argument("--one-by-one", type=int, default=32, help="variants for the batched vs one-by-one check")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    with tempfile.TemporaryDirectory(prefix="medr2-bench-") as tmp:
        os.environ["MEDR2_STORAGE_ROOT"] = str(Path(tmp) / "storage")
        os.environ["HF_HUB_OFFLINE"] = "1"
        setup_django(Path(tmp), postgres=True, broker=BROKER, database=args.database)
        if args.part == "batch":
            part_batch(args, Path(tmp))
        if args.part in ("overhead", "both"):
            part_overhead(args, Path(tmp))
        if args.part in ("vlm", "both"):
            if args.part == "both":
                setup_django_reset()
            part_vlm(args, Path(tmp))


def setup_django_reset() -> None:
    """A clean slate between the parts (same database, content removed)."""
    from django.core.management import call_command

    call_command("flush", "--noinput", verbosity=0)
    from django.contrib.auth.models import Group

    from accounts.roles import Role
    from annotation.models import Stage, TaskCategory
    from annotation.taxonomy_seed import seed_taxonomy

    seed_taxonomy(Stage, TaskCategory, with_rules=True)
    for role in Role:
        Group.objects.get_or_create(name=role.value)


if __name__ == "__main__":
    main()
