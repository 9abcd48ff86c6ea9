"""Plain data passed between the file decoders and the import service.

Nothing here knows about Django: decoders turn bytes into `DecodedSource`, the
service (`annotation.services.images`) turns that into rows and stored files.
"""
from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from PIL import Image as PILImage


class IngestError(Exception):
    """A file that cannot be imported. `code` is stable (tests and the UI key on it);
    `message` is for people and never contains patient data."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


#: given a file's frame hashes, the ones already imported (the importer's database lookup)
KnownHashes = Callable[[list[str]], Collection[str]]


def all_known(hashes: list[str], known: KnownHashes | None) -> bool:
    """True when `known` says every one of `hashes` is already imported (decoding can stop)."""
    if known is None or not hashes:
        return False
    found = set(known(hashes))
    return all(h in found for h in hashes)


@dataclass(frozen=True)
class DecodeOptions:
    uid_salt: str = "medr2-dev-salt"          # keyed remapping of DICOM UIDs / patient ids
    max_pixels: int = 64_000_000                # per source file (all frames/slices together)
    max_file_bytes: int = 512 * 1024 * 1024
    # decoded size declared by the header (pixels x channels x bytes per sample), checked before decoding
    max_decoded_bytes: int = 256 * 1024 * 1024
    nifti_axis: int = 2                         # 0 sagittal, 1 coronal, 2 axial (after RAS+ canonicalisation)
    nifti_slices: str = "all"                   # "all" | "middle" | "<N>" evenly spaced


@dataclass
class DecodedFrame:
    """One 2-D image that becomes one `Image` row."""

    pixels: np.ndarray                # source values of this frame/slice (used for the content hash)
    rendered: PILImage.Image          # 8-bit "L" or "RGB", what people and models see
    frame_index: int | None = None    # DICOM frame / NIfTI slice index, None for single images
    window_center: float | None = None
    window_width: float | None = None
    window_source: Literal["dicom_tag", "auto_percentile", "none"] = "none"
    sha256: str = ""                  # hashing.frame_sha256(pixels), set by the decoder
    size: tuple[int, int] | None = None  # (width, height) of `rendered`, kept when the importer releases it


@dataclass
class DecodedSource:
    """A decoded input file: its frames plus what we store of the source itself."""

    format: Literal["dicom", "nifti", "png", "jpeg", "tiff"]
    frames: list[DecodedFrame]
    modality: str = ""                # DICOM Modality code: CT, MR, CR, DX, US, ... ("" unknown)
    body_region: str = ""             # e.g. "HEAD", "CHEST" ("" unknown)
    split_key: str = ""               # keyed hash of patient (or study) id, "" when unknown
    series_uid: str = ""              # de-identified (remapped) DICOM Series Instance UID, "" when none
    series_position: float | None = None   # where this file lies in its series (see dicom.series_position)
    metadata: dict = field(default_factory=dict)      # technical, non-identifying, JSON-serialisable
    deid_record: dict = field(default_factory=dict)   # what de-identification did (counts, keywords), never values
    stored_bytes: bytes | None = None  # de-identified source to keep (DICOM, NIfTI); None for raster
    stored_suffix: str = ""            # ".dcm", ".nii.gz"
    # Decoding stopped early because every frame was already imported (`decode(..., known=...)`):
    # `frames` is empty and these are the frames' hashes; nothing was de-identified or rendered.
    known_hashes: list[str] = field(default_factory=list)

    @property
    def frame_hashes(self) -> list[str]:
        return [f.sha256 for f in self.frames] if self.frames else list(self.known_hashes)
