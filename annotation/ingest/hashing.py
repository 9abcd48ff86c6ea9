"""The content hash of one decoded frame: the deduplication key of `Image.sha256`.

SHA-256 over ``"<dtype>|<shape>|"`` and the frame's source values (DICOM: stored values through the
Modality LUT, float32; NIfTI: the displayed slice, float32; raster: the grey or colour array before
windowing). It is computed on the decoded pixels *before* de-identification and rendering, which never
change them (de-identification touches attributes only), so a duplicate is recognised before any of
that work is done. The pixel values of a frame are not PHI; the hash never leaves the platform's rows.
"""
from __future__ import annotations

import hashlib

import numpy as np


def frame_sha256(values: np.ndarray) -> str:
    """Content hash of one frame's source values (dtype and shape included)."""
    values = np.ascontiguousarray(values)
    digest = hashlib.sha256(f"{values.dtype.str}|{values.shape}|".encode())
    digest.update(values if values.flags.c_contiguous and values.dtype.kind in "biuf" else values.tobytes())
    return digest.hexdigest()
