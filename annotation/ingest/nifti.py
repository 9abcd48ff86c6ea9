"""NIfTI-1/-2 (``.nii`` and ``.nii.gz``): slice a volume into 8-bit frames, keep a
de-identified copy.

Steps (`decode_nifti`):

1. Only the header is inflated first (544 bytes).  What it declares is checked before
   anything else is inflated or read (``too_large``): the file size (vox_offset + dims x
   bytes per voxel) against ``options.max_file_bytes``, the voxels of one 3-D volume against
   ``options.max_pixels``, and their decoded size (float32) against ``options.max_decoded_bytes``.
   Then gzip input is inflated up to the declared size and no further (a gzip bomb behind a
   small header stops there; ``max_file_bytes`` stays a hard limit); a truncated stream is
   ``corrupt``.
2. The full header (with its extensions) is parsed from the inflated bytes.
3. Only the first volume of a 4-D (or higher) image is used; ``metadata`` records how
   many there were.  2-D images are treated as one slice.
4. The volume is reoriented to the closest canonical RAS+ orientation
   (``nibabel.as_closest_canonical``) and sliced along ``options.nifti_axis``
   (0 sagittal, 1 coronal, 2 axial).
5. Slices are chosen by ``options.nifti_slices``: ``"all"``, ``"middle"`` (index n // 2)
   or ``"<N>"``: N slices at the centres of N equal bins, ``floor((i + 0.5) * n / N)``,
   so the (often empty) end slices are avoided; N >= n means all.  Constant slices
   (every finite voxel equal, or none finite) are skipped and counted in
   ``metadata["skipped_constant_slices"]``.
6. One auto window (0.5th..99.5th percentile over the whole volume, see `window`) is
   applied to every slice, so slices of one volume are comparable.
7. Display orientation: each slice is shown with superior (coronal, sagittal) or anterior
   (axial) at the top and in radiological convention: the patient's right on the
   viewer's left for axial and coronal slices, anterior on the left for sagittal ones.
   For a RAS+ slice with in-plane axes (u, v) that is ``slice[::-1, ::-1].T``.

The stored copy (``stored_bytes``, ``.nii.gz``) is the original file in its original
orientation with every volume, its voxel bytes copied verbatim, behind a header whose
free-text fields (``descrip``, ``aux_file``, ``db_name``, ``intent_name``, ``data_type``)
are blanked and with all header extensions dropped (they can carry DICOM headers or
other text).  It is gzipped with mtime 0, so equal input gives equal bytes.
"""
from __future__ import annotations

import gzip
import io
import zlib

import nibabel as nib
import numpy as np
from PIL import Image as PILImage

from .hashing import frame_sha256
from .sniff import gunzip_head, nifti_version
from .types import DecodedFrame, DecodedSource, DecodeOptions, IngestError, KnownHashes, all_known
from .window import apply_linear_window, auto_window

AXIS_NAMES = {0: "sagittal", 1: "coronal", 2: "axial"}
BLANKED_FIELDS = ("descrip", "aux_file", "db_name", "intent_name", "data_type")
_CHUNK = 1 << 20
_HEAD_BYTES = 544  # a NIfTI-2 header (540) and its extension flag


def decode_nifti(data: bytes, *, options: DecodeOptions, known: KnownHashes | None = None) -> DecodedSource:
    """Decode one single-file NIfTI image (raw or gzip) into slices; see the module docstring. When `known`
    says every selected slice is already imported, nothing is windowed, rendered or re-compressed."""
    compressed = data[:2] == b"\x1f\x8b"
    head = gunzip_head(data, _HEAD_BYTES) if compressed else data[:_HEAD_BYTES]
    version = nifti_version(head)
    if not version:
        raise IngestError("corrupt", "NIfTI header not found")
    image_class = nib.Nifti1Image if version == 1 else nib.Nifti2Image
    header_size = 348 if version == 1 else 540
    try:
        header = image_class.header_class.from_fileobj(io.BytesIO(head[:header_size]))
        shape = tuple(int(d) for d in header.get_data_shape())
        dtype = header.get_data_dtype()
        offset = int(header.get_data_offset())
    except Exception as exc:  # noqa: BLE001 - malformed header
        raise IngestError("corrupt", f"NIfTI header cannot be read ({type(exc).__name__})") from exc
    if len(shape) < 2 or min(shape) < 1:
        raise IngestError("corrupt", "NIfTI image with fewer than two dimensions")
    if dtype.fields is not None or dtype.kind not in "biuf":
        raise IngestError("unsupported_format", f"NIfTI data type {dtype} (only scalar real voxels)")
    declared = max(offset, header_size) + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    _check_declared(shape, dtype, declared, options)
    if options.nifti_axis not in AXIS_NAMES:
        raise IngestError("invalid_options", "nifti_axis must be 0, 1 or 2")
    volume_shape = (shape + (1,))[:3]
    # nothing is inflated before here; then never more than the header declares
    raw = inflate(data, limit=options.max_file_bytes, stop_at=declared) if compressed else data
    try:
        header = image_class.header_class.from_fileobj(io.BytesIO(raw))  # with its extensions
    except Exception as exc:  # noqa: BLE001 - damaged extensions
        raise IngestError("corrupt", f"NIfTI header cannot be read ({type(exc).__name__})") from exc

    try:
        image = image_class.from_bytes(raw)
        index = (slice(None),) * min(len(shape), 3) + (0,) * max(len(shape) - 3, 0)
        volume = np.asarray(image.dataobj[index], dtype=np.float32).reshape(volume_shape)
        canonical = nib.as_closest_canonical(nib.Nifti1Image(volume, image.affine))
        volume = np.asarray(canonical.dataobj, dtype=np.float32)
        original_axcodes = "".join(nib.aff2axcodes(image.affine))
        zooms = [float(z) for z in canonical.header.get_zooms()[:3]]
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001 - truncated or inconsistent file
        raise IngestError("corrupt", f"NIfTI voxel data cannot be read ({type(exc).__name__})") from exc

    axis = options.nifti_axis
    chosen = select_slices(volume.shape[axis], options.nifti_slices)
    shown, skipped = [], 0
    for k in chosen:
        plane = np.take(volume, k, axis=axis)
        if _is_constant(plane):
            skipped += 1
            continue
        plane = np.ascontiguousarray(plane[::-1, ::-1].T)
        shown.append((int(k), plane, frame_sha256(plane)))
    if shown and all_known([sha for _, _, sha in shown], known):
        return DecodedSource(format="nifti", frames=[], known_hashes=[sha for _, _, sha in shown])
    center, width = auto_window(volume)
    frames = [DecodedFrame(
        pixels=plane, rendered=PILImage.fromarray(apply_linear_window(plane, center, width)), frame_index=k,
        window_center=center, window_width=width, window_source="auto_percentile", sha256=sha,
    ) for k, plane, sha in shown]
    if not frames:
        raise IngestError("no_pixel_data", "every selected NIfTI slice is constant")

    metadata = {
        "nifti_version": version,
        "shape": list(shape),
        "data_type": str(dtype),
        "volumes_in_file": int(np.prod(shape[3:], dtype=np.int64)) if len(shape) > 3 else 1,
        "volume_used": 0,
        "original_orientation": original_axcodes,
        "canonical_shape": list(volume.shape),
        "voxel_size": zooms,
        "axis": axis,
        "axis_name": AXIS_NAMES[axis],
        "slices_option": options.nifti_slices,
        "selected_slices": len(chosen),
        "skipped_constant_slices": skipped,
        "display": "radiological; anterior (axial) or superior (coronal/sagittal) up",
        "window_source": "auto_percentile",
    }
    stored, deid_record = deidentified_copy(raw, header, shape, dtype, version)
    return DecodedSource(
        format="nifti", frames=frames, metadata=metadata, deid_record=deid_record,
        stored_bytes=stored, stored_suffix=".nii.gz",
    )


def _check_declared(shape: tuple, dtype: np.dtype, declared: int, options: DecodeOptions) -> None:
    """Sizes from the header alone, before a voxel is read or inflated: the whole file, the voxels of
    the first volume, and its decoded size (float32 working copy)."""
    if declared > options.max_file_bytes:
        raise IngestError("too_large", f"NIfTI header declares {declared} bytes, more than {options.max_file_bytes}")
    voxels = int(np.prod((shape + (1,))[:3], dtype=np.int64))
    if voxels > options.max_pixels:
        raise IngestError("too_large", f"volume {(shape + (1,))[:3]} exceeds {options.max_pixels} voxels")
    decoded = voxels * max(dtype.itemsize, 4)
    if decoded > options.max_decoded_bytes:
        raise IngestError("too_large", f"volume decodes to {decoded} bytes, more than {options.max_decoded_bytes}")


def select_slices(n: int, option: str) -> list[int]:
    """Slice indices for ``"all"``, ``"middle"`` or ``"<N>"`` (see module docstring)."""
    option = str(option).strip().lower()
    if option == "all":
        return list(range(n))
    if option == "middle":
        return [n // 2]
    if option.isdigit() and int(option) > 0:
        count = int(option)
        if count >= n:
            return list(range(n))
        return sorted({int((i + 0.5) * n / count) for i in range(count)})
    raise IngestError("invalid_options", "nifti_slices must be 'all', 'middle' or a positive integer")


def inflate(data: bytes, *, limit: int, stop_at: int | None = None) -> bytes:
    """Gunzip `data`, refusing to produce more than `limit` bytes (``too_large``); with `stop_at`,
    stop once that many bytes are out (what the header declares: anything after is ignored)."""
    out, total = [], 0
    rest = data
    want = limit + 1 if stop_at is None else min(stop_at, limit + 1)
    try:
        while rest and total < want:
            stream = zlib.decompressobj(16 + zlib.MAX_WBITS)
            chunk_in = rest
            while total < want:
                piece = stream.decompress(chunk_in, min(_CHUNK, want - total))
                total += len(piece)
                if total > limit:
                    raise IngestError("too_large", f"decompressed NIfTI exceeds {limit} bytes")
                out.append(piece)
                chunk_in = stream.unconsumed_tail
                if stream.eof or (not piece and not chunk_in):
                    break
            if total >= want:
                break
            if not stream.eof:
                raise IngestError("corrupt", "gzip stream is truncated")
            rest = stream.unused_data.lstrip(b"\x00")  # further gzip members, if any
    except zlib.error as exc:
        raise IngestError("corrupt", "gzip stream is damaged") from exc
    return b"".join(out)


def deidentified_copy(raw: bytes, header, shape: tuple, dtype: np.dtype, version: int) -> tuple[bytes, dict]:
    """Gzipped NIfTI: blanked text fields, no extensions, voxel bytes copied verbatim."""
    clean = header.copy()
    blanked = []
    for field in BLANKED_FIELDS:
        if field in clean and bytes(np.asarray(clean[field]).tobytes()).strip(b"\x00 "):
            blanked.append(field)
        if field in clean:
            clean[field] = b""
    extensions = len(getattr(header, "extensions", []) or [])
    clean.extensions.clear()
    header_size = 348 if version == 1 else 540
    clean["vox_offset"] = header_size + 4
    start = int(header.get_data_offset())
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    voxels = raw[start:start + nbytes]
    if len(voxels) != nbytes:
        raise IngestError("corrupt", "NIfTI voxel data is truncated")
    body = clean.binaryblock + b"\x00\x00\x00\x00" + voxels
    record = {
        "profile": "Med-R2 Studio NIfTI header scrub",
        "blanked_fields": blanked,
        "extensions_removed": extensions,
    }
    return gzip.compress(body, compresslevel=6, mtime=0), record


def _is_constant(plane: np.ndarray) -> bool:
    finite = plane[np.isfinite(plane)]
    return finite.size == 0 or bool(finite.min() == finite.max())
