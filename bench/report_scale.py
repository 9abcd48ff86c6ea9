#!/usr/bin/env python
"""Model report at the paper's scale (issue 16: "a report for ... under 5 minutes for a paper-scale run
(110k items, 14 models), in bounded memory"), through the platform's own lifecycle, on PostgreSQL.

    .venv/bin/python bench/report_scale.py                       # 42,432 images, ~110k approved items, 14 models
    .venv/bin/python bench/report_scale.py --reuse               # keep the filled database medr2_scale
    .venv/bin/python bench/report_scale.py --reuse --profile     # + cProfile of the full-scale build
    .venv/bin/python bench/report_scale.py --images 4000 --items 10400   # quick

Set-up (untimed; database `medr2_scale`, dropped and recreated unless `--reuse` finds the runs):
- `--images` Image rows with the findings and boxes of synthetic phantoms (bench/generate.py's populate);
- `chains_generate` over every image (the platform's generator: ~3.4 items per image in 4-stage chains);
- chains approved in id order until `--items` current items are approved (the rest stay draft, as
  unreviewed items would); the approval is a bulk UPDATE, not `qa_items_review`;
- `variants_generate` (every variant kind, the platform's generator) for the approved items whose image is
  in the **test** split — the only variants a test-split run reads (train / val items get none here,
  which changes nothing the report reads except the length of the audit chain it verifies);
- `--models` endpoints (`endpoint_create`; 12 `transformers` models and 2 blind baselines by default);
- two runs created by `run_create` on the test split (start=False, batches as a real run has them): the
  **full** run (every approved test item, every kind) and an **MR-only** run (`item_filters.modality`:
  about 28 % of the variants), each with one Prediction per (model, variant) written by COPY with
  bench/scoring.py's realistic mix (outcomes, parse methods, parsed letters, boxes + IoU, cue adoption),
  each model with its own accuracy; then status completed.

Timed, each in a fresh subprocess:
1. `run_score` of each run (the real scoring service; the adjudication detection it sends after commit is
   a separate task, not sent). Not the report's time, but the report needs it.
2. the report: `report_create` (3 criteria) + `report_generate(queue=False)` + `report_version_build`
   (document + figures + HTML + PDF: the worker's job), wall time per step and the process's peak RSS
   (ru_maxrss) beside its RSS before the build. Bounded memory means peak RSS that does not grow with the
   number of predictions: the two runs show whether it does.
Prints a markdown table row per scale (and with `--profile` the top functions of the full build).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DB = "medr2_scale"
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
TARGET_S = 300.0
# the two runs: every approved test item, and the MR items only (a real run shape, ~28 % of the variants).
# Not `item_filters.item_ids`: the report prints a run's filters in full (see docs/benchmarks.md)
SCALES = {"full": None, "mr": {"modality": ["MR"]}}
CRITERIA = [{"metric": "chain_accuracy", "model": "*", "op": ">=", "threshold": 0.5},
            {"metric": "stage.S4.accuracy", "model": "*", "op": ">=", "threshold": 0.4, "on": "lo"},
            {"metric": "robustness.misleading_hint.harmful_flip_rate", "model": "*", "op": "<=", "threshold": 0.2}]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def environment(tmp: Path, signing_key: str = "") -> dict[str, str]:
    env = {**os.environ, "MEDR2_DEBUG": "0", "SECRET_KEY": os.environ.get("SECRET_KEY", "medr2-benchmark-only"),
           "MEDR2_VAR_DIR": str(tmp / "var"), "MEDR2_STORAGE_ROOT": str(tmp / "storage"),
           "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB}", "DJANGO_SETTINGS_MODULE": "medr2.settings",
           "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1", "MEDR2_SIGNING_KEY": signing_key}
    env.pop("CELERY_BROKER_URL", None)     # nothing is sent (dispatch is stubbed where the code would send)
    env.pop("CELERY_RESULT_BACKEND", None)
    return env


def django_setup() -> None:
    sys.path[:0] = [str(ROOT), str(BENCH)]
    import django

    django.setup()


def _rss_now_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _no_dispatch() -> None:
    import common.dispatch as dispatch

    dispatch.send = lambda task, *a, **kw: True


# ---------------------------------------------------------------- set-up

def _database_exists() -> bool:
    """bench/scoring.py's helpers (the same PostgreSQL server and admin URL), on this bench's database."""
    import scoring as scoring_bench

    return scoring_bench._database_exists(DB)


def _recreate_database() -> None:
    import scoring as scoring_bench

    scoring_bench._recreate_database(DB)


def run_names(args) -> dict[str, str]:
    base = f"scale {args.images} images {args.items} items {args.models} models seed {args.seed}"
    return {"full": f"{base}: full", "mr": f"{base}: MR only"}


def setup(args) -> dict[str, int]:
    """{scale: run id}, filling the database unless `--reuse` finds both runs."""
    if not (args.reuse and _database_exists()):
        _recreate_database()
    django_setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from workers.models import EvaluationRun

    names = run_names(args)
    found = {k: EvaluationRun.objects.filter(name=n, status="completed").order_by("-pk").first()
             for k, n in names.items()}
    if args.reuse and all(r is not None and r.predictions.count() == r.total for r in found.values()):
        log("set-up: reusing " + ", ".join(f"run {r.pk} ({r.total:,} predictions)" for r in found.values()))
        return {k: r.pk for k, r in found.items()}
    from annotation.models import Variant
    from workers.models import ModelEndpoint

    if args.reuse and Variant.objects.exists() and ModelEndpoint.objects.count() == args.models:
        keep = [r.pk for r in found.values() if r is not None and r.predictions.count() == r.total]
        log(f"set-up: reusing the content, the endpoints and runs {keep}; the other runs are made again")
        EvaluationRun.objects.exclude(pk__in=keep).delete()
        return fill_runs(args)
    if any(found.values()) or Variant.objects.exists():
        connection.close()
        _recreate_database()
        call_command("migrate", verbosity=0)
    return fill(args)


def fill(args) -> dict[str, int]:
    from generate import populate

    from accounts.roles import Role
    from accounts.services import user_create
    from annotation.models import Image, QAItem
    from annotation.services.chains import chains_generate
    from annotation.services.variants import variants_generate
    from annotation.splits import split_for_group
    from workers.services.endpoints import endpoint_create

    curator = user_create(username="scale-curator", email="curator@example.org", password="scale-Secret-123",
                          roles=[Role.CURATOR], actor=None)
    user_create(username="scale-auditor", email="auditor@example.org", password="scale-Secret-123",
                roles=[Role.AUDITOR], actor=None)
    t0 = time.perf_counter()
    populate(args.images)
    log(f"set-up: {args.images:,} images with phantom findings ({time.perf_counter() - t0:.0f} s)")
    t0 = time.perf_counter()
    image_ids = list(Image.objects.order_by("pk").values_list("pk", flat=True))
    chains = chains_generate(image_ids=image_ids, actor=curator, seed=args.seed, batch_size=1000)
    log(f"set-up: chains_generate {chains.chains:,} chains, {chains.items:,} items ({time.perf_counter() - t0:.0f} s)")

    # approve whole chains, in id order, until --items items are approved
    approved, chain_ids = 0, []
    for chain_id, n in _chain_sizes():
        if approved >= args.items:
            break
        chain_ids.append(chain_id)
        approved += n
    for start in range(0, len(chain_ids), 5000):
        QAItem.objects.filter(is_current=True, chain_id__in=chain_ids[start:start + 5000]).exclude(
            status=QAItem.Status.REJECTED).update(status=QAItem.Status.APPROVED)
    rows = (QAItem.objects.filter(is_current=True, status=QAItem.Status.APPROVED).order_by("pk")
            .values_list("pk", "chain__image__split_group"))
    groups: dict[str, str] = {}
    test_items = [pk for pk, g in rows.iterator(chunk_size=20000)
                  if groups.setdefault(g, split_for_group(g)) == "test"]
    log(f"set-up: {approved:,} items approved, {len(test_items):,} of them in the test split")
    t0 = time.perf_counter()
    summary = variants_generate(items=test_items, actor=curator, seed=args.seed, batch_size=1000)
    log(f"set-up: variants_generate {summary.variants:,} variants for the test items "
        f"({summary.variants / max(len(test_items), 1):.1f} per item, {time.perf_counter() - t0:.0f} s)")

    endpoints = []
    for m in range(args.models):
        if m < args.models - 2:
            endpoints.append(endpoint_create(name=f"vlm-{m + 1:02d}", backend="transformers", actor=curator,
                                             parameters={"model_id": f"example-org/med-vlm-{m + 1:02d}",
                                                         "max_new_tokens": 64, "temperature": 0.0},
                                             display_name=f"Med-VLM {m + 1:02d}"))
        else:
            backend = ("random", "null")[m - (args.models - 2)]
            endpoints.append(endpoint_create(name=f"{backend}-baseline", backend=backend, actor=curator,
                                             parameters={"seed": m} if backend == "random" else {}))
    return fill_runs(args)


def fill_runs(args) -> dict[str, int]:
    """The two runs over the test split and their predictions (by COPY), completed."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone
    from ui_latency import copy_rows, reset_sequences

    from workers.models import EvaluationRun, ModelEndpoint, Prediction, RunBatch
    from workers.services.runs import run_create

    curator = get_user_model().objects.get(username="scale-curator")
    endpoints = list(ModelEndpoint.objects.order_by("pk"))
    runs = {}
    names = run_names(args)
    for scale, filters in SCALES.items():
        done = EvaluationRun.objects.filter(name=names[scale], status="completed").first()
        if done is not None:
            runs[scale] = done.pk
            continue
        t0 = time.perf_counter()
        run = run_create(name=names[scale], endpoints=endpoints, actor=curator, split="test", batch_size=256,
                         item_filters=filters, start=False)
        first = (Prediction.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1
        skill = {e.pk: 0.45 + 0.35 * i / max(len(endpoints) - 3, 1) for i, e in enumerate(endpoints[:-2])}
        skill.update({e.pk: 0.30 for e in endpoints[-2:]})
        rows = predictions(run, endpoints, skill, first, random.Random(args.seed + len(runs)))
        written = copy_rows(Prediction, rows)
        reset_sequences(Prediction)
        now = timezone.now()
        EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.COMPLETED, started_at=now,
                                                       finished_at=now)
        RunBatch.objects.filter(run=run).update(status=RunBatch.Status.DONE, n_done=0)
        assert written == run.total, (written, run.total)
        log(f"set-up: {scale} run {run.pk}: {run.n_variants:,} variants × {len(endpoints)} models = "
            f"{written:,} predictions by COPY ({time.perf_counter() - t0:.0f} s)")
        runs[scale] = run.pk
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return runs


def predictions(run, endpoints, skill: dict, first: int, rng: random.Random):
    """One Prediction row (field -> value) per (variant of the run, model), bench/scoring.py's mix, each
    model answering well with its own probability."""
    import scoring as scoring_bench

    from annotation.models import Variant

    ids = _run_variant_ids(run)
    variants = []   # read before the COPY starts: the connection cannot run a query during it
    for start in range(0, len(ids), 10000):
        variants += (Variant.objects.filter(pk__in=ids[start:start + 10000]).order_by("pk")
                     .values_list("pk", "item_id", "kind", "params", "options", "expected_answer",
                                  "item__category__answer_type"))
    n = 0
    for v in variants:
        for e in endpoints:
            scoring_bench.P_CORRECT = skill[e.pk] / 0.9
            yield {"id": first + n, "run_id": run.pk, "endpoint_id": e.pk, "variant_id": v[0], "item_id": v[1],
                   **scoring_bench.synthetic_prediction(rng, *v[2:7])}
            n += 1


def _chain_sizes():
    from django.db.models import Count

    from annotation.models import QAItem

    return (QAItem.objects.filter(is_current=True).exclude(status=QAItem.Status.REJECTED).order_by("chain_id")
            .values("chain_id").annotate(n=Count("id")).values_list("chain_id", "n").iterator(chunk_size=20000))


def _run_variant_ids(run) -> list[int]:
    from workers.services.runs import run_variant_ids

    return run_variant_ids(item_filters=run.item_filters, variant_kinds=run.variant_kinds, split=run.split)


# ---------------------------------------------------------------- children (fresh processes)

def child_score(args) -> None:
    django_setup()
    _no_dispatch()
    from workers.models import EvaluationRun
    from workers.services.scoring import run_score

    EvaluationRun.objects.filter(pk=args.run_id).update(metrics=None, scored_at=None)
    run = EvaluationRun.objects.get(pk=args.run_id)
    before = _rss_now_mib()
    t0 = time.perf_counter()
    metrics = run_score(run=run, actor=None)
    elapsed = time.perf_counter() - t0
    print("RESULT " + json.dumps({"seconds": elapsed, "n_predictions": metrics["n_predictions"],
                                  "rss_before_mib": before, "peak_rss_mib": _peak_mib()}), flush=True)


def child_report(args) -> None:
    django_setup()
    _no_dispatch()
    from django.contrib.auth import get_user_model

    from reports.services import report_create, report_generate, report_version_build
    from workers.models import EvaluationRun

    auditor = get_user_model().objects.get(username="scale-auditor")
    run = EvaluationRun.objects.get(pk=args.run_id)
    before = _rss_now_mib()
    marks: dict[str, float] = {}
    profiler = None
    if args.profile_out:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    t0 = time.perf_counter()
    report = report_create(actor=auditor, title=f"Scale report run {run.pk}", runs=[run], criteria=CRITERIA,
                           scope="Benchmark of the report at the paper's scale.")
    version = report_generate(report=report, actor=auditor, queue=False)
    t1 = time.perf_counter()
    version = report_version_build(version_id=version.pk, actor=auditor,
                                   progress=lambda step, done, total: marks.setdefault(step, time.perf_counter()))
    end = time.perf_counter()
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(args.profile_out)
    assert version.status == "ready", version.error
    print("RESULT " + json.dumps({
        "create_generate": t1 - t0, "document": marks["html"] - marks["document"],
        "html": marks["pdf"] - marks["html"], "pdf": marks["done"] - marks["pdf"], "build": end - t1,
        "total": end - t0, "rss_before_mib": before, "peak_rss_mib": _peak_mib(),
        "bytes": version.summary["bytes"], "verdict": version.summary["verdict"],
        "n_predictions": run.total, "n_variants": run.n_variants}), flush=True)


def spawn(mode: str, run_id: int, env: dict, profile_out: Path | None = None) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), f"--child-{mode}", "--run-id", str(run_id)]
    if profile_out:
        cmd += ["--profile-out", str(profile_out)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    line = next((s for s in proc.stdout.splitlines() if s.startswith("RESULT ")), None)
    if proc.returncode or line is None:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-8000:])
        raise SystemExit(f"{mode} of run {run_id} FAILED (exit {proc.returncode})")
    return {**json.loads(line[len("RESULT "):]), "wall": time.perf_counter() - t0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=42_432, help="images (the paper's: 42,432)")
    parser.add_argument("--items", type=int, default=110_406, help="approved items (the paper's: 110,406)")
    parser.add_argument("--models", type=int, default=14, help="models (the paper's: 14; the last two are baselines)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reuse", action="store_true", help=f"keep database {DB} if it holds these runs")
    parser.add_argument("--skip-score", action="store_true", help="the runs are scored already (with --reuse)")
    parser.add_argument("--scales", default="mr,full")
    parser.add_argument("--profile", action="store_true", help="one more full-scale build under cProfile")
    parser.add_argument("--drop", action="store_true", help=f"drop database {DB} at the end")
    parser.add_argument("--child-score", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-report", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--run-id", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_score:
        child_score(args)
        return 0
    if args.child_report:
        child_report(args)
        return 0

    with tempfile.TemporaryDirectory(prefix="medr2-bench-report-scale-") as tmp_name:
        tmp = Path(tmp_name)
        sys.path[:0] = [str(ROOT)]
        from common.signing import generate_signing_key

        env = environment(tmp, generate_signing_key())
        os.environ.update(env)
        t0 = time.perf_counter()
        runs = setup(args)
        from django.db import connection

        connection.close()
        log(f"set-up done ({time.perf_counter() - t0:.0f} s)")
        scales = [s for s in args.scales.split(",") if s]
        scores, reports = {}, {}
        for scale in scales:
            if not args.skip_score:
                scores[scale] = spawn("score", runs[scale], env)
                s = scores[scale]
                log(f"run_score {scale} (run {runs[scale]}): {s['seconds']:.1f} s, {s['n_predictions']:,} "
                    f"predictions, peak RSS {s['peak_rss_mib']:.0f} MiB")
            reports[scale] = spawn("report", runs[scale], env)
            r = reports[scale]
            log(f"report {scale}: build {r['build']:.1f} s (document {r['document']:.1f}, HTML {r['html']:.1f}, "
                f"PDF {r['pdf']:.1f}), peak RSS {r['peak_rss_mib']:.0f} MiB")
        profile = tmp / "report.prof"
        if args.profile:
            spawn("report", runs["full"], env, profile)
        print(f"\nPostgreSQL, {args.images:,} images, {args.items:,} approved items target, {args.models} models; "
              f"test-split runs\n")
        print("| scale | variants | predictions | run_score (not the report) | score peak RSS | create + generate "
              "| document | HTML + figures | PDF | **build** | peak RSS (RSS before) | PDF / HTML / JSON |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for scale in scales:
            r, s = reports[scale], scores.get(scale)
            b = r["bytes"]
            score_s = f"{s['seconds']:.0f} s" if s else "n/a"
            score_rss = f"{s['peak_rss_mib']:,.0f} MiB" if s else "n/a"
            print(f"| {scale} | {r['n_variants']:,} | {r['n_predictions']:,} | {score_s} | {score_rss} | "
                  f"{r['create_generate']:.1f} s | {r['document']:.1f} s | {r['html']:.1f} s | {r['pdf']:.1f} s | "
                  f"**{r['build']:.1f} s** | {r['peak_rss_mib']:,.0f} MiB ({r['rss_before_mib']:.0f}) | "
                  f"{b['pdf'] / 1024:,.0f} / {b['html'] / 1024:,.0f} / {b['json'] / 1024:,.0f} KiB |")
        if "full" in reports:
            full = reports["full"]
            print(f"\nfull-scale report (create + generate + build) {full['total']:.1f} s against the "
                  f"{TARGET_S:.0f} s target: {'met' if full['total'] < TARGET_S else 'NOT met'}")
        if "full" in reports and "mr" in reports:
            q, f = reports["mr"], reports["full"]
            print(f"predictions ×{f['n_predictions'] / q['n_predictions']:.2f}: build time "
                  f"×{f['build'] / q['build']:.2f}, peak RSS ×{f['peak_rss_mib'] / q['peak_rss_mib']:.2f}")
        if args.profile and profile.exists():
            import pstats

            print("\n--- cProfile of the full-scale report (create + generate + build), by cumulative time ---")
            pstats.Stats(str(profile)).strip_dirs().sort_stats("cumulative").print_stats(40)
        if args.drop:
            import psycopg

            with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {DB}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
