#!/usr/bin/env python
"""Release build speed and memory against the bare path, measured side by side in one run.

    .venv/bin/python bench/release.py --images 2000 --variants-per-image 25      # ~50k rows
    .venv/bin/python bench/release.py --images 42432 --variants-per-image 26     # the paper's size

A synthetic snapshot (releases.package.snapshot) of N images (512x512 8-bit PNGs, a smooth phantom-like
texture with noise, about the size of a rendered CT slice) and V item variants per image is written
once to a temp folder; then, each in a fresh process (peak RSS is per process):

- **build**: `releases.package.build.build_release`: every writer (JSONL + Parquet with the image
  bytes, images, card, Croissant with hashes, VLMEvalKit TSV, SFT, changelog), the PHI check, the
  signed manifest and the deterministic .tar.gz;
- **bare**: the floor the issue names, done the fastest bare way: one `pyarrow.parquet.write_table`
  per split of the same rows as the release's Parquet holds them (columns built straight as Arrow
  arrays, the image bytes as a dictionary column so each PNG is held once), plus copying the same image
  files.

Prints the times, the ratio build / bare and both peak RSS figures (record them in docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def make_snapshot(work: Path, n_images: int, per_image: int):
    import numpy as np
    from PIL import Image as PILImage

    from releases.package.files import sha256_file
    from releases.package.snapshot import Box, ImageFile, Row, Snapshot

    rng = np.random.default_rng(0)
    store = work / "store"
    store.mkdir()
    yy, xx = np.mgrid[0:512, 0:512]
    images, rows = {}, []
    kinds = ["clean", "misleading_hint", "correct_hint", "option_permutation", "negation", "false_premise"]
    splits = ["train"] * 7 + ["val"] + ["test"] * 2
    for i in range(n_images):
        base = 90 + 60 * np.sin((xx + 7 * i) / 40.0) * np.cos(yy / 55.0)
        pixels = np.clip(base + rng.normal(0, 6, base.shape), 0, 255).astype("uint8")
        path = store / f"{i}.png"
        PILImage.fromarray(pixels).save(path, format="PNG")
        rel = f"images/{sha256_file(path)}.png"
        images[rel] = ImageFile(rel, path, 512, 512, {"profile": "synthetic"})
        split = splits[i % len(splits)]
        for v in range(per_image):
            step, kind = v // len(kinds) + 1, kinds[v % len(kinds)]
            options = ["liver", "spleen", "kidney", "lung"]
            rows.append(Row(
                id=f"{i}-{step}:v1:{v}", split=split, group=f"g{i:06d}", chain_id=i + 1, step=step,
                stage=f"S{min(step, 4)}", stage_name="stage", category=f"cat{step}", category_name="category",
                answer_type="single_choice", item_id=i * 100 + step, item_key=f"{i}-{step}", item_version=1,
                question=f"Which organ is marked on image {i}?", prompt=f"Which organ is marked on image {i}?",
                options=options, answer=options[(i + v) % 4], answer_letters=["ABCD"[(i + v) % 4]],
                evidence_boxes=[Box(10.0, 20.0, 110.0, 140.0, "organ")], image=rel, width=512, height=512,
                modality="CT", body_region="ABDOMEN", source_dataset="synthetic", license="CC0-1.0",
                variant_id=i * 1000 + v, variant_kind=kind, parent_variant_id=None if kind == "clean" else i * 1000,
                variant_params={"rotation": v % 4} if kind == "option_permutation" else {}))
    order = {"train": 0, "val": 1, "test": 2}
    rows.sort(key=lambda r: (order[r.split], r.chain_id, r.step, r.variant_kind, r.variant_id))
    return Snapshot(
        name="bench", version="1.0.0", title="bench", description="bench", license="CC-BY-4.0",
        created="2026-12-01", homepage="https://example.org", rows=rows, images=dict(sorted(images.items())),
        taxonomy=[], taxonomy_version="0" * 64, reference_standard={}, shortcut_audit=None, excluded={},
        changes=[], previous_version=None, audit_head="0" * 64, deidentification={"profile": "synthetic"})


def run_build(snapshot, out: Path) -> None:
    from releases.package.build import build_release
    from releases.package.files import generate_signing_key, load_signing_key

    build_release(snapshot, out / "bench-1.0.0", signing_key=load_signing_key(generate_signing_key()))


def run_bare(snapshot, out: Path) -> None:
    """The fastest bare path for the same rows: columns built directly as Arrow arrays (the image bytes
    as a dictionary column: each distinct PNG held once in memory and written once per row group, as
    the release's own writer does), one `write_table` per split with pyarrow's defaults, then a plain
    copy of every image file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (out / "data").mkdir(parents=True)
    (out / "images").mkdir()
    paths = sorted(snapshot.images)
    index = {p: k for k, p in enumerate(paths)}
    blobs = pa.array([Path(snapshot.images[p].source).read_bytes() for p in paths], pa.binary())
    names = pa.array(paths, pa.string())
    scalar = ("id", "split", "group", "chain_id", "step", "stage", "stage_name", "category", "category_name",
              "answer_type", "item_id", "item_key", "item_version", "question", "prompt", "width", "height",
              "modality", "body_region", "source_dataset", "license", "variant_id", "variant_kind",
              "parent_variant_id", "cue_letter")
    for split in snapshot.splits:
        rows = snapshot.rows_in(split)
        columns = {name: pa.array([getattr(r, name) for r in rows]) for name in scalar}
        columns["options"] = pa.array([r.options for r in rows], pa.list_(pa.string()))
        columns["answer_letters"] = pa.array([r.answer_letters for r in rows], pa.list_(pa.string()))
        columns["answer"] = pa.array([json.dumps(r.answer) for r in rows], pa.string())
        columns["variant_params"] = pa.array([json.dumps(r.variant_params) for r in rows], pa.string())
        columns["evidence_boxes"] = pa.array([[b.as_list()[:4] for b in r.evidence_boxes] for r in rows],
                                             pa.list_(pa.list_(pa.float64())))
        codes = pa.array([index[r.image] for r in rows], pa.int32())
        columns["image"] = pa.StructArray.from_arrays(
            [pa.DictionaryArray.from_arrays(codes, blobs), pa.DictionaryArray.from_arrays(codes, names)],
            names=["bytes", "path"])
        pq.write_table(pa.table(columns), out / "data" / f"{split}.parquet", row_group_size=10_000)
    for rel, image in snapshot.images.items():
        shutil.copyfile(image.source, out / rel)

def child(mode: str, pickled: Path, out: Path) -> None:
    snapshot = pickle.loads(pickled.read_bytes())
    t = time.perf_counter()
    (run_build if mode == "build" else run_bare)(snapshot, out)
    seconds = time.perf_counter() - t
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mib": peak_mib}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--variants-per-image", type=int, default=25)
    parser.add_argument("--child", choices=["build", "bare"])
    parser.add_argument("--snapshot")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.snapshot), Path(args.out))
        return
    with tempfile.TemporaryDirectory(prefix="medr2-release-bench-") as tmp:
        work = Path(tmp)
        t = time.perf_counter()
        snapshot = make_snapshot(work, args.images, args.variants_per_image)
        pickled = work / "snapshot.pickle"
        pickled.write_bytes(pickle.dumps(snapshot))
        image_mib = sum(os.path.getsize(i.source) for i in snapshot.images.values()) / 2**20
        print(f"snapshot: {len(snapshot.rows):,} rows, {len(snapshot.images):,} images ({image_mib:,.0f} MiB) "
              f"in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        results = {}
        for mode in ("bare", "build"):
            out = work / mode
            out.mkdir()
            done = subprocess.run([sys.executable, __file__, "--child", mode, "--snapshot", str(pickled),
                                   "--out", str(out)], capture_output=True, text=True, check=True)
            results[mode] = json.loads(done.stdout.strip().splitlines()[-1])
            shutil.rmtree(out)
        bare, build = results["bare"], results["build"]
        print("| rows | images | bare pyarrow write + copy | full build (all formats, signed, .tar.gz) | ratio "
              "| peak RSS bare / build |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        print(f"| {len(snapshot.rows):,} | {len(snapshot.images):,} | {bare['seconds']:.1f} s | "
              f"{build['seconds']:.1f} s | {build['seconds'] / bare['seconds']:.2f}x | "
              f"{bare['peak_mib']:,.0f} / {build['peak_mib']:,.0f} MiB |")


if __name__ == "__main__":
    main()
