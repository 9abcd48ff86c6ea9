"""Shortcut audit at the paper's scale: time and peak RSS against a bare baseline in the same run.

    .venv/bin/python bench/shortcut_audit.py [--items 110000] [--patients 42000] [--n-boot 1000]

Synthesises item rows like the generator's (31 categories, 4 stages, yes/no, single- and
multi-choice, box), reads them into the audit's columns (the bare baseline: ItemTable only), then
runs the whole pure-core audit. Peak RSS is resource.getrusage(RUSAGE_SELF).ru_maxrss (the process
high-water mark, so the baseline is measured first).
"""
from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.splits import split_for_group  # noqa: E402
from validity.shortcuts import AuditParams, ItemTable, run_audit  # noqa: E402

WORDS = ("smooth lobulated spiculated round oval irregular cyst mass nodule hemorrhage calcified fatty solid "
         "enhancing liver kidney spleen lung brain left right upper lower axial coronal sagittal CT MR mild "
         "moderate severe benign malignant follow-up biopsy").split()


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def synthesise(n_items: int, n_patients: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    cats = []
    for c in range(31):
        kind = "yes_no" if c % 6 == 0 else "multi_choice" if c == 13 else "box" if c in (5, 12) else "single_choice"
        vocab = [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(rng.randint(4, 12))]
        cats.append((f"cat-{c:02d}", f"S{1 + c * 4 // 31}", kind, vocab))
    rows = []
    groups = [f"patient-{p}" for p in range(n_patients)]
    splits = {g: split_for_group(g) for g in groups}
    for i in range(n_items):
        code, stage, kind, vocab = cats[i % 31]
        g = groups[rng.randrange(n_patients)]
        q = f"What is the {rng.choice(WORDS)} finding of the {rng.choice(WORDS)} lesion?"
        if kind == "yes_no":
            options, gold = ["yes", "no"], rng.choice(["yes", "no"])
        elif kind == "box":
            options, gold = [], [1, 2, 3, 4]
        else:
            options = rng.sample(vocab, 4)
            if rng.random() < 0.05:                               # hand-written options
                options[0] = f"{options[0]} note {i}"
            gold = rng.sample(options, rng.randint(1, 2)) if kind == "multi_choice" else rng.choice(options)
        rows.append(dict(item_id=i + 1, category=code, stage=stage, answer_type=kind, question=q, options=options,
                         gold=gold, split=splits[g], cluster=g))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=110_000)
    ap.add_argument("--patients", type=int, default=42_000)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    rows = synthesise(args.items, args.patients)
    print(f"synthesised {len(rows):,} items over {args.patients:,} patients; RSS {rss_mb():.0f} MB")
    t0 = time.perf_counter()
    table = ItemTable.from_rows(rows)
    bare_s = time.perf_counter() - t0
    bare_rss = rss_mb()
    print(f"bare baseline (rows -> ItemTable columns): {bare_s:.2f} s, peak RSS {bare_rss:.0f} MB "
          f"({table.n_choice:,} choice items, {len(table.opt_id):,} options)")
    del table
    t0 = time.perf_counter()
    result = run_audit(rows, params=AuditParams(n_boot=args.n_boot, n_folds=args.folds))
    audit_s = time.perf_counter() - t0
    audit_rss = rss_mb()
    o = result.results["overall"]
    print(f"full audit: {audit_s:.1f} s, peak RSS {audit_rss:.0f} MB "
          f"(x{audit_s / bare_s:.0f} the time, +{audit_rss - bare_rss:.0f} MB over the baseline)")
    print(f"scored {o['n_scored']:,} test items; best blind {o['best']['code']} {o['best']['accuracy']:.3f} "
          f"vs chance {o['chance']:.3f}; {result.results['counts']['image_necessary']:,} image-necessary")


if __name__ == "__main__":
    main()
