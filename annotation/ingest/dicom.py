"""DICOM: de-identification (PS3.15 Annex E basic profile) and rendering to 8-bit frames.

`decode_dicom` is the entry point used by `annotation.ingest.decode`.  Order of work:
parse -> size guard (before any pixel is decoded) -> decode pixels -> hash each frame's
values (a file whose frames are all known stops here) -> split key (from the original
Patient ID) -> render -> `deidentify` -> write the de-identified file.

Nothing here logs or returns attribute *values*; `deidentify` reports counts and
standard keywords only.
"""
from __future__ import annotations

import hashlib
import io
import re
import uuid
import warnings

import numpy as np
import pydicom
from pydicom.dataelem import RawDataElement
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.multival import MultiValue
from pydicom.sequence import Sequence
from pydicom.uid import (
    UID,
    DeflatedExplicitVRLittleEndian,
    ExplicitVRBigEndian,
    ExplicitVRLittleEndian,
    ImplicitVRLittleEndian,
)

from . import deid_profile
from .dicom_render import frame_values, render_plane
from .hashing import frame_sha256
from .types import DecodedSource, DecodeOptions, IngestError, KnownHashes, all_known

DEID_METHOD = [
    "Med-R2 Studio",
    "PS3.15 Annex E Basic Application Level Confidentiality Profile",
]
"""Value of De-identification Method (0012,0063).  LO values are limited to 64
characters, so the description is stored as two values of one multi-valued element."""

#: Dummy values for action D, by VR.  UI values are remapped like U instead; sequences
#: are replaced by an empty sequence (stricter than a "dummy item", and for image IODs
#: these sequences are Type 2 or 3).
DUMMY_BY_VR = {
    "PN": "ANONYMOUS", "DA": "19000101", "TM": "000000", "DT": "19000101000000",
    "AS": "000Y", "IS": "0", "DS": "0",
    "AE": "ANONYMOUS", "CS": "ANONYMOUS", "SH": "ANONYMOUS", "LO": "ANONYMOUS",
    "LT": "ANONYMOUS", "ST": "ANONYMOUS", "UT": "ANONYMOUS", "UC": "ANONYMOUS", "UR": "ANONYMOUS",
    "US": 0, "SS": 0, "UL": 0, "SL": 0, "UV": 0, "SV": 0, "FL": 0.0, "FD": 0.0, "AT": 0,
    "OB": b"\x00" * 8, "OW": b"\x00" * 8, "OD": b"\x00" * 8, "OF": b"\x00" * 8,
    "OL": b"\x00" * 8, "OV": b"\x00" * 8, "UN": b"\x00" * 8,
}

_PIXEL_TAGS = (0x7FE00010, 0x7FE00008, 0x7FE00009)
_ACTION_NAMES = {"X": "removed", "Z": "emptied", "D": "dummied", "U": "uids_remapped"}


# --------------------------------------------------------------------------- keys & UIDs
def remap_uid(uid: str, salt: str) -> str:
    """Deterministic keyed replacement UID under the ``2.25`` (UUID) root.

    The UUID is the first 128 bits of SHA-512(salt || NUL || uid) with RFC 9562 version 8
    (custom) and variant bits set, so the result is a valid UUID-derived UID of at most
    44 characters, the same for the same (salt, uid) in every file and every run.
    """
    digest = hashlib.sha512(f"{salt}\x00{uid}".encode()).digest()
    b = bytearray(digest[:16])
    b[6] = (b[6] & 0x0F) | 0x80  # version 8
    b[8] = (b[8] & 0x3F) | 0x80  # RFC variant
    return f"2.25.{uuid.UUID(bytes=bytes(b)).int}"


def split_key(ds: Dataset, salt: str) -> str:
    """Keyed patient key for train/test splits, computed before de-identification.

    ``pt-`` + 16 hex of SHA-256(salt + PatientID); without a Patient ID, ``st-`` + the
    same hash of the Study Instance UID (one study, one group); ``""`` if neither.
    """
    patient = str(ds.get("PatientID", "") or "").strip()
    if patient:
        return "pt-" + hashlib.sha256((salt + patient).encode()).hexdigest()[:16]
    study = str(ds.get("StudyInstanceUID", "") or "").strip()
    if study:
        return "st-" + hashlib.sha256((salt + study).encode()).hexdigest()[:16]
    return ""


# --------------------------------------------------------------------------- de-identification
def deidentify(ds: Dataset, *, salt: str) -> dict:
    """Apply the basic profile to `ds` in place (file meta included) and describe what was done.

    Actions come from `deid_profile.BASIC_PROFILE` (compound codes resolved by
    `deid_profile.BASIC_CHOICE`); private attributes, curves (50xx) and overlay data and
    comments (60xx,3000/4000) are removed; every kept sequence is processed recursively.
    Empty originals stay empty under Z and D.  Afterwards Patient Identity Removed is YES,
    De-identification Method and its Code Sequence (DCM 113100) are set, and
    Longitudinal Temporal Information Modified is REMOVED (dates are emptied/dummied).

    Returns ``{"profile", "profile_revision", "method", "counts", "keywords"}``: counts per
    action and the sorted standard keywords touched per action, never any value.
    """
    counts = {"removed": 0, "emptied": 0, "dummied": 0, "uids_remapped": 0,
              "private_removed": 0, "curves_overlays_removed": 0, "file_meta_removed": 0}
    keywords: dict[str, set[str]] = {a: set() for a in "XZDU"}
    _walk(ds, salt, counts, keywords)

    meta = getattr(ds, "file_meta", None)
    if meta is not None:
        for tag in deid_profile.FILE_META_REMOVE:
            if tag in meta:
                del meta[tag]
                counts["file_meta_removed"] += 1
        if meta.get("MediaStorageSOPInstanceUID"):
            meta.MediaStorageSOPInstanceUID = remap_uid(str(meta.MediaStorageSOPInstanceUID), salt)
            counts["uids_remapped"] += 1
            keywords["U"].add("MediaStorageSOPInstanceUID")

    ds.PatientIdentityRemoved = "YES"
    ds.DeidentificationMethod = DEID_METHOD
    code = Dataset()
    code.CodeValue = "113100"
    code.CodingSchemeDesignator = "DCM"
    code.CodeMeaning = "Basic Application Confidentiality Profile"
    ds.DeidentificationMethodCodeSequence = Sequence([code])
    ds.LongitudinalTemporalInformationModified = "REMOVED"
    return {
        "profile": deid_profile.PROFILE_NAME,
        "profile_revision": deid_profile.PROFILE_REVISION,
        "method": "\\".join(DEID_METHOD),
        "counts": counts,
        "keywords": {a: sorted(k) for a, k in keywords.items()},
    }


def _walk(ds: Dataset, salt: str, counts: dict, keywords: dict) -> None:
    for tag in list(ds.keys()):
        group, element = tag >> 16, tag & 0xFFFF
        if group % 2 == 1:
            del ds[tag]
            counts["private_removed"] += 1
            continue
        if 0x5000 <= group <= 0x50FF or (0x6000 <= group <= 0x60FF and element in (0x3000, 0x4000)):
            del ds[tag]
            counts["curves_overlays_removed"] += 1
            continue
        action = deid_profile.action_for(tag)
        if action == "X":
            del ds[tag]
        elif action == "K" and _plain_raw(ds, tag):
            continue  # kept as read: not parsed, and written back byte for byte
        else:
            elem = ds[tag]
            if elem.VR == "SQ" and action in ("K", "U"):
                for item in elem.value or []:
                    _walk(item, salt, counts, keywords)
            elif action == "Z":
                elem.value = elem.empty_value
            elif action == "D":
                _dummy(elem, salt)
            elif action == "U":
                elem.value = _remap_value(elem.value, salt)
        if action != "K":
            counts[_ACTION_NAMES[action]] += 1
            keywords[action].add(pydicom.datadict.keyword_for_tag(tag) or f"({group:04X},{element:04X})")


def _plain_raw(ds: Dataset, tag: int) -> bool:
    """True when the element is still unparsed, was read with an explicit VR, and that VR is not a sequence
    (nor UN, which may hide one): a kept element of that kind needs neither a look nor a recursion. Implicit
    VR elements are parsed as before (writing them needs their VR)."""
    raw = ds.get_item(tag)
    return isinstance(raw, RawDataElement) and raw.VR is not None and raw.VR not in ("SQ", "UN")


def _dummy(elem, salt: str) -> None:
    if elem.VR == "SQ":
        elem.value = Sequence()
    elif elem.VR == "UI":
        elem.value = _remap_value(elem.value, salt)
    elif elem.is_empty:
        return
    elif elem.VR in DUMMY_BY_VR:
        elem.value = DUMMY_BY_VR[elem.VR]
    else:  # unresolved VR such as "US or SS": an empty value is the safe stand-in
        elem.value = elem.empty_value


def _remap_value(value, salt: str):
    if isinstance(value, bytes):  # UN: undecoded UI value
        text = value.decode("ascii", "replace").rstrip("\x00 ")
        mapped = "\\".join(remap_uid(u.strip(), salt) for u in text.split("\\") if u.strip())
        return (mapped + ("\x00" if len(mapped) % 2 else "")).encode("ascii")
    if isinstance(value, (MultiValue, list, tuple)):
        return [remap_uid(str(u), salt) for u in value if str(u)]
    return remap_uid(str(value), salt) if value not in (None, "") else value


# --------------------------------------------------------------------------- decoding
def decode_dicom(data: bytes, *, options: DecodeOptions, known: KnownHashes | None = None) -> DecodedSource:
    """Decode, render and de-identify one DICOM file (Part 10 or preamble-less).

    The frames are hashed as soon as their pixels are decoded; when `known` says every one is
    already imported, decoding stops there (nothing de-identified, rendered or re-encoded) and the
    result carries only `known_hashes`."""
    ds = _read(data)
    if not any(tag in ds for tag in _PIXEL_TAGS):
        sop_class = ds.get("SOPClassUID") or (getattr(ds, "file_meta", None) or Dataset()).get(
            "MediaStorageSOPClassUID")
        kind = getattr(sop_class, "name", "") or "unknown SOP class"
        if "Rows" in ds or "Image Storage" in kind:
            # an image object always carries pixel data: this one was cut at an element boundary
            raise IngestError("corrupt", f"image object ({kind}) without pixel data: truncated, or its pixels "
                                         "were stripped")
        raise IngestError("no_pixel_data", f"DICOM object without pixel data ({kind}): not an image")
    rows, cols, n_frames, samples = _geometry(ds)
    if rows * cols * n_frames * samples > options.max_pixels:
        raise IngestError(
            "too_large", f"{n_frames} frame(s) of {rows}x{cols}x{samples} exceed {options.max_pixels} pixels"
        )
    decoded_bytes = rows * cols * n_frames * samples * max(1, -(-int(ds.get("BitsAllocated") or 8) // 8))
    if decoded_bytes > options.max_decoded_bytes:
        raise IngestError("too_large", f"pixel data decodes to {decoded_bytes} bytes, more than "
                                       f"{options.max_decoded_bytes}")
    tsuid = _ensure_transfer_syntax(ds)
    arr = _decode_pixels(ds, tsuid)
    planes = frame_values(ds, arr, n_frames, samples)
    hashes = [frame_sha256(plane.values) for plane in planes]
    if all_known(hashes, known):
        return DecodedSource(format="dicom", frames=[], known_hashes=hashes)

    key = split_key(ds, options.uid_salt)
    metadata = _technical_metadata(ds, tsuid, rows, cols, n_frames)
    position = series_position(ds)
    modality = str(ds.get("Modality", "") or "").strip().upper()
    body_region = str(ds.get("BodyPartExamined", "") or "").strip().upper()
    frames = [render_plane(ds, plane, sha) for plane, sha in zip(planes, hashes)]
    metadata["window_source"] = frames[0].window_source

    record = deidentify(ds, salt=options.uid_salt)
    # The 128-byte preamble is free-form (dual-personality files hide a TIFF header there, and
    # anything else could hide with it): the stored copy gets an all-zero preamble.
    ds.preamble = b"\x00" * 128
    record["preamble_cleared"] = True
    buf = io.BytesIO()
    try:
        ds.save_as(buf, enforce_file_format=True)
    except Exception as exc:  # noqa: BLE001 - a dataset we cannot re-encode is unusable
        raise IngestError("corrupt", f"cannot re-encode the de-identified dataset ({type(exc).__name__})") from exc
    return DecodedSource(
        format="dicom", frames=frames, modality=modality, body_region=body_region, split_key=key,
        metadata=metadata, deid_record=record, stored_bytes=buf.getvalue(), stored_suffix=".dcm",
        # read after de-identification: the remapped UID, the one the stored copy carries
        series_uid=str(ds.get("SeriesInstanceUID", "") or "").strip()[:64], series_position=position,
    )


def _read(data: bytes) -> Dataset:
    has_preamble = len(data) >= 132 and data[128:132] == b"DICM"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ds = pydicom.dcmread(io.BytesIO(data), force=not has_preamble)
    except Exception as exc:  # noqa: BLE001 - any parse failure is a corrupt file
        raise IngestError("corrupt", f"DICOM parse failed ({type(exc).__name__})") from exc
    if any("EOF" in str(w.message) or "end of file" in str(w.message).lower() for w in caught):
        raise IngestError("corrupt", "DICOM file is truncated")
    if _is_truncated(ds, data):
        raise IngestError("corrupt", "DICOM file is truncated")
    return ds


def _is_truncated(ds: Dataset, data: bytes) -> bool:
    """pydicom stops silently at end of file; catch what it leaves behind.

    The file was cut short when a top-level element (file meta included) holds fewer
    bytes than its declared length, when the last element ends before the end of the
    data (a cut inside the next element's header), or when the last element has
    undefined length (encapsulated pixel data) and the data does not end with the
    Sequence Delimitation Item.  Positions are not checked for Deflated transfer
    syntaxes, whose positions refer to the inflated stream, nor when the last element
    is a sequence (pydicom has already parsed it and kept no position).
    """
    meta = getattr(ds, "file_meta", None) or Dataset()
    for source in (meta, ds):
        for tag in source.keys():
            raw = source.get_item(tag)
            if isinstance(raw, RawDataElement) and raw.length != 0xFFFFFFFF and raw.value is not None \
                    and len(raw.value) < raw.length:
                return True
    if len(ds) == 0:
        return True  # nothing after the file meta
    last = ds.get_item(max(ds.keys()))
    if not isinstance(last, RawDataElement) or last.value_tell is None:
        return False  # a parsed sequence: its end is not known here
    if str(meta.get("TransferSyntaxUID", "")) == DeflatedExplicitVRLittleEndian:
        return False
    if last.length == 0xFFFFFFFF:
        delimiter = b"\xfe\xff\xdd\xe0" if last.is_little_endian else b"\xff\xfe\xe0\xdd"
        return not data.endswith(delimiter + b"\x00\x00\x00\x00")
    return last.value_tell + last.length != len(data)


def _geometry(ds: Dataset) -> tuple[int, int, int, int]:
    try:
        rows, cols = int(ds.Rows), int(ds.Columns)
        n_frames = int(ds.get("NumberOfFrames") or 1)
        samples = int(ds.get("SamplesPerPixel") or 1)
    except Exception as exc:  # noqa: BLE001 - missing or malformed image pixel module
        raise IngestError("corrupt", f"invalid image geometry ({type(exc).__name__})") from exc
    if rows <= 0 or cols <= 0 or n_frames <= 0 or samples not in (1, 3):
        raise IngestError("corrupt", "invalid image geometry")
    return rows, cols, n_frames, samples


def _ensure_transfer_syntax(ds: Dataset) -> UID:
    """The dataset's transfer syntax; for files without file meta, the encoding it was read with."""
    if not hasattr(ds, "file_meta") or ds.file_meta is None:
        ds.file_meta = FileMetaDataset()
    tsuid = ds.file_meta.get("TransferSyntaxUID")
    if not tsuid:
        implicit, little = ds.original_encoding
        tsuid = ImplicitVRLittleEndian if implicit else (ExplicitVRLittleEndian if little else ExplicitVRBigEndian)
        ds.file_meta.TransferSyntaxUID = tsuid
    return UID(str(tsuid))


def _decode_pixels(ds: Dataset, tsuid: UID) -> np.ndarray:
    """Every transfer syntax that pydicom can decode with the installed plugins (pylibjpeg: JPEG,
    JPEG-LS, JPEG 2000, HTJ2K, RLE; Pillow) decodes here.  A failure becomes an `IngestError` whose
    message carries each plugin's own one-line reason, never a traceback."""
    if tsuid.is_compressed:
        try:
            decoder = pydicom.pixels.get_decoder(tsuid)
        except NotImplementedError as exc:
            raise IngestError("unsupported_transfer_syntax", f"no decoder for {tsuid.name}") from exc
        if not decoder.is_available:
            raise IngestError("unsupported_transfer_syntax", f"no installed decoder plugin for {tsuid.name}")
    try:
        return ds.pixel_array
    except NotImplementedError as exc:
        raise IngestError("unsupported_transfer_syntax", f"cannot decode {tsuid.name}") from exc
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - mapped to a stable code below
        reasons = plugin_reasons(exc)
        if tsuid.is_compressed and reasons and all(_NOT_SUPPORTED.search(r) for r in reasons):
            raise IngestError("unsupported_transfer_syntax",
                              f"{tsuid.name}: this variant is not supported ({'; '.join(reasons)})") from exc
        detail = "; ".join(reasons) or type(exc).__name__
        raise IngestError("corrupt", f"{tsuid.name} pixel data cannot be decoded: {detail}") from exc


_NOT_SUPPORTED = re.compile(r"not support|unsupported|not implemented", re.IGNORECASE)


def plugin_reasons(exc: BaseException, limit: int = 200) -> list[str]:
    """One line per reason in a decoder's error: pydicom joins its plugins' failures as
    ``"Unable to decode ...:\n  pylibjpeg: msg\n  pillow: msg"``; other errors give their first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("Unable to decode"):
        return [line[:limit] for line in lines[1:5]]
    return [f"{type(exc).__name__}: {lines[0]}"[:limit]] if lines else []


def _technical_metadata(ds: Dataset, tsuid: UID, rows: int, cols: int, n_frames: int) -> dict:
    """Technical, non-identifying fields only (JSON-serialisable)."""

    def num(value):
        try:
            if isinstance(value, (MultiValue, list, tuple)):
                return [float(v) for v in value]
            return None if value in (None, "") else float(value)
        except (TypeError, ValueError):
            return None

    return {
        "rows": rows,
        "columns": cols,
        "number_of_frames": n_frames,
        "samples_per_pixel": int(ds.get("SamplesPerPixel") or 1),
        "photometric_interpretation": str(ds.get("PhotometricInterpretation", "") or ""),
        "bits_allocated": int(ds.get("BitsAllocated") or 0),
        "bits_stored": int(ds.get("BitsStored") or 0),
        "pixel_spacing": num(ds.get("PixelSpacing")),
        "slice_thickness": num(ds.get("SliceThickness")),
        "rescale_slope": num(ds.get("RescaleSlope")),
        "rescale_intercept": num(ds.get("RescaleIntercept")),
        "transfer_syntax_uid": str(tsuid),
        "transfer_syntax": tsuid.name,
        "sop_class_uid": str(ds.get("SOPClassUID", "") or ""),
        "modality": str(ds.get("Modality", "") or ""),
        "body_part_examined": str(ds.get("BodyPartExamined", "") or ""),
        "plane": image_plane(ds.get("ImageOrientationPatient")),
        # (0028,0301): text burned into the pixels; releases refuse such an image (releases/package/files.py)
        "burned_in_annotation": str(ds.get("BurnedInAnnotation", "") or "").upper(),
    }


def series_position(ds: Dataset) -> float | None:
    """Where this file lies in its series, for ordering one-file-per-slice series: the distance of
    Image Position (Patient) along the slice normal (row x column direction cosines), as DICOM viewers
    sort a stack; else the Instance Number; None when the file carries neither."""
    try:
        cosines = np.array([float(v) for v in ds.get("ImageOrientationPatient") or ()], dtype=float)
        position = np.array([float(v) for v in ds.get("ImagePositionPatient") or ()], dtype=float)
    except (TypeError, ValueError):
        cosines = position = np.zeros(0)
    if cosines.shape == (6,) and position.shape == (3,):
        normal = np.cross(cosines[:3], cosines[3:])
        if np.linalg.norm(normal) > 1e-6 and np.all(np.isfinite(position)):
            return round(float(np.dot(normal, position)), 4)
    try:
        number = ds.get("InstanceNumber")
        return None if number in (None, "") else float(number)
    except (TypeError, ValueError):
        return None


def image_plane(orientation) -> str:
    """'axial', 'coronal' or 'sagittal' from Image Orientation (Patient): the plane whose normal
    (row x column direction cosines) is closest to the patient's z, y or x axis; '' if absent."""
    try:
        values = [float(v) for v in orientation]
    except (TypeError, ValueError):
        return ""
    if len(values) != 6:
        return ""
    normal = np.cross(np.array(values[:3]), np.array(values[3:]))
    if not np.any(normal):
        return ""
    return ("sagittal", "coronal", "axial")[int(np.argmax(np.abs(normal)))]
