#!/usr/bin/env python
"""Scoring time and memory of one large evaluation run: the reference code against the working tree,
measured in the same run, on the same database, with the same Python.

    .venv/bin/python bench/scoring.py                          # 1,000,000 predictions by 10 models
    .venv/bin/python bench/scoring.py --predictions 100000     # quick
    .venv/bin/python bench/scoring.py --reuse --repeat 3       # keep the filled database of an earlier call
    .venv/bin/python bench/scoring.py --reuse --profile        # + where the reference spends its time
    .venv/bin/python bench/scoring.py --predictions 15000000 --models 14 --setup-only   # the paper-scale run
    .venv/bin/python bench/scoring.py --predictions 15000000 --models 14 --reuse --sides new --repeat 1

Reference (`--ref`): by default commit 454f8cb3537d6b72bf7c8d8c71a0d0eeeea05d9e, the code before
issue 13. It is checked out with `git worktree add --detach` into a temporary directory (removed
afterwards); the working tree is the code under test ("new").

Set-up (untimed; with `--reuse` an existing database holding the same run is kept): PostgreSQL
database `medr2_bench_scoring` recreated and migrated by the working tree (the reference code runs
against that schema; if it cannot, the bench says so; with `--reuse` a database that already holds
enough variants only gets the new run, so runs of several sizes share one set of variants); synthetic
images with phantom ground truth -> chains -> approved items -> every variant kind through the services
(as bench/eval_throughput.py); `--models` endpoints; one completed EvaluationRun with `--predictions`
predictions written by COPY, as execution stores them: outcome answered 90 % / abstained 4 % /
unparseable 5 % / error 1 %, about 60 % correct, real parse methods, parsed letters (a list for
multi-choice), boxes with their IoU on box and joint answer + box rows, cue adoption on the cue kinds.

Timed: `workers.services.scoring.run_score(run=run, actor=None)` end to end (the table query, every
metric, the JSON stored on the run with its audit event), each call in a fresh subprocess,
alternating ref, new, ref, new, ... (`--repeat` rounds; the best of each side is reported). The
adjudication detection that run_score enqueues after commit is a separate task and is not sent (a
no-op dispatch helper in both subprocesses). Also reported: the table query alone (a
timing wrapper around run_score's `prediction_table`, or since issue 19 its `_variant_table` and
`_read_predictions`), and each subprocess's peak RSS (VmHWM)
beside its RSS just before scoring (Django and the code imported). Target: new / ref <= 1.20. The
stored metrics of the two sides are compared (`scored_at` aside): identical, or the largest relative
difference of a number. `--sides new` scores with the working tree only (the reference code holds the
whole table in memory: about 0.8 KB per prediction, 12 GiB at 15 M predictions).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
REF = "454f8cb3537d6b72bf7c8d8c71a0d0eeeea05d9e"   # the code before issue 13
DB = "medr2_bench_scoring"
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


# ---------------------------------------------------------------- child: one timed run_score

def child(args) -> None:
    """Score the run with the code under `--code-root`; print one RESULT line of JSON."""
    import gc

    code = Path(args.code_root).resolve()
    sys.path[:] = [str(code)] + [p for p in sys.path if p and Path(p).resolve() not in (BENCH, ROOT, code)]
    os.chdir(code)
    import django

    django.setup()
    import workers.services.scoring as scoring
    from workers.models import EvaluationRun

    assert Path(scoring.__file__).resolve().is_relative_to(code), scoring.__file__
    try:    # detection after commit: a separate task, not timed (the reference commit's helper, or ours)
        import annotation.tasks as dispatch
        dispatch.enqueue = lambda task, *a: True
    except ImportError:
        import common.dispatch as dispatch
        dispatch.send = lambda task, *a, **kw: True
    phases: dict[str, float] = {}
    # the reads: the whole table (before issue 19), or the variants' and the predictions' columns (after)
    for name in ("prediction_table", "_variant_table", "_read_predictions"):
        inner = getattr(scoring, name, None)
        if inner is None or (name == "prediction_table" and hasattr(scoring, "_read_predictions")):
            continue

        def timed(*a, _inner=inner, **kw):
            t0 = time.perf_counter()
            out = _inner(*a, **kw)
            phases["table"] = phases.get("table", 0.0) + time.perf_counter() - t0
            return out
        setattr(scoring, name, timed)
    # every call scores the run as it is when it finishes: not scored yet (no metrics to load)
    if not args.changed_models:
        EvaluationRun.objects.filter(pk=args.run_id).update(metrics=None, scored_at=None)
    run = EvaluationRun.objects.get(pk=args.run_id)
    gc.collect()
    rss_before = _rss_now_mib()
    profiler = None
    if args.profile_out:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    t0 = time.perf_counter()
    kw = {"changed_endpoints": sorted(e.pk for e in run.endpoints.all())[:args.changed_models]} \
        if args.changed_models else {}
    metrics = scoring.run_score(run=run, actor=None, **kw)
    elapsed = time.perf_counter() - t0
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(args.profile_out)
    stored = EvaluationRun.objects.filter(pk=run.pk).values_list("scored_at", flat=True).get()
    if args.metrics_out:
        Path(args.metrics_out).write_text(json.dumps(metrics, sort_keys=True, default=str))
    print("RESULT " + json.dumps({
        "seconds": elapsed, "table_s": phases.get("table"), "n_predictions": metrics.get("n_predictions"),
        "stored": stored is not None, "metrics_kib": len(json.dumps(metrics, default=str)) / 1024,
        "rss_before_mib": rss_before, "peak_rss_mib": _peak_rss_mib(),
    }), flush=True)


def _peak_rss_mib() -> float:
    """This process's peak RSS: VmHWM, not ru_maxrss, which on Linux keeps the forking parent's peak
    across exec (a parent that just filled the database would be counted)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def _rss_now_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# ---------------------------------------------------------------- set-up (working tree code)

def _environment(tmp: Path) -> dict[str, str]:
    env = {**os.environ, "MEDR2_DEBUG": "0", "SECRET_KEY": os.environ.get("SECRET_KEY", "medr2-benchmark-only"),
           "MEDR2_VAR_DIR": str(tmp / "var"), "MEDR2_STORAGE_ROOT": str(tmp / "storage"),
           "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB}", "DJANGO_SETTINGS_MODULE": "medr2.settings",
           "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("CELERY_BROKER_URL", None)     # nothing is sent: enqueue is a no-op in the timed children
    return env


def _database_exists(db: str = DB) -> bool:
    import psycopg

    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone() is not None


def _recreate_database(db: str = DB) -> None:
    import psycopg

    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {db}")
        conn.execute(f"CREATE DATABASE {db}")


def run_name(args) -> str:
    return f"bench-scoring {args.predictions} predictions x {args.models} models split {args.split} seed {args.seed}"


def setup(args, tmp: Path) -> tuple[int, float, bool]:
    """(run id, set-up seconds, reused) — the database filled by the working tree's code."""
    os.environ.update(_environment(tmp))
    os.environ.pop("CELERY_BROKER_URL", None)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(BENCH))
    t0 = time.perf_counter()
    reuse = args.reuse and _database_exists()
    if not reuse:
        _recreate_database()
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)      # also on reuse: the working tree's schema, always
    from workers.models import EvaluationRun

    run = EvaluationRun.objects.filter(name=run_name(args)).order_by("-pk").first() if reuse else None
    if run is not None and (run.total != args.predictions or run.predictions.count() != args.predictions):
        run = None
    if run is None:
        from annotation.models import Variant

        if reuse and Variant.objects.count() < math.ceil(args.predictions / args.models) * (
                1 if args.split == "all" else 5):      # too few variants for this size: start again
            connection.close()
            _recreate_database()
            call_command("migrate", verbosity=0)
            reuse = False
        run = fill(args, make_variants=not reuse)
    with connection.cursor() as cursor:     # fresh planner statistics, as autovacuum would have them after a run
        cursor.execute("VACUUM ANALYZE")
    connection.close()
    return run.pk, time.perf_counter() - t0, reuse


def fill(args, make_variants: bool = True):
    from generate import populate
    from ui_latency import copy_rows, reset_sequences

    from annotation.models import Image, QAItem, Variant
    from annotation.services.chains import chains_generate
    from annotation.services.variants import variants_generate
    from annotation.splits import split_for_group
    from workers.models import EvaluationRun, ModelEndpoint, Prediction

    n_variants = math.ceil(args.predictions / args.models)
    share = 1.0 if args.split == "all" else 0.2
    n_images = math.ceil(n_variants / 32 / share) + 10       # 35-45 variants per image, depending on the kinds
    t0 = time.perf_counter()
    if make_variants:
        populate(n_images)
        chains_generate(image_ids=list(Image.objects.values_list("pk", flat=True)), actor=None, seed=0,
                        batch_size=1000)
        QAItem.objects.update(status=QAItem.Status.APPROVED)
        variants_generate(items=list(QAItem.objects.values_list("pk", flat=True)), actor=None, seed=0,
                          batch_size=1000)
    print(f"  set-up: {Image.objects.count()} images, {QAItem.objects.count()} items, {Variant.objects.count()} "
          f"variants ({'made' if make_variants else 'kept'}) in {time.perf_counter() - t0:.0f} s", flush=True)
    rows = Variant.objects.order_by("pk").values_list(
        "pk", "item_id", "kind", "params", "options", "expected_answer", "item__category__answer_type",
        "item__chain__image__split_group")
    variants = [r for r in rows.iterator(chunk_size=5000)
                if args.split == "all" or split_for_group(r[7]) == args.split][:n_variants]
    if len(variants) < n_variants:
        raise SystemExit(f"only {len(variants)} variants for {n_variants} needed; raise the image count")
    endpoints = [ModelEndpoint.objects.get_or_create(name=f"bench-scoring-{m}", defaults={
        "backend": "null", "prompt_template_hash": "0" * 64})[0] for m in range(args.models)]
    run = EvaluationRun.objects.create(name=run_name(args), status="completed", split=args.split,
                                       n_variants=len(variants), total=args.predictions)
    run.endpoints.set(endpoints)
    t0 = time.perf_counter()
    first = (Prediction.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1
    rng = random.Random(args.seed)
    ids = [e.pk for e in endpoints]

    def predictions():
        n = 0
        for v in variants:
            for e in ids:
                if n == args.predictions:
                    return
                yield {"id": first + n, "run_id": run.pk, "endpoint_id": e, "variant_id": v[0], "item_id": v[1],
                       **synthetic_prediction(rng, *v[2:7])}
                n += 1

    del rows
    written = copy_rows(Prediction, predictions())
    reset_sequences(Prediction)
    print(f"  set-up: {written} predictions by COPY in {time.perf_counter() - t0:.0f} s", flush=True)
    return run


OUTCOMES = (("answered", 90), ("abstained", 4), ("unparseable", 5), ("error", 1))
CHOICE_METHODS = (("letter_only", 45), ("letter_prefix", 20), ("answer_phrase", 15), ("option_text", 10),
                  ("letter_mention", 6), ("json", 4))
UNPARSEABLE_METHODS = (("no_match", 60), ("ambiguous", 30), ("empty", 5), ("letter_out_of_range", 5))
BOX_METHODS = (("box_pixel", 60), ("box_1000", 20), ("box_json", 10), ("box_unit", 10))
P_CORRECT = 0.6 / 0.9          # of the answered: ~60 % correct overall


def _pick(rng: random.Random, table) -> str:
    return rng.choices([k for k, _ in table], weights=[w for _, w in table])[0]


def _near(rng: random.Random, box, good: bool) -> tuple[list[float], float]:
    """A box shifted from `box` and (roughly) its IoU with it: above 0.5 when good."""
    x0, y0, x1, y1 = (float(v) for v in box)
    w, h = max(x1 - x0, 1.0), max(y1 - y0, 1.0)
    f = rng.uniform(0.0, 0.3) if good else rng.uniform(0.4, 1.5)
    dx = f * w * rng.choice((-1, 1))
    shifted = [round(x0 + dx, 1), y0, round(x1 + dx, 1), y1]
    overlap = max(0.0, w - abs(dx)) * h
    return shifted, overlap / (2 * w * h - overlap)


def synthetic_prediction(rng: random.Random, kind, params, options, expected, answer_type) -> dict:
    """One prediction's stored columns, as execution writes them for this variant."""
    params, expected, options = params or {}, expected or {}, options or []
    outcome = _pick(rng, OUTCOMES)
    letters = [chr(65 + i) for i in range(len(options))]
    joint = "evidence_box" in expected
    parsed, box, iou, cue, correct = None, None, None, None, False
    good = rng.random() < P_CORRECT
    if outcome == "answered":
        if answer_type in ("single_choice", "yes_no") and letters:
            gold = expected.get("letter")
            wrong = [x for x in letters if x != gold] or letters
            hinted = params.get("hinted_letter")
            parsed = gold if good else (hinted if isinstance(hinted, str) and rng.random() < 0.5 else rng.choice(wrong))
            method = "yes_no_word" if answer_type == "yes_no" and rng.random() < 0.5 else _pick(rng, CHOICE_METHODS)
            correct = parsed == gold
        elif answer_type == "multi_choice" and letters:
            gold = expected.get("letter") or []
            gold = sorted([gold] if isinstance(gold, str) else gold)
            parsed = gold
            if not good:
                flip = rng.choice(letters)
                parsed = sorted(set(gold) ^ {flip}) or [rng.choice(letters)]
            method = _pick(rng, (("letter_list", 85), ("option_text", 10), ("json", 5)))
            correct = parsed == gold
        elif answer_type == "box" and isinstance(expected.get("value"), list):
            parsed, iou = _near(rng, expected["value"], good)
            box, correct, method = parsed, iou >= 0.5, _pick(rng, BOX_METHODS)
        else:
            gold = expected.get("value")
            parsed = gold if good and isinstance(gold, str) else "other finding"
            correct, method = parsed == gold, "free_text"
    else:
        method = {"abstained": "abstain_phrase", "error": "error"}.get(outcome) or _pick(rng, UNPARSEABLE_METHODS)
    if answer_type == "box":
        iou = iou if iou is not None else 0.0
    elif joint:
        evidence = expected.get("evidence_box")
        if evidence is None:
            iou = None
        elif outcome == "answered" and rng.random() < 0.85:
            box, iou = _near(rng, evidence, rng.random() < 0.6)
        else:
            iou = 0.0
    answered = outcome == "answered"
    if kind == "misleading_hint" and "hinted_letter" in params:
        hinted = params["hinted_letter"]
        cue = answered and (sorted(parsed) == sorted(hinted) if isinstance(hinted, list) else parsed == hinted)
    elif kind == "false_premise" and "rejecting_letter" in params:
        cue = answered and parsed != params["rejecting_letter"]
    elif kind == "true_premise" and "rejecting_letter" in params:
        cue = answered and parsed == params["rejecting_letter"]
    elif kind == "wrong_visual_cue":
        if params.get("cue_letter"):
            cue = answered and parsed == params["cue_letter"]
        elif params.get("cue") == "wrong_region" and (answer_type == "box" or joint):
            cue = answered and rng.random() < 0.2
        elif params.get("cue") == "mislabeled" and letters:
            cue = answered and isinstance(parsed, str) and parsed in letters and \
                str(options[letters.index(parsed)]).lower() == str(params.get("label", "")).lower()
    text = f"The answer is {parsed}." if answered else \
        {"abstained": "I cannot determine this from the image.", "error": ""}.get(outcome, "Possibly either.")
    return {"raw_output": text, "outcome": outcome, "parsed": parsed, "parse_method": method,
            "parse_detail": "" if answered else outcome, "correct": bool(correct), "iou": iou, "box": box,
            "cue_adopted": cue, "latency_ms": 0.0, "error": "HTTP 500" if outcome == "error" else ""}


# ---------------------------------------------------------------- parent: alternate ref / new

def score_once(side: str, code: Path, run_id: int, env: dict, profile_out: Path | None = None,
               metrics_out: Path | None = None, changed: int = 0) -> dict | None:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--code-root", str(code), "--run-id", str(run_id)]
    if profile_out:
        cmd += ["--profile-out", str(profile_out)]
    if metrics_out:
        cmd += ["--metrics-out", str(metrics_out)]
    if changed:
        cmd += ["--changed-models", str(changed)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=code, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    line = next((s for s in proc.stdout.splitlines() if s.startswith("RESULT ")), None)
    if proc.returncode or line is None:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-6000:])
        hint = " (does the reference code still run on the working tree's schema?)" if side == "ref" else ""
        print(f"  {side} ({code}): run_score FAILED, exit {proc.returncode}{hint}", flush=True)
        return None
    return {**json.loads(line[len("RESULT "):]), "wall": wall}


def print_profile(path: Path, limit: int = 25) -> None:
    import pstats

    for key in ("cumulative", "tottime"):
        print(f"\n--- cProfile of one ref run_score, by {key} (top {limit}) ---")
        pstats.Stats(str(path)).strip_dirs().sort_stats(key).print_stats(limit)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--predictions", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--split", choices=["all", "test"], default="all",
                        help="the run's split: `all` also scores every split separately (the heavier case)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ref", default=REF, help="reference revision (default: the code before issue 13)")
    parser.add_argument("--new-root", default=str(ROOT),
                        help="directory of the code under test (default: this working tree)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds of ref, new")
    parser.add_argument("--reuse", action="store_true", help=f"keep database {DB} if it holds this run")
    parser.add_argument("--profile", action="store_true", help="one more ref run under cProfile, printed")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--code-root", help=argparse.SUPPRESS)
    parser.add_argument("--run-id", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", help=argparse.SUPPRESS)
    parser.add_argument("--metrics-out", help=argparse.SUPPRESS)
    parser.add_argument("--sides", default="ref,new", help="which code scores: ref,new (default), new or ref")
    parser.add_argument("--setup-only", action="store_true", help="fill the database (or keep it) and stop")
    parser.add_argument("--changed-models", type=int, default=0,
                        help="then time the new code's rescore after a correction that changed K models' predictions "
                             "(run_score(changed_endpoints=...): the others' stored metrics are kept)")
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0
    args.failed = False

    tmp = Path(tempfile.mkdtemp(prefix="medr2-bench-scoring-"))
    ref_dir = tmp / "ref"
    try:
        ref = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{args.ref}^{{commit}}"],
                             check=True, capture_output=True, text=True).stdout.strip()
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(ref_dir), ref],
                       check=True, capture_output=True)
        print(f"scoring benchmark: {args.predictions} predictions by {args.models} models, split {args.split}, "
              f"PostgreSQL database {DB}; ref {ref[:12]} vs {args.new_root}", flush=True)
        run_id, t_setup, reused = setup(args, tmp)
        print(f"set-up {'reused' if reused else 'built'} in {t_setup:.0f} s (run {run_id})", flush=True)
        if args.setup_only:
            return 0
        env = _environment(tmp)
        chosen = [s.strip() for s in args.sides.split(",") if s.strip()]
        sides = {k: v for k, v in {"ref": ref_dir, "new": Path(args.new_root).resolve()}.items() if k in chosen}
        results: dict[str, list[dict]] = {side: [] for side in sides}
        for r in range(args.repeat):
            for side, code in sides.items():
                res = score_once(side, code, run_id, env, metrics_out=tmp / f"metrics-{side}.json")
                if res is None:
                    continue
                results[side].append(res)
                table = f"{res['table_s']:.1f}" if res["table_s"] is not None else "n/a"
                print(f"  round {r + 1} {side}: run_score {res['seconds']:7.1f} s (table query {table} s), "
                      f"peak RSS {res['peak_rss_mib']:5.0f} MiB (before scoring {res['rss_before_mib']:.0f}), "
                      f"{res['n_predictions']} predictions, metrics {res['metrics_kib']:,.0f} KiB"
                      + ("" if res["stored"] else " NOT STORED"), flush=True)
        profile = tmp / "ref.prof"
        if args.profile and score_once("ref", ref_dir, run_id, env, profile) is None:
            args.failed = True
        report(args, results, t_setup, reused)
        if args.changed_models and results.get("new"):
            res = score_once("new", sides["new"], run_id, env, changed=args.changed_models,
                             metrics_out=tmp / "metrics-partial.json")
            if res is None:
                args.failed = True
            else:
                print(f"rescore after a correction that changed {args.changed_models} of {args.models} models: "
                      f"{res['seconds']:.1f} s (reads {res['table_s']:.1f} s), peak RSS {res['peak_rss_mib']:.0f} MiB")
        from _metrics_diff import compare_metrics

        compare_metrics(tmp / "metrics-ref.json", tmp / "metrics-new.json")
        compare_metrics(tmp / "metrics-new.json", tmp / "metrics-partial.json", "new full and new partial rescore")
        if args.profile and profile.exists():
            print_profile(profile)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(ref_dir)], capture_output=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if args.failed else 0


def report(args, results: dict[str, list[dict]], t_setup: float, reused: bool) -> None:
    best = {side: min(rs, key=lambda x: x["seconds"]) for side, rs in results.items() if rs}
    peak = {side: max(x["peak_rss_mib"] for x in rs) for side, rs in results.items() if rs}
    print()
    print(f"set-up {'reused' if reused else 'built'} in {t_setup:.0f} s (untimed); each run_score in a fresh "
          f"process, best of {args.repeat}")
    print("| code | run_score s | table query s | metrics + store s | predictions/s | peak RSS MiB | RSS before MiB |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for side, res in best.items():
        t, q = res["seconds"], res["table_s"]
        query, rest = (f"{q:.1f}", f"{t - q:.1f}") if q is not None else ("n/a", "n/a")
        print(f"| {side} | {t:.1f} | {query} | {rest} | {res['n_predictions'] / t:,.0f} | {peak[side]:.0f} | "
              f"{res['rss_before_mib']:.0f} |")
    if len(best) == 2 and "ref" in best:
        ratio = best["new"]["seconds"] / best["ref"]["seconds"]
        print(f"ratio new / ref time: {ratio:.2f}  (target <= 1.20);  "
              f"peak RSS new / ref: {peak['new'] / peak['ref']:.2f}")
    print(f"command: .venv/bin/python bench/scoring.py {' '.join(sys.argv[1:])}")
    if len(best) < len(results) or any(len(rs) < args.repeat for rs in results.values()):
        print("some run_score calls FAILED (see above)", file=sys.stderr)
        args.failed = True


if __name__ == "__main__":
    sys.exit(main())
