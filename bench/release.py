#!/usr/bin/env python
"""Release build speed and memory against the bare path, measured side by side in one run.

    .venv/bin/python bench/release.py --images 2000 --variants-per-image 25                 # 50k rows
    .venv/bin/python bench/release.py --images 42432 --variants-per-image 26 --size 128     # the paper's size

A synthetic snapshot (releases.package.snapshot) of N images (`--size` pixels square, 8-bit PNGs, a smooth
phantom-like texture with noise; 512 gives ~165 KB, about a rendered CT slice) and V item variants per
image, its rows spooled to a RowStore as the platform's own builds spool them, is written once to a temp
folder; then, each in a fresh process (peak RSS is per process):

- **build**: `releases.package.build.build_release`: every writer (JSONL + Parquet with the image
  bytes, images, card, Croissant with hashes, VLMEvalKit TSV, SFT, changelog), the PHI check, the
  signed manifest and the deterministic .tar.gz; as the platform builds it, the VLMEvalKit and SFT
  writers in a second process when the machine has two cores (releases/package/side.py);
- **bare**: the floor the issue names, done the fastest bare way (see `run_bare`): the same rows read
  from the same RowStore, written with pyarrow as the release's Parquet holds them (same column types,
  the image bytes once per row group) with no compression at all, plus copying the same image files.

Each side runs `--repeat` times (default 3), alternating, and the median runs are compared: the shared
machine's timings move by ±20 % from run to run. Prints the wall times and their ratio build / bare (the
target), the CPU seconds of each side (the build's
side process included) and the peak RSS of each process (record them in docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import itertools
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


def make_snapshot(work: Path, n_images: int, per_image: int, size: int = 512):
    """N synthetic images and V variants per image, the rows spooled to a RowStore (never all in memory)."""
    import numpy as np
    from PIL import Image as PILImage

    from releases.package.files import sha256_file
    from releases.package.snapshot import SPLITS, Box, ImageFile, Row, RowStore, Snapshot, sort_key

    rng = np.random.default_rng(0)
    store = work / "store"
    store.mkdir()
    yy, xx = np.mgrid[0:size, 0:size]
    images: dict = {}
    kinds = ["clean", "misleading_hint", "correct_hint", "option_permutation", "negation", "false_premise"]
    splits = ["train"] * 7 + ["val"] + ["test"] * 2
    for i in range(n_images):
        base = 90 + 60 * np.sin((xx * 512 / size + 7 * i) / 40.0) * np.cos(yy * 512 / size / 55.0)
        pixels = np.clip(base + rng.normal(0, 6, base.shape), 0, 255).astype("uint8")
        path = store / f"{i}.png"
        PILImage.fromarray(pixels).save(path, format="PNG")
        rel = f"images/{sha256_file(path)}.png"
        images[i] = ImageFile(rel, path, size, size, {"profile": "synthetic"})

    def rows():
        for split in SPLITS:
            for i in range(n_images):
                if splits[i % len(splits)] != split:
                    continue
                rel = images[i].path
                out = []
                for v in range(per_image):
                    step, kind = v // len(kinds) + 1, kinds[v % len(kinds)]
                    options = ["liver", "spleen", "kidney", "lung"]
                    out.append(Row(
                        id=f"{i}-{step}:v1:{v}", split=split, group=f"g{i:06d}", chain_id=i + 1, step=step,
                        stage=f"S{min(step, 4)}", stage_name="stage", category=f"cat{step}", category_name="category",
                        answer_type="single_choice", item_id=i * 100 + step, item_key=f"{i}-{step}", item_version=1,
                        question=f"Which organ is marked on image {i}?", prompt=f"Which organ is marked on image {i}?",
                        options=options, answer=options[(i + v) % 4], answer_letters=["ABCD"[(i + v) % 4]],
                        evidence_boxes=[Box(10.0, 20.0, 110.0, 140.0, "organ")], image=rel, width=size, height=size,
                        modality="CT", body_region="ABDOMEN", source_dataset="synthetic", license="CC0-1.0",
                        variant_id=i * 1000 + v, variant_kind=kind,
                        parent_variant_id=None if kind == "clean" else i * 1000 + (step - 1) * len(kinds),
                        variant_params={"rotation": 1} if kind == "option_permutation" else {}))
                out.sort(key=sort_key)
                yield from out

    return Snapshot(
        name="bench", version="1.0.0", title="bench", description="bench", license="CC-BY-4.0",
        created="2026-12-01", homepage="https://example.org", rows=RowStore.create(rows(), work / "rows.pickle"),
        images={f.path: f for f in sorted(images.values(), key=lambda f: f.path)}, taxonomy=[],
        taxonomy_version="0" * 64, reference_standard={}, shortcut_audit=None, excluded={}, changes=[],
        previous_version=None, audit_head="0" * 64, deidentification={"profile": "synthetic"})


def run_build(snapshot, out: Path) -> None:
    from releases.package.build import build_release
    from releases.package.files import generate_signing_key, load_signing_key

    build_release(snapshot, out / "bench-1.0.0", signing_key=load_signing_key(generate_signing_key()))


def run_bare(snapshot, out: Path) -> None:
    """The fastest bare path for the same rows: for each split, row groups of at most 10,000 rows whose
    columns are built straight as Arrow arrays of the release's own Parquet types (`SCHEMA`), the image
    bytes as a dictionary of the group's distinct PNGs (each stored once per row group, as the release
    stores them), written with a plain `ParquetWriter` and no compression at all (the fastest setting);
    then `shutil.copyfile` of every image file. No JSONL, no hashing, no checks, no other formats, no
    manifest, no archive."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from releases.package.data import SCHEMA, WRITE_SCHEMA

    (out / "data").mkdir(parents=True)
    (out / "images").mkdir()
    box = SCHEMA.field("evidence_boxes").type
    for split in snapshot.splits:
        rows = iter(snapshot.rows_in(split))
        with pq.ParquetWriter(out / "data" / f"{split}.parquet", WRITE_SCHEMA, compression="none",
                              dictionary_pagesize_limit=1 << 30) as writer:
            while group := list(itertools.islice(rows, 10_000)):
                columns = {}
                for name in WRITE_SCHEMA.names:
                    if name in ("image", "image_path", "evidence_boxes", "answer", "variant_params"):
                        continue
                    columns[name] = pa.array([getattr(r, name) for r in group], SCHEMA.field(name).type)
                columns["answer"] = pa.array([json.dumps(r.answer) for r in group], pa.string())
                columns["variant_params"] = pa.array([json.dumps(r.variant_params) for r in group], pa.string())
                columns["evidence_boxes"] = pa.array(
                    [[{"x0": b.x0, "y0": b.y0, "x1": b.x1, "y1": b.y1, "label": b.label} for b in r.evidence_boxes]
                     for r in group], box)
                codes, order = {}, []
                for r in group:
                    if r.image not in codes:
                        codes[r.image] = len(order)
                        order.append(r.image)
                paths = pa.array([r.image for r in group], pa.string())
                blobs = pa.array([Path(snapshot.images[p].source).read_bytes() for p in order], pa.binary())
                columns["image"] = pa.StructArray.from_arrays(
                    [pa.DictionaryArray.from_arrays(pa.array([codes[r.image] for r in group], pa.int32()), blobs),
                     paths], fields=list(WRITE_SCHEMA.field("image").type))
                columns["image_path"] = paths
                writer.write_table(pa.table([columns[n] for n in WRITE_SCHEMA.names], schema=WRITE_SCHEMA))
    for rel, image in snapshot.images.items():
        shutil.copyfile(image.source, out / rel)


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its finished children (the build's side process)."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def child(mode: str, pickled: Path, out: Path) -> None:
    snapshot = pickle.loads(pickled.read_bytes())
    cpu, t = _cpu(), time.perf_counter()
    (run_build if mode == "build" else run_bare)(snapshot, out)
    seconds, cpu = time.perf_counter() - t, _cpu() - cpu
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    side_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024     # the side writers' process
    print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mib": peak_mib, "side_mib": side_mib}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--variants-per-image", type=int, default=25)
    parser.add_argument("--size", type=int, default=512, help="image side in pixels (512: ~165 KB PNGs)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each side, alternating bare and build; the medians are compared")
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
        snapshot = make_snapshot(work, args.images, args.variants_per_image, args.size)
        pickled = work / "snapshot.pickle"
        pickled.write_bytes(pickle.dumps(snapshot))
        image_mib = sum(os.path.getsize(i.source) for i in snapshot.images.values()) / 2**20
        print(f"snapshot: {len(snapshot.rows):,} rows, {len(snapshot.images):,} images ({image_mib:,.0f} MiB) "
              f"in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        runs: dict[str, list[dict]] = {"bare": [], "build": []}
        for _ in range(max(1, args.repeat)):
            for mode in ("bare", "build"):
                out = work / mode
                out.mkdir()
                done = subprocess.run([sys.executable, __file__, "--child", mode, "--snapshot", str(pickled),
                                       "--out", str(out)], capture_output=True, text=True, check=True)
                runs[mode].append(json.loads(done.stdout.strip().splitlines()[-1]))
                shutil.rmtree(out)
        for mode, got in runs.items():
            print(f"{mode}: " + ", ".join(f"{r['seconds']:.1f} s" for r in got), file=sys.stderr)
        # the median run of each side (by wall time), with its own CPU and memory figures
        bare, build = (sorted(got, key=lambda r: r["seconds"])[len(got) // 2] for got in runs.values())
        print("| rows | images | bare pyarrow write + copy | full build (all formats, signed, .tar.gz) | ratio "
              "| CPU s bare / build (ratio) | peak RSS bare / build (+ side process) |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        print(f"| {len(snapshot.rows):,} | {len(snapshot.images):,} | {bare['seconds']:.1f} s | "
              f"{build['seconds']:.1f} s | {build['seconds'] / bare['seconds']:.2f}x | "
              f"{bare['cpu']:.1f} / {build['cpu']:.1f} ({build['cpu'] / bare['cpu']:.2f}x) | "
              f"{bare['peak_mib']:,.0f} / {build['peak_mib']:,.0f} (+ {build['side_mib']:,.0f}) MiB |")


if __name__ == "__main__":
    main()
