"""File decoders for image import: bytes in, `DecodedSource` out.  No Django here.

    from annotation.ingest import decode, iter_sources, DecodeOptions, IngestError

    for ref in iter_sources(paths, max_file_bytes=options.max_file_bytes):
        try:
            source = decode(ref.read(), name=ref.name, options=options)
        except IngestError as err:
            ...  # report err.code / err.message for ref.name; nothing half-imported

Modules: `sniff` (format by magic bytes), `dicom` (PS3.15 Annex E de-identification and
rendering; the action table is in `deid_profile`), `nifti`, `raster` (PNG/JPEG/TIFF),
`window` (window/level), `sources` (files, folders, ZIP archives, uploads), `quiet` (no library
output while decoding).

Error codes raised as `IngestError.code`: ``unsupported_format``, ``corrupt``,
``too_large``, ``no_pixel_data``, ``unsupported_transfer_syntax``, ``invalid_options``,
``not_found``, ``unreadable`` and ``unsafe_path`` (the last three from `iter_sources` /
`iter_uploads`).
"""
from __future__ import annotations

from .quiet import quiet_libraries
from .sniff import sniff_format
from .sources import SourceLimits, SourceRef, iter_sources, iter_uploads, reopen_sources
from .types import DecodedFrame, DecodedSource, DecodeOptions, IngestError, KnownHashes

__all__ = [
    "DecodeOptions", "DecodedFrame", "DecodedSource", "IngestError", "KnownHashes", "SourceLimits", "SourceRef",
    "decode", "iter_sources", "iter_uploads", "reopen_sources", "sniff_format",
]


def decode(data: bytes, *, name: str, options: DecodeOptions, known: KnownHashes | None = None) -> DecodedSource:
    """Decode one file's bytes; the format comes from the content, never from `name`.

    `name` is accepted for the caller's bookkeeping and never put in messages (file names
    can carry patient names).  Raises `IngestError` for everything that
    makes the file unusable; any other exception escaping a decoder is reported as
    ``corrupt`` with its type rather than crashing a batch import.  Libraries stay silent
    meanwhile (`quiet`): no traceback or warning of theirs reaches the console.

    `known` (the importer's lookup of frame hashes already imported) lets DICOM and NIfTI stop right
    after hashing their decoded frames when every one is known: the result then has no frames, only
    `known_hashes`, and nothing was de-identified, rendered or re-encoded.
    """
    if len(data) > options.max_file_bytes:
        raise IngestError("too_large", f"file exceeds {options.max_file_bytes} bytes")
    fmt = sniff_format(data)  # the first bytes only
    if fmt == "zip":
        raise IngestError("unsupported_format", "an archive where an image was expected (archives are "
                                                "expanded one level, by iter_sources / iter_uploads)")
    with quiet_libraries():
        return _decode(data, fmt, options, known)


def _decode(data: bytes, fmt: str, options: DecodeOptions, known: KnownHashes | None) -> DecodedSource:
    try:
        if fmt == "dicom":
            from .dicom import decode_dicom

            return decode_dicom(data, options=options, known=known)
        if fmt == "nifti":
            from .nifti import decode_nifti

            return decode_nifti(data, options=options, known=known)
        if fmt in ("png", "jpeg", "tiff"):
            from .raster import decode_raster

            return decode_raster(data, fmt=fmt, options=options)
    except IngestError:
        raise
    except MemoryError as exc:
        raise IngestError("too_large", "file does not fit in memory") from exc
    except Exception as exc:  # noqa: BLE001 - last line of defence for batch imports
        raise IngestError("corrupt", f"cannot be decoded ({type(exc).__name__})") from exc
    raise IngestError("unsupported_format", f"no decoder for {fmt}")
