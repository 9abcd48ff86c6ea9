"""The release's images and the PHI check: `images/<sha256>.png` written once each, from bytes read once
(`ImageSink`, fed by the Parquet writer; `copy_images` for the rest), what was seen in those bytes
(`Copied`: hash, size, PNG chunk walk, DICOM preamble), and `phi_check` over a release folder."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import struct
from collections.abc import Callable
from pathlib import Path

from releases.package.files import (
    _IMAGE_NAME,
    PNG_FORBIDDEN,
    PNG_SIGNATURE,
    ROW_KEYS,
    ReleaseError,
    walk_files,
)
from releases.package.snapshot import Snapshot


@dataclasses.dataclass(frozen=True)
class Copied:
    """What `copy_images` learnt of one image from the bytes it wrote: their hash and size (the manifest's
    line) and what the PHI check reads (`png_problem`, and whether it is a DICOM file), so the build does not
    read 42,432 files three more times."""

    sha256: str
    size: int
    problem: str | None
    dicom: bool


class ImageSink:
    """Writes `images/<sha256>.png` from bytes another writer has read and hashed already (the Parquet writer
    reads every row's image for its image column), so a build reads each image file once. `copied` is what
    `copy_images` returns, for the images put here."""

    def __init__(self, out: Path):
        self.folder = Path(out) / "images"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.copied: dict[str, Copied] = {}

    def put(self, path: str, data: bytes, digest: str) -> None:
        """`data`, whose SHA-256 is `digest` and matches the name `path` ("images/<digest>.png")."""
        if path in self.copied:
            return
        if path != f"images/{digest}.png":
            raise ReleaseError(f"image path is not images/<sha256>.png: {path}")
        with open(self.folder / f"{digest}.png", "wb") as dst:
            dst.write(data)
        self.copied[path] = Copied(digest, len(data), png_problem(data), data[128:132] == b"DICM")


def copy_images(snapshot: Snapshot, out: Path, *, progress: Callable[[str, int, int], None] | None = None,
                sink: ImageSink | None = None) -> dict[str, Copied]:
    """Copy every snapshot image to `images/<sha256>.png`, once, checking the copied bytes hash to the name
    (those a `sink` has written already are not read again). Returns what it learnt of each image's bytes,
    by release path."""
    missing = sorted(snapshot.summary.images - set(snapshot.images))
    if missing:
        raise ReleaseError(f"row image not in the snapshot: {missing[0]}")
    sink = sink or ImageSink(out)
    total = len(snapshot.images)
    for i, path in enumerate(sorted(snapshot.images), start=1):
        if path not in sink.copied:
            image = snapshot.images[path]
            m = _IMAGE_NAME.fullmatch(path)
            if not m or image.path != path:
                raise ReleaseError(f"image path is not images/<sha256>.png: {path}")
            source = Path(image.source)
            try:
                data = source.read_bytes()
            except (FileNotFoundError, IsADirectoryError):
                raise ReleaseError(f"image file missing from storage: {source} (for {path})") from None
            digest = hashlib.sha256(data).hexdigest()
            if digest != m.group(1):
                raise ReleaseError(f"image file does not match its hash: {source} (for {path})")
            sink.put(path, data, digest)
        if progress and (i % 500 == 0 or i == total):
            progress("images", i, total)
    return dict(sink.copied)


# ---------------------------------------------------------------- PHI check

def png_problem(data: bytes) -> str | None:
    """Why PNG bytes may carry text or metadata (a tEXt/iTXt/zTXt/eXIf chunk, bytes after IEND, not a PNG);
    None if clean. Walks the chunk headers only."""
    if data[:8] != PNG_SIGNATURE:
        return "not a PNG"
    at, end = 8, len(data)
    while True:
        if at + 8 > end:
            return "truncated PNG (no IEND chunk)"
        length, kind = struct.unpack_from(">I4s", data, at)
        if kind in PNG_FORBIDDEN:
            return f"{kind.decode('latin-1')} chunk"
        at += 8 + length + 4
        if kind == b"IEND":
            return "data after IEND" if at < end else None


def png_text_chunk(path: Path) -> str | None:
    """`png_problem` of a PNG file."""
    return png_problem(Path(path).read_bytes())


def _flags_burned_in(deid: dict) -> bool:
    for key, value in deid.items():
        if re.sub(r"[^a-z]", "", str(key).lower()) in ("burnedin", "burnedinannotation", "burnedintext"):
            if value is True or str(value).strip().upper() in ("YES", "TRUE"):
                return True
    return False


def phi_check(snapshot: Snapshot, out: Path, *, copied: dict[str, Copied] | None = None,
              rows_checked: bool = False) -> None:
    """Refuse the release (ReleaseError "PHI check failed: ...") if any shipped file could carry PHI: a PNG with
    text/metadata chunks (never stripped here), an image whose de-identification record flags burned-in
    annotation, an image not in the snapshot, a DICOM file anywhere, or a data row with keys outside the contract.

    The build passes what its writers saw as they wrote, so nothing is read twice: `copied` (copy_images: the
    chunk walk and DICOM test of each image's bytes, the bytes it wrote) and `rows_checked` (the data writer
    builds every JSONL record from the contract's fields alone, `data.row_record`, so its own output need not
    be parsed back). On any other folder every file is read here."""
    out = Path(out)
    copied = copied or {}
    for path in walk_files(out):
        if path in copied:
            dicom = copied[path].dicom
        else:
            with open(out / path, "rb") as f:
                dicom = f.read(132)[128:] == b"DICM"
        if dicom:
            raise ReleaseError(f"PHI check failed: {path} is a DICOM file")
    images = out / "images"
    for png in sorted(images.iterdir()) if images.is_dir() else []:
        rel = f"images/{png.name}"
        image = snapshot.images.get(rel)
        if image is None:
            raise ReleaseError(f"PHI check failed: {rel} is not an image of the snapshot")
        if _flags_burned_in(image.deid or {}):
            raise ReleaseError(f"PHI check failed: {rel} is flagged with burned-in annotation ({image.source})")
        why = copied[rel].problem if rel in copied else png_text_chunk(png)
        if why:
            raise ReleaseError(f"PHI check failed: {rel} has a {why}" if why.endswith("chunk")
                               else f"PHI check failed: {rel}: {why}")
    data = out / "data"
    for jsonl in sorted(data.glob("*.jsonl")) if data.is_dir() and not rows_checked else []:
        with open(jsonl, encoding="utf-8") as f:
            for n, line in enumerate(f, start=1):
                try:
                    keys = set(json.loads(line))
                except (ValueError, TypeError):
                    raise ReleaseError(f"PHI check failed: data/{jsonl.name} line {n} is not a JSON object")
                extra = sorted(keys - ROW_KEYS)
                if extra:
                    raise ReleaseError(f"PHI check failed: data/{jsonl.name} line {n} has keys outside the "
                                       f"contract: {', '.join(extra)}")
    for parquet in sorted(data.glob("*.parquet")) if data.is_dir() else []:
        import pyarrow.parquet as pq

        extra = sorted(set(pq.read_schema(parquet).names) - ROW_KEYS - {"image_path"})
        if extra:
            raise ReleaseError(f"PHI check failed: data/{parquet.name} has columns outside the contract: "
                               f"{', '.join(extra)}")


