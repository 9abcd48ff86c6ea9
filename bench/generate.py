#!/usr/bin/env python
"""Chain and variant generation at scale, against a bare COPY of the same rows.

    .venv/bin/python bench/generate.py --images 2000                              # SQLite in a temp dir
    .venv/bin/python bench/generate.py --images 42432 --postgres                  # the paper's scale
    .venv/bin/python bench/generate.py --images 2000 --postgres --database medr2_bench_gen --profile prof.out

Set-up (not timed): N Image rows with the findings and boxes of synthetic phantoms (the ground truth
of 256 phantoms, repeated; two images per synthetic patient), like the demo data after import.
Timed: `chains_generate` over all images (facts → generator → validation → writes + audit),
then `variants_generate` over all items (approved first, untimed).
Baseline (PostgreSQL): the very rows the platform wrote — chains, items and evidence links; variants —
dumped with COPY TO (untimed), the tables emptied (TRUNCATE), then a bare `COPY ... FROM STDIN` of
the dumped text with the same columns, 50,000 rows per transaction (bench/_copy.py): the fastest
way to write those rows, into tables in the same state the platform started from. `--baseline-repeat`
rounds: for the variants they alternate with as many rounds of the platform's variant generation (each on
the variants table emptied first), so both sides are measured under the same conditions, and the ratio is
given of their medians and of their bests; the items' bare COPY is the best of those rounds. On SQLite (no
COPY) the baseline is a bare bulk_create of copies. Generation streams in batches: peak RSS stays
flat as N grows.
"""
from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from _django import CpuSplit, peak_rss_mib, setup_django

TEMPLATES = 256


def populate(n_images: int, batch: int = 2000) -> None:
    from annotation.models import Finding, GroundingBox, Image
    from annotation.phantoms import generate_phantom

    truths = [generate_phantom(i, seed=7).ground_truth() for i in range(TEMPLATES)]
    for start in range(0, n_images, batch):
        rows = []
        for i in range(start, min(n_images, start + batch)):
            t = truths[i % TEMPLATES]
            rows.append(Image(
                sha256=hashlib.sha256(f"bench-{i}".encode()).hexdigest(), file="bench/none.png",
                width=t["width"], height=t["height"], modality=t["modality"], body_region=t["body_region"],
                source_format="dicom", split_group=f"pt-bench-{i // 2}", window_center=t["window_center"],
                window_width=t["window_width"], source_dataset="bench",
                metadata={k: t[k] for k in ("plane", "image_quality", "contrast_phase") if t.get(k)}))
        images = Image.objects.bulk_create(rows)
        findings = []
        for offset, image in enumerate(images):
            t = truths[(start + offset) % TEMPLATES]
            for organ, box in t["organs"].items():
                findings.append((image, Finding(image=image, kind="anatomy", label=organ, attributes={"organ": organ},
                                                source="phantom"), box, organ))
            for lesion in t["lesions"]:
                attrs = {k: v for k, v in lesion.items() if k not in ("box", "label", "center")}
                findings.append((image, Finding(image=image, kind="lesion", label=lesion["label"], attributes=attrs,
                                                source="phantom"), lesion["box"], lesion["label"]))
        created = Finding.objects.bulk_create([f for _, f, _, _ in findings], batch_size=5000)
        GroundingBox.objects.bulk_create([
            GroundingBox(finding=f, image=image, x0=b[0], y0=b[1], x1=b[2], y1=b[3], label=label, source="phantom")
            for (image, _, b, label), f in zip(findings, created)], batch_size=5000)


def bare_bulk_create(model, fields: list[str], tweak, limit: int, chunk: int = 5000) -> tuple[float, int]:
    """Time bulk_create of copies of up to `limit` rows of `model` (read back untimed), then
    remove them. Returns (seconds, rows copied): the bare write rate is rows / seconds."""
    max_id = model.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    elapsed = 0.0
    last = 0
    copied = 0
    while copied < limit:
        rows = list(model.objects.filter(pk__gt=last, pk__lte=max_id).order_by("pk")
                    .values("pk", *fields)[:min(chunk, limit - copied)])
        if not rows:
            break
        last = rows[-1]["pk"]
        copies = [model(**tweak({k: v for k, v in r.items() if k != "pk"})) for r in rows]
        start = time.perf_counter()
        model.objects.bulk_create(copies, batch_size=2000)
        elapsed += time.perf_counter() - start
        copied += len(copies)
    model.objects.filter(pk__gt=max_id).delete()
    return elapsed, copied


def bare_copy_postgres(tmp: Path, repeat: int, generate=None) -> tuple[tuple[float, int], tuple[float, int], list]:
    """The rows the platform wrote, dumped (untimed), the tables emptied, then COPYed back (timed), best
    of `repeat` rounds: (seconds, rows) for chains + items + evidence links, and for variants. With
    `generate` (the platform's variant generation, returning its `CpuSplit`), every round after the first
    starts with it, on the variants table emptied (untimed), so the platform and the bare COPY alternate,
    `repeat` times each, under the same conditions. Returns also, per round, (the platform's `CpuSplit` or
    None, the bare COPY's seconds (of COPY and commit alone), its `CpuSplit`)."""
    from _copy import copy_back, dump_tables, truncate

    from annotation.models import Chain, QAItem, Variant

    Through = QAItem.evidence_boxes.through
    models = [Chain, QAItem, Through, Variant]
    dumps = dump_tables([(m._meta.db_table, tuple(f.column for f in m._meta.concrete_fields)) for m in models],
                        directory=tmp)
    best_items = best_variants = (float("inf"), 0)
    rounds = []
    for round_no in range(repeat):
        platform = None
        if generate is not None and round_no:
            truncate([Variant._meta.db_table])
            platform = generate()
        truncate([Chain._meta.db_table])           # cascades to items, evidence links and variants
        items = [copy_back(dumps[m._meta.db_table]) for m in models[:3]]
        with CpuSplit() as cpu:
            variants = copy_back(dumps[Variant._meta.db_table])
        rounds.append((platform, variants[0], cpu))
        best_items = min(best_items, (sum(s for s, _ in items), items[1][1]))
        best_variants = min(best_variants, variants)
    return best_items, best_variants, rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--database", default="medr2_bench", help="PostgreSQL database (dropped and recreated)")
    parser.add_argument("--profile", help="write a cProfile of variants_generate to this file")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--baseline-repeat", type=int, default=3,
                        help="PostgreSQL: rounds of variant generation and of the bare COPY, alternating (medians and "
                             "bests of both); the items' bare COPY is the best of this many")
    parser.add_argument("--baseline-rows", type=int, default=200_000,
                        help="SQLite only: rows per table copied for the bare bulk_create rate")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="medr2-bench-") as tmp:
        backend = setup_django(Path(tmp), args.postgres, database=args.database)
        from annotation.models import QAItem, Variant
        from annotation.services.chains import chains_generate
        from annotation.services.variants import variants_generate

        t0 = time.perf_counter()
        populate(args.images)
        t_populate = time.perf_counter() - t0
        rss_populate = peak_rss_mib()

        from annotation.models import Image

        image_ids = list(Image.objects.order_by("pk").values_list("pk", flat=True))
        t0 = time.perf_counter()
        chains = chains_generate(image_ids=image_ids, actor=None, seed=0, batch_size=args.batch_size)
        t_chains = time.perf_counter() - t0
        rss_chains = peak_rss_mib()

        QAItem.objects.filter(is_current=True).update(status=QAItem.Status.APPROVED)
        item_ids = list(QAItem.objects.order_by("pk").values_list("pk", flat=True))
        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        with CpuSplit() as first:
            variants = variants_generate(items=item_ids, actor=None, seed=0, batch_size=args.batch_size)
        t_variants = first.seconds
        if profiler:
            profiler.disable()
            profiler.dump_stats(args.profile)
        rss_variants = peak_rss_mib()

        rounds = []
        if not args.skip_baseline and args.postgres:
            def again() -> CpuSplit:
                with CpuSplit() as cpu:
                    variants_generate(items=item_ids, actor=None, seed=0, batch_size=args.batch_size)
                return cpu

            b_items, b_variants, rounds = bare_copy_postgres(Path(tmp), args.baseline_repeat, generate=again)
            rounds[0] = (first, *rounds[0][1:])
        elif not args.skip_baseline:
            b_items = bare_bulk_create(QAItem, ["chain_id", "step", "stage_id", "category_id", "question", "options",
                                                "gold_answer", "status", "content_hash", "version"],
                                       lambda r: {**r, "item_key": uuid.uuid4()}, limit=args.baseline_rows)
            b_variants = bare_bulk_create(Variant, ["item_id", "kind", "params", "seed", "parent_id", "prompt",
                                                    "options", "expected_answer", "image_recipe", "content_hash"],
                                          lambda r: {**r, "content_hash":
                                                     hashlib.sha256(r["content_hash"].encode()).hexdigest()},
                                          limit=args.baseline_rows)

    n_items, n_var = chains.items, variants.variants
    print(f"generation benchmark: {args.images} images, database {backend}")
    print(f"  set-up (images + phantom findings, untimed) : {t_populate:8.1f} s   peak RSS {rss_populate:6.0f} MiB")
    print(f"  chains   : {chains.chains} chains, {n_items} items in {t_chains:.1f} s = "
          f"{n_items / t_chains:8.0f} items/s"
          f"   ({n_items / max(args.images, 1):.2f} items/image)   peak RSS {rss_chains:6.0f} MiB")
    print(f"  variants : {n_var} variants in {t_variants:.1f} s = {n_var / t_variants:8.0f} variants/s"
          f"   ({n_var / max(n_items, 1):.1f} variants/item)   peak RSS {rss_variants:6.0f} MiB")
    if not args.skip_baseline:
        how = f"COPY (best of {args.baseline_repeat})" if args.postgres else "bulk_create"
        (s_items, r_items), (s_var, r_var) = b_items, b_variants
        print(f"  bare {how} of the same rows: items (with their chains and evidence links) {r_items} in "
              f"{s_items:.1f} s = {r_items / s_items:8.0f} rows/s; variants {r_var} in {s_var:.1f} s = "
              f"{r_var / s_var:8.0f} rows/s")
        print(f"  ratio generation / bare {how} (time per row): "
              f"items {(t_chains / n_items) / (s_items / r_items):5.2f}x"
              + ("" if rounds else f", variants {(t_variants / n_var) / (s_var / r_var):5.2f}x"))
    if rounds:      # PostgreSQL: the variants' ratio from the alternating rounds, not one run against a best of N
        platform, bare = [p.seconds for p, _, _ in rounds], [b for _, b, _ in rounds]
        print("  variants, alternating rounds (platform s / bare COPY s): "
              + ", ".join(f"{p:.2f} / {b:.2f}" for p, b in zip(platform, bare)))
        for k, (p, _, b) in enumerate(rounds, 1):
            print(f"    round {k}: platform {p}\n             bare COPY {b}")
        print(f"  ratio variants, median of {len(rounds)} rounds each: "
              f"{statistics.median(platform) / statistics.median(bare):5.2f}x;  best of each: "
              f"{min(platform) / min(bare):5.2f}x   (target: <= 1.5x)")


if __name__ == "__main__":
    main()
