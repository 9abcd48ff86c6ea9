"""PNG, JPEG and TIFF through Pillow, with decompression-bomb and metadata hygiene.

- The declared size of every page is checked against ``options.max_pixels`` and its
  decoded size (width x height x channels x bytes per sample, from the PNG IHDR or the TIFF
  tags) against ``options.max_decoded_bytes`` (all pages together) *before* ``load()``
  decodes anything; Pillow's own
  ``DecompressionBombError``/``DecompressionBombWarning`` are also reported as
  ``too_large``.
- EXIF orientation is applied (``ImageOps.exif_transpose``) and then the pixels are
  copied into a brand-new image, so no EXIF, ICC profile, text chunk or other
  metadata reaches ``rendered``.  ``stored_bytes`` is None: the rendered PNG is what
  is kept.
- Output mode: ``L`` for greyscale (modes 1, L, LA, P with a grey palette, RGB whose
  three channels are equal, and 16-bit/32-bit/float greyscale, which is windowed with
  the auto percentile window, ``window_source="auto_percentile"``), else ``RGB``
  (alpha is dropped).  ``pixels`` is the greyscale array before windowing, or the
  8-bit array shown.
- Each TIFF page becomes a frame (``frame_index`` 0..n-1); single images have None.
  Only the first image of an animated PNG or a multi-picture (MPO) JPEG is used.
- Truncated or undecodable files are ``corrupt``.
"""
from __future__ import annotations

import io
import warnings

import numpy as np
from PIL import Image as PILImage, ImageFile, ImageMode, ImageOps, ImageSequence

from .hashing import frame_sha256
from .types import DecodedFrame, DecodedSource, DecodeOptions, IngestError
from .window import apply_linear_window, auto_window

_PIL_FORMATS = {"png": ["PNG"], "jpeg": ["JPEG", "MPO"], "tiff": ["TIFF"]}
_DEEP_GREY = {"I", "I;16", "I;16B", "I;16L", "I;16N", "F"}


def decode_raster(data: bytes, *, fmt: str, options: DecodeOptions) -> DecodedSource:
    """Decode a PNG/JPEG/TIFF (``fmt`` as sniffed) into 8-bit frames without metadata. Truncated files are
    always corrupt: Pillow's process-wide `LOAD_TRUNCATED_IMAGES`, which a library may switch on at import
    (WeasyPrint does), is switched off first."""
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PILImage.DecompressionBombWarning)
            with PILImage.open(io.BytesIO(data), formats=_PIL_FORMATS[fmt]) as im:
                pages = _page_count(im) if fmt == "tiff" else 1
                _check_sizes(im, pages, options, png_ihdr=data[12:26] if fmt == "png" else b"")
                frames = [
                    _frame(page, index=(i if pages > 1 else None))
                    for i, page in zip(range(pages), ImageSequence.Iterator(im))
                ]
                info = {"format": im.format, "source_mode": im.mode}
    except IngestError:
        raise
    except (PILImage.DecompressionBombError, PILImage.DecompressionBombWarning) as exc:
        raise IngestError("too_large", "image exceeds the decompression-bomb limit") from exc
    except MemoryError as exc:
        raise IngestError("too_large", "image does not fit in memory") from exc
    except Exception as exc:  # noqa: BLE001 - truncated/damaged/unsupported variants
        raise IngestError("corrupt", f"image cannot be decoded ({type(exc).__name__})") from exc
    first = frames[0].rendered
    metadata = {
        **info,
        "pages": len(frames),
        "width": first.width,
        "height": first.height,
        "mode": first.mode,
        "window_source": frames[0].window_source,
    }
    return DecodedSource(format=fmt, frames=frames, metadata=metadata)


def _page_count(im: PILImage.Image) -> int:
    return int(getattr(im, "n_frames", 1) or 1)


def _check_sizes(im: PILImage.Image, pages: int, options: DecodeOptions, png_ihdr: bytes = b"") -> None:
    """Sum the declared sizes of all pages (header only; nothing is decoded): pixels, and decoded
    bytes (width x height x channels x bytes per sample, as the file declares them)."""
    pixels = decoded = 0
    for i in range(pages):
        if pages > 1:
            im.seek(i)
        width, height = im.size
        pixels += int(width) * int(height)
        decoded += int(width) * int(height) * _bytes_per_pixel(im, png_ihdr)
        if pixels > options.max_pixels:
            raise IngestError("too_large", f"declared size exceeds {options.max_pixels} pixels")
        if decoded > options.max_decoded_bytes:
            raise IngestError("too_large", f"declared size decodes to {decoded} bytes, more than "
                                           f"{options.max_decoded_bytes}")
    if pages > 1:
        im.seek(0)


_PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}  # colour type -> channels (a palette expands to RGB)


def _bytes_per_pixel(im: PILImage.Image, png_ihdr: bytes) -> int:
    """From the header: PNG's IHDR bit depth and colour type (Pillow reads 16-bit RGBA as 8-bit
    RGBA, so its mode would under-count), TIFF's SamplesPerPixel and BitsPerSample, else the mode."""
    if len(png_ihdr) == 14 and png_ihdr[:4] == b"IHDR":
        depth, colour = png_ihdr[12], png_ihdr[13]
        return _PNG_CHANNELS.get(colour, 4) * max(1, depth // 8)
    tags = getattr(im, "tag_v2", None)
    if tags is not None:
        bits = tags.get(258, (8,))
        bits = max(bits) if isinstance(bits, tuple) and bits else bits
        return int(tags.get(277, 1) or 1) * max(1, -(-int(bits or 8) // 8))
    try:
        band = np.dtype(ImageMode.getmode(im.mode).typestr).itemsize
    except (KeyError, TypeError):
        band = 4
    return len(im.getbands()) * band


def _frame(page: PILImage.Image, *, index: int | None) -> DecodedFrame:
    page.load()
    page = ImageOps.exif_transpose(page)
    mode = page.mode
    if mode in _DEEP_GREY:
        values = np.asarray(page)
        values = values.astype(values.dtype.newbyteorder("="))  # native byte order: stable hashes
        center, width = auto_window(values)
        out = apply_linear_window(values, center, width)
        return DecodedFrame(
            pixels=values, rendered=PILImage.fromarray(out), frame_index=index,
            window_center=center, window_width=width, window_source="auto_percentile", sha256=frame_sha256(values),
        )
    if mode in ("1", "L", "LA", "La") or (mode == "P" and _grey_palette(page)):
        arr = np.asarray(page.convert("L"), dtype=np.uint8)
    else:
        arr = np.asarray(page.convert("RGB"), dtype=np.uint8)
        if (arr[..., 0] == arr[..., 1]).all() and (arr[..., 1] == arr[..., 2]).all():
            arr = arr[..., 0]
    arr = np.ascontiguousarray(arr)
    return DecodedFrame(pixels=arr, rendered=PILImage.fromarray(arr), frame_index=index, sha256=frame_sha256(arr))


def _grey_palette(page: PILImage.Image) -> bool:
    palette = page.getpalette() or []
    triples = [palette[i:i + 3] for i in range(0, len(palette) - 2, 3)]
    return bool(triples) and all(r == g == b for r, g, b in triples)
