#!/usr/bin/env python
"""Model report speed on a demo-shaped run (issue 16: "a report for 3 models on a demo run renders in
under 30 s"), measured through the platform's own lifecycle.

    .venv/bin/python bench/report.py                       # 200 phantoms (the demo's), SQLite in a temp dir
    .venv/bin/python bench/report.py --postgres            # PostgreSQL database medr2_bench (dropped, recreated)

Set-up (not timed): N phantoms imported like the demo (de-identification, rendering, findings), chains
for every image, every valid item approved, every variant kind generated, the shortcut audit, a draft
release of the approved items, and a run of three models on the held-out test split executed by the real
batch code and scored (`run_finalize`). The models are a strong planted simulation, a cue follower and
the random baseline: the report reads the run's stored predictions and metrics, so its cost depends on
the run's shape (items, variants, models, kinds), not on which backend produced the answers.

Timed, in this order, as `make demo`'s report_demo does it:
1. `report_generate` (the version row and its signed audit checkpoint);
2. `report_version_build`: the document of every number, the HTML (figures included) and the PDF: the
   worker's whole job, the number held against the 30 s target;
3. `report_sign` (password re-checked) and the signed copy's PDF (the worker's job after each signature);
4. `report_file_verify` of the signed PDF (what `manage.py report_verify` does).

Prints a markdown table for docs/benchmarks.md, the PDF's pages and sizes, and the peak RSS.
"""
from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

from _django import peak_rss_mib, setup_django
from pypdf import PdfReader

TARGET_S = 30.0
MODELS = (("oracle", "oracle", {}), ("cue-follower", "cue_follower", {"p": 0.5, "accuracy": 0.7, "seed": 1}),
          ("random-baseline", "random", {"seed": 2}))
CRITERIA = [{"metric": "step_accuracy", "model": "*", "op": ">=", "threshold": 0.5},
            {"metric": "chain_accuracy", "model": "oracle", "op": ">=", "threshold": 0.6, "on": "lo"},
            {"metric": "robustness.misleading_hint.harmful_flip_rate", "model": "*", "op": "<=", "threshold": 0.2}]
PASSWORD = "bench-Secret-123"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build(n_images: int, seed: int):
    """The demo's content and a scored run of three models on the test split; returns (run, release, users)."""
    from django.core.management import call_command
    from django.utils import timezone

    from accounts.roles import Role
    from accounts.services import user_create
    from annotation.models import Image, QAItem
    from annotation.services.chains import chains_generate
    from annotation.services.demo import PHANTOM_DATASET, demo_load
    from annotation.services.qa import qa_items_review
    from annotation.services.variants import variants_generate
    from releases.services import release_create
    from workers.models import EvaluationRun
    from workers.services.endpoints import endpoint_create
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create, run_finalize

    users = {role: user_create(username=f"bench-{role.value}", email=f"{role.value}@example.org", password=PASSWORD,
                               roles=[role], actor=None) for role in (Role.CURATOR, Role.AUDITOR, Role.ADMIN)}
    curator = users[Role.CURATOR]
    t = time.perf_counter()
    demo_load(phantoms=n_images, seed=seed, actor=curator, progress=lambda m: None)
    ids = list(Image.objects.filter(source_dataset=PHANTOM_DATASET).order_by("id").values_list("id", flat=True))
    chains_generate(image_ids=ids, actor=curator, seed=seed)
    items = list(QAItem.objects.filter(is_current=True).exclude(status=QAItem.Status.REJECTED)
                 .values_list("id", flat=True))
    qa_items_review(item_ids=items, status=QAItem.Status.APPROVED, actor=curator)
    variants_generate(items=items, actor=curator, seed=seed)
    log(f"content: {len(ids)} images, {len(items)} approved items ({time.perf_counter() - t:.0f} s)")
    call_command("audit_shortcuts", user=curator.username, n_boot=200, stdout=io.StringIO())
    release = release_create(actor=users[Role.ADMIN], version="1.0.0")
    endpoints = [endpoint_create(name=name, backend=backend, parameters=params, actor=curator)
                 for name, backend, params in MODELS]
    t = time.perf_counter()
    run = run_create(name="Bench evaluation", endpoints=endpoints, actor=curator, split="test", batch_size=256,
                     start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
    for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    run_finalize(run_id=run.pk)
    run = EvaluationRun.objects.get(pk=run.pk)
    log(f"run: {run.n_variants} variants × {len(MODELS)} models = {run.total} predictions, scored "
        f"({time.perf_counter() - t:.0f} s)")
    return run, release, users


def measure(run, release, users) -> dict:
    from accounts.roles import Role
    from reports.models import ReportSignedCopy
    from reports.selectors import signed_copy_pdf, version_file
    from reports.services import (
        report_create,
        report_file_verify,
        report_generate,
        report_sign,
        report_version_build,
        signed_copy_build,
    )
    from reports.tasks import signed_copy_build_task

    # the signed copy is a worker's job after the signature: time it on its own, not inside report_sign (the
    # benchmark has no broker, and eager Celery would build it during the signature's commit)
    signed_copy_build_task.apply_async = lambda *args, **kwargs: None
    auditor = users[Role.AUDITOR]
    report = report_create(actor=auditor, title="Bench report", runs=[run], release=release, criteria=CRITERIA,
                           scope="Benchmark of the report lifecycle.")
    times: dict[str, float] = {}
    t = time.perf_counter()
    version = report_generate(report=report, actor=auditor, queue=False)
    times["generate (row + signed checkpoint)"] = time.perf_counter() - t
    marks = {}

    def progress(step: str, done: int, total: int) -> None:
        marks[step] = time.perf_counter()

    t = time.perf_counter()
    version = report_version_build(version_id=version.pk, actor=auditor, progress=progress)
    end = time.perf_counter()
    assert version.status == "ready", version.error
    times["document"] = marks["html"] - marks["document"]
    times["HTML (with the figures)"] = marks["pdf"] - marks["html"]
    times["PDF (WeasyPrint)"] = marks["done"] - marks["pdf"]
    times["**build (the worker's job)**"] = end - t
    t = time.perf_counter()
    report_sign(version=version, user=auditor, password=PASSWORD, meaning="author")
    times["sign (password re-checked)"] = time.perf_counter() - t
    copy = ReportSignedCopy.objects.order_by("-pk").first()
    t = time.perf_counter()
    copy = signed_copy_build(copy_id=copy.pk)
    times["signed copy (PDF again)"] = time.perf_counter() - t
    signed = signed_copy_pdf(pk=copy.pk)
    t = time.perf_counter()
    check = report_file_verify(data=signed, version_id=version.pk)
    times["verify the signed PDF"] = time.perf_counter() - t
    assert check.ok, check.problems
    pdf = version_file(pk=version.pk, field="pdf")
    return {"times": times, "pages": len(PdfReader(io.BytesIO(pdf)).pages), "pdf_kb": len(pdf) / 1024,
            "json_kb": version.summary["bytes"]["json"] / 1024, "html_kb": version.summary["bytes"]["html"] / 1024,
            "models": version.summary["models"], "verdict": version.summary["verdict"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=200, help="phantoms (the demo's: 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="medr2-bench-report-") as tmp:
        engine = setup_django(Path(tmp), args.postgres)
        from django.conf import settings

        from common.signing import generate_signing_key

        settings.MEDR2_SIGNING_KEY = generate_signing_key()
        run, release, users = build(args.images, args.seed)
        result = measure(run, release, users)
    build_s = result["times"]["**build (the worker's job)**"]
    print(f"\n{engine}, {args.images} phantoms, run of {run.n_variants:,} variants × {len(MODELS)} models "
          f"({run.total:,} predictions); models in the report: {', '.join(result['models'])}\n")
    print("| step | time |\n| --- | ---: |")
    for step, seconds in result["times"].items():
        print(f"| {step} | {seconds:.1f} s |")
    print(f"\nbuild {build_s:.1f} s against the {TARGET_S:.0f} s target: {build_s / TARGET_S:.2f}× the budget "
          f"({'met' if build_s < TARGET_S else 'NOT met'}); PDF {result['pages']} pages, "
          f"{result['pdf_kb']:.0f} KiB, HTML "
          f"{result['html_kb']:.0f} KiB, JSON {result['json_kb']:.0f} KiB; acceptance verdict {result['verdict']}; "
          f"peak RSS {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
