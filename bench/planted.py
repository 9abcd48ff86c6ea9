#!/usr/bin/env python
"""Metric calibration with models of planted behaviour (issue 13), through the platform's own path.

    .venv/bin/python bench/planted.py --images 1000 --seed 0 --postgres
    .venv/bin/python bench/planted.py --images 120                        # SQLite in a temp dir, quick

N phantoms are imported like the demo (DICOM, de-identification, ground truth), chains are generated
and approved, every variant kind is generated, and one evaluation run (the test split by default) asks
the planted models of workers/backends/planted.py, whose behaviour is known by construction:

- oracle: always right;
- cue_follower p=0.3 and p=0.7 (on an always-right base): follows hints and visual cues with probability p;
- cue_follower p=0.5 on a base right 60% of the time (the normalised adoption must recover p);
- text_only: answers from the prompt text alone (identical prompts, identical answers);
- box_shifter iou=0.6: right answers, boxes at IoU 0.6 with the gold box;
- stage_decay 0.9 / 0.75 / 0.6 / 0.45: right with that probability at stages S1–S4;
- cue_follower p=1 on boxes: copies every drawn box (the dose-response curve must follow the drawn IoU).

The run is scored by the platform (workers.services.scoring.run_score) and each metric is checked
against the planted value (workers/scoring/calibration.py): "recovered" when its family-wise interval
(Bonferroni over the checks) contains it; the 95% interval and how many checks fall outside it are shown
beside (about 5% are expected to by chance). It prints a markdown table for docs/evaluation.md and exits
non-zero when a planted value is not recovered.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _django import setup_django

from workers.scoring.calibration import PLANTED_MODELS, checks, familywise, recovered


def build(n_images: int, seed: int) -> None:
    from accounts.roles import Role
    from accounts.services import user_create
    from annotation.models import Image, QAItem
    from annotation.services.chains import chains_generate
    from annotation.services.demo import PHANTOM_DATASET, demo_load
    from annotation.services.qa import qa_items_review
    from annotation.services.variants import variants_generate

    curator = user_create(username="bench-curator", email="bench@example.org", password=None,
                          roles=[Role.CURATOR], actor=None)
    t = time.perf_counter()
    demo_load(phantoms=n_images, seed=seed, actor=curator, progress=lambda m: print("  " + m, file=sys.stderr))
    ids = list(Image.objects.filter(source_dataset=PHANTOM_DATASET).order_by("id").values_list("id", flat=True))
    s = chains_generate(image_ids=ids, actor=curator, seed=seed)
    item_ids = list(QAItem.objects.filter(is_current=True, chain__image__source_dataset=PHANTOM_DATASET)
                    .values_list("id", flat=True))
    qa_items_review(item_ids=item_ids, status=QAItem.Status.APPROVED, actor=curator)
    v = variants_generate(items=item_ids, actor=curator, seed=seed)
    print(f"built {n_images} images, {s.chains} chains, {len(item_ids)} items, {v.variants} variants "
          f"in {time.perf_counter() - t:.0f} s", file=sys.stderr)


def evaluate(split: str):
    from accounts.roles import Role
    from accounts.services import user_create
    from workers.models import EvaluationRun
    from workers.services.endpoints import endpoint_create
    from workers.services.runs import run_create

    admin = user_create(username="bench-admin", email="admin@example.org", password=None, roles=[Role.ADMIN],
                        actor=None)
    endpoints = [endpoint_create(name=name, backend=backend, parameters=params, actor=admin)
                 for name, backend, params in PLANTED_MODELS]
    t = time.perf_counter()
    run = run_create(name="planted behaviour", endpoints=endpoints, split=split, batch_size=512, actor=admin)
    run = EvaluationRun.objects.get(pk=run.pk)
    print(f"run {run.pk}: {run.status}, {run.total} predictions in {time.perf_counter() - t:.0f} s",
          file=sys.stderr)
    return run, {e.name: str(e.pk) for e in endpoints}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", default="test", choices=("test", "val", "train", "all"))
    ap.add_argument("--postgres", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="medr2-planted-") as tmp:
        engine = setup_django(Path(tmp), a.postgres)
        build(a.images, a.seed)
        run, pk = evaluate(a.split)
        from workers.services.scoring import prediction_table, run_score

        t = time.perf_counter()
        metrics = run_score(run=run, actor=None)
        print(f"scored in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        listed = checks(metrics, pk)
        wide = checks(familywise(prediction_table(run=run), seed=run.pk, n_checks=len(listed)), pk)
        print(f"# planted behaviour on {a.images} phantom images, seed {a.seed}, {a.split} split ({engine}): "
              f"{metrics['n_predictions']} predictions\n")
        print("| model | metric | planted | measured | 95% interval | family-wise interval | n | recovered |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- |")
        missed = missed95 = 0
        for (model, name, planted, stat), (_, _, _, fw) in zip(listed, wide):
            ok = recovered(fw, planted)
            missed += not ok
            missed95 += not recovered(stat, planted)
            print(f"| {model} | {name} | {planted:.2f} | {_v(stat)} | {_ci(stat)} | {_ci(fw)} | "
                  f"{(stat or {}).get('n', '—')} | {'yes' if ok else '**NO**'} |")
        print(f"\n{len(listed)} checks; outside the 95% interval: {missed95} (expected by chance ≈ "
              f"{0.05 * len(listed):.1f}); outside the family-wise interval (Bonferroni, confidence "
              f"{1 - 0.05 / len(listed):.4f}): {missed}")
        print("every planted value recovered" if not missed else f"{missed} planted value(s) NOT recovered")
        return 1 if missed else 0


def _v(stat: dict | None) -> str:
    return "—" if not stat or stat.get("value") is None else f"{stat['value']:.3f}"


def _ci(stat: dict | None) -> str:
    return "—" if not stat or stat.get("lo") is None else f"{stat['lo']:.3f}–{stat['hi']:.3f}"


if __name__ == "__main__":
    sys.exit(main())
