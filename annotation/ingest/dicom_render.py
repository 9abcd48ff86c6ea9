"""DICOM frames: their source values (what the content hash covers) and their 8-bit rendering.

`frame_values` turns decoded pixel data into one `Plane` per frame: grey frames through the Modality LUT
(float32), colour frames (RGB, or a palette through its LUT) as 8-bit RGB. `render_plane` windows a grey
plane (the file's Window Center/Width with its VOI LUT Function, else the auto percentile window without
the padding value; MONOCHROME1 inverted) or passes a colour one through.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pydicom
from PIL import Image as PILImage
from pydicom.dataset import Dataset
from pydicom.multival import MultiValue

from .types import DecodedFrame
from .window import apply_dicom_window, apply_linear_window, auto_window


@dataclass
class Plane:
    """One frame's source values (what is hashed) and what rendering it needs."""

    values: np.ndarray       # grey: modality values (float32); colour: the 8-bit RGB frame
    raw: np.ndarray | None   # grey: the stored values (for the padding mask); None for colour
    index: int | None


def frame_values(ds: Dataset, arr: np.ndarray, n_frames: int, samples: int) -> list[Plane]:
    photometric = str(ds.get("PhotometricInterpretation", "")).strip().upper()
    stack = arr if n_frames > 1 else arr[np.newaxis, ...]
    if photometric == "PALETTE COLOR":
        stack = pydicom.pixels.apply_color_lut(stack, ds)
        samples = 3
    planes = []
    for i in range(stack.shape[0]):
        index = i if n_frames > 1 else None
        if samples == 3:
            planes.append(Plane(_color_values(stack[i], ds), None, index))
        else:
            values = np.asarray(pydicom.pixels.apply_modality_lut(stack[i], ds), dtype=np.float32)
            planes.append(Plane(values, stack[i], index))
    return planes


def render_plane(ds: Dataset, plane: Plane, sha256: str) -> DecodedFrame:
    if plane.raw is None:
        return DecodedFrame(pixels=plane.values, rendered=PILImage.fromarray(plane.values), frame_index=plane.index,
                            sha256=sha256)
    invert = str(ds.get("PhotometricInterpretation", "")).strip().upper() == "MONOCHROME1"
    frame = _grey_frame(plane.values, plane.raw, ds, plane.index, invert)
    frame.sha256 = sha256
    return frame


def _color_values(frame: np.ndarray, ds: Dataset) -> np.ndarray:
    """RGB passes through; deeper RGB (or a 16-bit palette LUT output) is scaled to 8 bits."""
    if frame.dtype != np.uint8:
        if ds.get("PhotometricInterpretation") == "PALETTE COLOR":
            top = float(np.iinfo(frame.dtype).max)
        else:
            top = float(2 ** int(ds.get("BitsStored") or 8 * frame.dtype.itemsize) - 1)
        frame = np.rint(np.clip(frame.astype(np.float64) / top * 255.0, 0, 255)).astype(np.uint8)
    return np.ascontiguousarray(frame)


def _grey_frame(values: np.ndarray, raw: np.ndarray, ds: Dataset, index: int | None, invert: bool) -> DecodedFrame:
    center, width, source = _tag_window(ds)
    out = None
    if source == "dicom_tag":
        try:
            out = apply_dicom_window(values, center, width, str(ds.get("VOILUTFunction", "LINEAR") or "LINEAR"))
        except ValueError:
            out = None
    if out is None:
        padding = ds.get("PixelPaddingValue")
        mask = (raw != padding) if isinstance(padding, int) else None
        if mask is not None and not mask.any():
            mask = None
        center, width = auto_window(values, mask)
        source = "auto_percentile"
        out = apply_linear_window(values, center, width)
    if invert:
        out = 255 - out
    return DecodedFrame(
        pixels=values, rendered=PILImage.fromarray(np.ascontiguousarray(out)), frame_index=index,
        window_center=float(center), window_width=float(width), window_source=source,
    )


def _tag_window(ds: Dataset) -> tuple[float, float, str]:
    """First Window Center/Width value pair from the file, or source 'none'."""
    try:
        center, width = ds.get("WindowCenter"), ds.get("WindowWidth")
        if center in (None, "") or width in (None, ""):
            return 0.0, 0.0, "none"
        center = center[0] if isinstance(center, MultiValue) else center
        width = width[0] if isinstance(width, MultiValue) else width
        return float(center), float(width), "dicom_tag"
    except (TypeError, ValueError, IndexError):
        return 0.0, 0.0, "none"
