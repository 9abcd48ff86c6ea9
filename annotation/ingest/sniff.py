"""Detect a file's format from its bytes (never from its name).

Checks, in order:

- DICOM Part 10: ``DICM`` at offset 128 (checked first: a DICOM preamble may itself
  hold a TIFF header in "dual personality" files);
- PNG, JPEG, TIFF (incl. BigTIFF) and ZIP magic numbers;
- NIfTI-1 (``sizeof_hdr`` 348 and magic ``n+1``) and NIfTI-2 (540 and ``n+2``), either
  raw or gzip-compressed (only the first kilobyte is inflated to look);
- preamble-less DICOM, accepted only when pydicom can parse the first `SNIFF_BYTES` with
  ``force=True`` *and* the result either has Rows, Columns and a pixel data element or names a
  registered SOP Class (so a structured report or RT structure set without preamble is
  recognised, and refused later as ``no_pixel_data``): random bytes are otherwise parsed
  "successfully" by a forced read.

Only the first `SNIFF_BYTES` are ever looked at: a large file of junk is refused at once,
never parsed in full.

Anything else raises ``IngestError("unsupported_format")``.
"""
from __future__ import annotations

import io
import struct
import zlib

from .types import IngestError

#: Format names returned by `sniff_format`.
FORMATS = ("dicom", "nifti", "png", "jpeg", "tiff", "zip")

_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"
_TIFF = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")
_ZIP = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
_GZIP = b"\x1f\x8b"
_PIXEL_TAGS = (0x7FE00010, 0x7FE00008, 0x7FE00009)  # Pixel Data, Float/Double Float Pixel Data
#: how much of a file the sniffer reads
SNIFF_BYTES = 64 * 1024


def sniff_format(data: bytes) -> str:
    """Return one of `FORMATS` for `data`, or raise IngestError('unsupported_format')."""
    data = bytes(data[:SNIFF_BYTES])
    if len(data) >= 132 and data[128:132] == b"DICM":
        return "dicom"
    if data.startswith(_PNG):
        return "png"
    if data.startswith(_JPEG):
        return "jpeg"
    if data[:4] in _TIFF:
        return "tiff"
    if data[:4] in _ZIP:
        return "zip"
    if data.startswith(_GZIP):
        head = gunzip_head(data, 1024)
        if nifti_version(head):
            return "nifti"
        raise IngestError("unsupported_format", "gzip file that does not contain a NIfTI image")
    if nifti_version(data):
        return "nifti"
    if _is_pair_nifti(data):
        raise IngestError(
            "unsupported_format", "NIfTI header/image pair (.hdr/.img); convert to single-file .nii"
        )
    if _is_preambleless_dicom(data):
        return "dicom"
    raise IngestError("unsupported_format", "not DICOM, NIfTI, PNG, JPEG, TIFF or ZIP")


def gunzip_head(data: bytes, size: int) -> bytes:
    """Inflate at most `size` bytes from the start of gzip `data` (b'' if it is not gzip)."""
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, size)
    except zlib.error:
        return b""


def nifti_version(head: bytes) -> int:
    """1 or 2 when `head` starts a single-file NIfTI-1/-2 image, else 0."""
    if len(head) >= 348:
        for endian in "<>":
            if struct.unpack(endian + "i", head[:4])[0] == 348 and head[344:348] == b"n+1\x00":
                return 1
    if len(head) >= 540:
        for endian in "<>":
            if struct.unpack(endian + "i", head[:4])[0] == 540 and head[4:8] == b"n+2\x00":
                return 2
    return 0


def _is_pair_nifti(head: bytes) -> bool:
    if len(head) < 348:
        return False
    sizes = (struct.unpack("<i", head[:4])[0], struct.unpack(">i", head[:4])[0])
    return 348 in sizes and head[344:348] == b"ni1\x00"


def _is_preambleless_dicom(head: bytes) -> bool:
    import warnings

    import pydicom
    from pydicom.uid import UID

    if len(head) < 8:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = pydicom.dcmread(io.BytesIO(head), force=True, defer_size=1024)
            has_pixels = any(tag in ds for tag in _PIXEL_TAGS)
            if has_pixels and "Rows" in ds and "Columns" in ds:
                return True
            sop_class = UID(str(ds.get("SOPClassUID", "") or ""))
            return bool(sop_class) and sop_class.is_valid and sop_class.name != str(sop_class)
    except Exception:  # noqa: BLE001 - any parse failure means "not DICOM"
        return False
