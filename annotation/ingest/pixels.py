"""The stored values of one imported frame, for the viewer's window/level and value readout.

Pure (bytes in, arrays and bytes out; no Django). The importer rendered each frame to an 8-bit
PNG; the viewer needs what the PNG lost: the frame's values in modality units, laid out exactly
like the PNG (row ``y``, column ``x``):

- DICOM (grey): the stored values through the Modality LUT (Rescale Slope/Intercept), so CT is in
  Hounsfield units. Colour DICOM has no single value per pixel: ``colour``.
- NIfTI: voxel value × ``scl_slope`` + ``scl_inter`` (nibabel applies them), the slice
  ``frame_index`` along the axis the import used, turned like the importer turned it
  (`annotation.ingest.nifti`, step 7).
- Raster (PNG/JPEG/TIFF, no source kept): the grey level of the rendered PNG, which *is* the
  source value for 8-bit grey files. A deep (16-bit, float) raster was windowed into its PNG and
  its values were not kept; a colour raster has none: ``not_stored`` / ``colour``.

Every decode is checked against the frame's content hash recorded at import (`values_sha256`
is the importer's `hashing.frame_sha256`), so the viewer never shows values other than the ones
that were imported (``mismatch`` otherwise).

`encode` packs values as little-endian Int16 when they are whole numbers within its range (CT,
most MR), else Float32. Failures raise `IngestError` with one of the codes above or ``corrupt``.
"""
from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import nibabel as nib
import numpy as np
import pydicom
from PIL import Image as PILImage

from .hashing import frame_sha256
from .nifti import inflate
from .sniff import nifti_version
from .types import IngestError

INT16 = np.dtype("<i2")
FLOAT32 = np.dtype("<f4")
#: voxels of canonical NIfTI volumes kept decoded in this process (float32: 4 bytes a voxel)
VOLUME_CACHE_VOXELS = 48_000_000
#: a stored source passed the import's size limits; this only stops a damaged gzip from running away
MAX_INFLATED_BYTES = 4 << 30


@dataclass(frozen=True)
class EncodedPixels:
    body: bytes          # width × height values, row-major, little-endian
    dtype: str           # "int16" | "float32"
    width: int
    height: int
    min: float
    max: float


def values_sha256(values: np.ndarray) -> str:
    """The import's content hash of a frame (`annotation.ingest.hashing.frame_sha256`)."""
    return frame_sha256(values)


def units_for(modality: str, source_format: str) -> str:
    """What one value means: Hounsfield units for CT, a grey level for rasters, '' (arbitrary) else."""
    if (modality or "").upper() == "CT":
        return "HU"
    if source_format in ("png", "jpeg", "tiff"):
        return "grey level"
    return ""


def frame_values(*, source_format: str, frame_index: int | None, read_source: Callable[[], bytes],
                 source_key: str, nifti_axis: int = 2) -> np.ndarray:
    """The frame's values in modality units, shape (height, width), in the importer's dtype.

    `read_source` returns the stored source file (the rendered PNG for rasters); `source_key`
    (its content hash) keys the cache of decoded NIfTI volumes."""
    if source_format == "dicom":
        return dicom_frame(read_source(), frame_index)
    if source_format == "nifti":
        return nifti_frame(source_key, read_source, frame_index, nifti_axis)
    if source_format in ("png", "jpeg", "tiff"):
        return raster_frame(read_source())
    raise IngestError("unsupported_format", f"no stored values for {source_format or 'this'} images")


def checked(values: np.ndarray, expected_sha256: str) -> np.ndarray:
    """`values` when they hash to the frame's import hash, else ``mismatch``."""
    if expected_sha256 and values_sha256(values) != expected_sha256:
        raise IngestError("mismatch", "the stored source does not reproduce this frame's imported values")
    return values


# --------------------------------------------------------------------------- DICOM
def _dataset(source, *, pixels: bool = True) -> pydicom.Dataset:
    """`source`: the file's bytes, or a path (then only what is needed is read)."""
    try:
        return pydicom.dcmread(io.BytesIO(source) if isinstance(source, bytes) else source, force=True,
                               stop_before_pixels=not pixels)
    except Exception as exc:  # noqa: BLE001 - any parse failure is a corrupt source
        raise IngestError("corrupt", f"DICOM source cannot be read ({type(exc).__name__})") from exc


def dicom_frame(data: bytes, frame_index: int | None) -> np.ndarray:
    """One frame's modality values (float32, as the importer hashed them)."""
    ds = _dataset(data)
    if int(ds.get("SamplesPerPixel") or 1) != 1 or str(ds.get("PhotometricInterpretation", "")).strip().upper() \
            == "PALETTE COLOR":
        raise IngestError("colour", "a colour image has no single stored value per pixel")
    try:
        arr = ds.pixel_array
        n_frames = int(ds.get("NumberOfFrames") or 1)
        raw = arr[frame_index or 0] if n_frames > 1 else arr
        return np.asarray(pydicom.pixels.apply_modality_lut(raw, ds), dtype=np.float32)
    except (IndexError, TypeError) as exc:
        raise IngestError("corrupt", f"frame {frame_index} is not in the DICOM source") from exc
    except Exception as exc:  # noqa: BLE001 - undecodable pixel data
        raise IngestError("corrupt", f"DICOM pixel data cannot be decoded ({type(exc).__name__})") from exc


def dicom_orientation(source) -> dict | None:
    """Orientation markers from Image Orientation (Patient), or None when the file has none.
    `source`: the file's bytes or its path (only the header is read).

    Returns ``{"left", "right", "top", "bottom"}``: the patient directions (L/R, A/P, S/I, up to
    three letters for an oblique plane, strongest first) toward each edge of the displayed frame."""
    ds = _dataset(source, pixels=False)
    try:
        values = [float(v) for v in ds.get("ImageOrientationPatient") or []]
    except (TypeError, ValueError):
        return None
    if len(values) != 6 or not any(values[:3]) or not any(values[3:]):
        return None
    row, col = np.array(values[:3]), np.array(values[3:])
    return {"right": direction_letters(row), "left": direction_letters(-row),
            "bottom": direction_letters(col), "top": direction_letters(-col)}


def direction_letters(vector) -> str:
    """Patient (LPS) direction letters of a vector: components of at least 0.3, strongest first."""
    letters = (("L", "R"), ("P", "A"), ("S", "I"))  # + and - along x, y, z
    parts = sorted(((abs(v), letters[i][0] if v > 0 else letters[i][1]) for i, v in enumerate(vector)
                    if abs(v) >= 0.3), reverse=True)
    return "".join(letter for _, letter in parts)


#: where the importer's NIfTI display puts each patient direction (annotation.ingest.nifti, step 7)
NIFTI_ORIENTATION = {
    0: {"left": "A", "right": "P", "top": "S", "bottom": "I"},    # sagittal
    1: {"left": "R", "right": "L", "top": "S", "bottom": "I"},    # coronal
    2: {"left": "R", "right": "L", "top": "A", "bottom": "P"},    # axial
}


# --------------------------------------------------------------------------- NIfTI
_volumes: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()
_volumes_lock = threading.Lock()


def nifti_frame(source_key: str, read_source: Callable[[], bytes], frame_index: int | None, axis: int) -> np.ndarray:
    """Slice `frame_index` along `axis` of the closest-canonical (RAS+) volume, shown as the importer
    showed it (anterior or superior up, radiological left/right)."""
    if axis not in NIFTI_ORIENTATION:
        raise IngestError("corrupt", f"unknown NIfTI slicing axis {axis}")
    volume = _canonical_volume(source_key, read_source, axis)
    k = 0 if frame_index is None else int(frame_index)
    if not 0 <= k < volume.shape[axis]:
        raise IngestError("corrupt", f"slice {k} is not in the NIfTI source")
    plane = np.take(volume, k, axis=axis)
    return np.ascontiguousarray(plane[::-1, ::-1].T)


def _canonical_volume(source_key: str, read_source: Callable[[], bytes], axis: int) -> np.ndarray:
    key = (source_key, axis)
    with _volumes_lock:
        if key in _volumes:
            _volumes.move_to_end(key)
            return _volumes[key]
    volume = _decode_volume(read_source())
    with _volumes_lock:
        _volumes[key] = volume
        while sum(v.size for v in _volumes.values()) > VOLUME_CACHE_VOXELS and len(_volumes) > 1:
            _volumes.popitem(last=False)
    return volume


def _decode_volume(data: bytes) -> np.ndarray:
    raw = inflate(data, limit=MAX_INFLATED_BYTES) if data[:2] == b"\x1f\x8b" else data
    version = nifti_version(raw[:544])
    if not version:
        raise IngestError("corrupt", "NIfTI header not found in the stored source")
    try:
        image = (nib.Nifti1Image if version == 1 else nib.Nifti2Image).from_bytes(raw)
        shape = tuple(int(d) for d in image.shape)
        volume_shape = (shape + (1,))[:3]
        index = (slice(None),) * min(len(shape), 3) + (0,) * max(len(shape) - 3, 0)
        volume = np.asarray(image.dataobj[index], dtype=np.float32).reshape(volume_shape)
        canonical = nib.as_closest_canonical(nib.Nifti1Image(volume, image.affine))
        return np.asarray(canonical.dataobj, dtype=np.float32)
    except Exception as exc:  # noqa: BLE001 - truncated or inconsistent file
        raise IngestError("corrupt", f"NIfTI voxel data cannot be read ({type(exc).__name__})") from exc


# --------------------------------------------------------------------------- raster
def raster_frame(png: bytes) -> np.ndarray:
    """Grey levels of a rendered grey PNG (uint8); ``colour`` for an RGB one."""
    try:
        with PILImage.open(io.BytesIO(png)) as im:
            im.load()
            if im.mode not in ("L", "1", "P", "LA"):
                raise IngestError("colour", "a colour image has no single stored value per pixel")
            return np.ascontiguousarray(np.asarray(im.convert("L"), dtype=np.uint8))
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001 - damaged PNG
        raise IngestError("corrupt", f"the rendered image cannot be read ({type(exc).__name__})") from exc


# --------------------------------------------------------------------------- wire format
def encode(values: np.ndarray) -> EncodedPixels:
    """Little-endian Int16 when every value is a whole number within Int16, else Float32.
    Non-finite values (NaN voxels) are sent as Float32 NaN and left out of min/max."""
    if values.ndim != 2:
        raise IngestError("corrupt", f"expected a 2-D frame, got shape {values.shape}")
    height, width = values.shape
    finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    lo = float(finite.min()) if finite.size else 0.0
    hi = float(finite.max()) if finite.size else 0.0
    whole = finite.size == values.size and (values.dtype.kind in "iub" or bool(np.all(np.mod(finite, 1) == 0)))
    if whole and lo >= -32768 and hi <= 32767:
        body, dtype = values.astype(INT16).tobytes(), "int16"
    else:
        body, dtype = values.astype(FLOAT32).tobytes(), "float32"
    return EncodedPixels(body=body, dtype=dtype, width=int(width), height=int(height), min=lo, max=hi)
