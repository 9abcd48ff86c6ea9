#!/usr/bin/env python
"""Ingest throughput: the platform's importer against a bare decode-and-write loop.

    .venv/bin/python bench/ingest.py --count 500                       # SQLite in a temp dir
    .venv/bin/python bench/ingest.py --count 500 --postgres             # PostgreSQL (database medr2_bench, recreated)

Both sides read the same N synthetic phantom DICOM files from disk. The bare loop only decodes
(pydicom), windows to 8 bit and writes a PNG per file. The platform path does everything a real
import does: sniff, de-identify (PS3.15 Annex E), render, content-hash, deduplicate, store the
de-identified source and the PNG atomically, insert rows and one audit event per file, each file in
its own transaction. The figure that matters is the ratio (platform time / bare time), measured in
the same run on the same machine; absolute images/s depend on the machine.
"""
from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

from _django import peak_rss_mib, setup_django


def bare_loop(paths: list[Path], out_dir: Path) -> float:
    import numpy as np
    import pydicom
    from PIL import Image

    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for i, path in enumerate(paths):
        ds = pydicom.dcmread(path)
        arr = (ds.pixel_array.astype(np.float32) * float(ds.get("RescaleSlope", 1))
               + float(ds.get("RescaleIntercept", 0)))
        lo, hi = np.percentile(arr, (0.5, 99.5))
        img = np.clip((arr - lo) / max(hi - lo, 1e-6) * 255.0, 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG")
        (out_dir / f"{i}.png").write_bytes(buf.getvalue())
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--postgres", action="store_true",
                        help="use PostgreSQL on 127.0.0.1:5432 (database medr2_bench)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="medr2-bench-") as tmp_name:
        tmp = Path(tmp_name)
        backend = setup_django(tmp, args.postgres)
        from annotation.phantoms import write_phantoms
        from annotation.services.images import BytesSource, images_import

        paths = write_phantoms(tmp / "phantoms", args.count, seed=12345)
        total_bytes = sum(p.stat().st_size for p in paths)

        bare = bare_loop(paths, tmp / "bare-out")
        start = time.perf_counter()
        batch = images_import(sources=(BytesSource(p.name, p.read_bytes()) for p in paths), actor=None)
        platform = time.perf_counter() - start
        assert batch.files_imported == len(paths), f"only {batch.files_imported}/{len(paths)} imported"

        start = time.perf_counter()
        again = images_import(sources=(BytesSource(p.name, p.read_bytes()) for p in paths), actor=None)
        dedup = time.perf_counter() - start
        assert again.files_duplicate == len(paths)

    peak_mib = peak_rss_mib()
    n = len(paths)
    print(f"ingest benchmark: {n} synthetic phantom DICOM files ({total_bytes / n / 1024:.0f} KiB each), "
          f"database {backend}")
    print(f"  bare decode+write loop : {n / bare:8.1f} images/s  ({bare:.2f} s)")
    print(f"  platform import        : {n / platform:8.1f} images/s  ({platform:.2f} s)")
    print(f"  re-import (all dups)   : {n / dedup:8.1f} files/s   ({dedup:.2f} s)")
    print(f"  ratio platform / bare  : {platform / bare:8.2f}x the time of the bare loop")
    print(f"  peak RSS               : {peak_mib:8.0f} MiB")


if __name__ == "__main__":
    main()
