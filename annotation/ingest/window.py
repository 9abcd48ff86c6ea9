"""Window/level: turning source values (CT HU, MR signal, 16-bit raster) into 8-bit grey.

Two ways to pick a window, recorded as ``DecodedFrame.window_source``:

- ``dicom_tag``: Window Center / Window Width (0028,1050/1051) from the DICOM file, applied
  with the VOI LUT Function the file names (PS3.3 C.11.2.1.2: LINEAR by default,
  LINEAR_EXACT or SIGMOID), see `apply_dicom_window`;
- ``auto_percentile``: the 0.5th to 99.5th percentile of the finite values (of one
  DICOM frame, of a whole NIfTI volume, of one 16-bit raster page), mapped linearly
  onto 0..255 with clipping, see `auto_window` and `apply_linear_window`.  Center and
  width are recorded as ``(lo + hi) / 2`` and ``hi - lo``.  Arrays above
  `PERCENTILE_SAMPLE` values are sampled with a fixed stride, so the result is
  deterministic.
"""
from __future__ import annotations

import numpy as np

LOW_PERCENTILE = 0.5
HIGH_PERCENTILE = 99.5
PERCENTILE_SAMPLE = 4_000_000


def auto_window(values: np.ndarray, mask: np.ndarray | None = None) -> tuple[float, float]:
    """(center, width) from the 0.5th..99.5th percentiles of the finite `values`.

    `mask` (same shape, True = use) excludes e.g. DICOM padding pixels.  An array with
    no usable value gives (0.0, 0.0); a constant one gives (value, 0.0).
    """
    flat = values[mask] if mask is not None else values.reshape(-1)
    if flat.size > PERCENTILE_SAMPLE:
        flat = flat[:: flat.size // PERCENTILE_SAMPLE + 1]
    flat = flat[np.isfinite(flat)] if flat.dtype.kind == "f" else flat
    if flat.size == 0:
        return 0.0, 0.0
    lo, hi = np.percentile(flat, [LOW_PERCENTILE, HIGH_PERCENTILE])
    return float(lo + hi) / 2.0, float(hi - lo)


def apply_linear_window(values: np.ndarray, center: float, width: float) -> np.ndarray:
    """Linear map of [center - width/2, center + width/2] onto 0..255 (clipped), as uint8.

    This is the LINEAR_EXACT function of PS3.3 C.11.2.1.3.2; a non-positive width
    (constant input) renders black.
    """
    if width <= 0:
        return np.zeros(values.shape, dtype=np.uint8)
    y = values.astype(np.float64)  # a new array, transformed in place (one allocation per frame)
    y -= center
    y /= width
    y += 0.5
    y *= 255.0
    return _to_uint8(y)


def apply_dicom_window(
    values: np.ndarray, center: float, width: float, function: str = "LINEAR"
) -> np.ndarray:
    """Apply a DICOM window (PS3.3 C.11.2.1.2 / C.11.2.1.3) to modality values, as uint8.

    LINEAR (the default)::

        if   x <= c - 0.5 - (w - 1) / 2:  y = 0
        elif x >  c - 0.5 + (w - 1) / 2:  y = 255
        else: y = ((x - (c - 0.5)) / (w - 1) + 0.5) * 255

    LINEAR_EXACT: ``y = ((x - c) / w + 0.5) * 255`` clipped; SIGMOID:
    ``y = 255 / (1 + exp(-4 (x - c) / w))``.  Raises ValueError for a width the
    function does not allow (w < 1 for LINEAR, w <= 0 otherwise).
    """
    function = (function or "LINEAR").strip().upper()
    if function == "LINEAR_EXACT":
        if width <= 0:
            raise ValueError("window width must be > 0")
        return apply_linear_window(values, center, width)
    if function == "SIGMOID":
        if width <= 0:
            raise ValueError("window width must be > 0")
        x = values.astype(np.float64, copy=False)
        with np.errstate(over="ignore"):
            y = 255.0 / (1.0 + np.exp(-4.0 * (x - center) / width))
        return _to_uint8(y)
    if width < 1:
        raise ValueError("window width must be >= 1")
    low = center - 0.5 - (width - 1) / 2.0
    if width == 1:
        return np.where(values.astype(np.float64, copy=False) <= low, 0, 255).astype(np.uint8)
    # y is increasing in x, 0 at x = low and 255 at x = high: clipping it (in `_to_uint8`) is the
    # piecewise definition above, without two masks and two temporary arrays per frame
    y = values.astype(np.float64)  # a new array, transformed in place
    y -= center - 0.5
    y /= width - 1
    y += 0.5
    y *= 255.0
    return _to_uint8(y)


def _to_uint8(y: np.ndarray) -> np.ndarray:
    """`y` (a float64 array of the caller's own, overwritten) rounded and clipped to 0..255."""
    np.nan_to_num(y, copy=False, nan=0.0, posinf=255.0, neginf=0.0)
    np.clip(y, 0.0, 255.0, out=y)
    np.rint(y, out=y)
    return y.astype(np.uint8)
