"""The one image viewer: its configuration and its pixel data (docs/viewer.md).

Every page that shows an image includes ``templates/_viewer.html`` with a config built here and
emitted with ``json_script``; ``static/js/viewer.js`` draws it. The config says which image (PNG
and stored-value URLs, size, modality, units), the default window and the presets, orientation
markers, the series the image belongs to (each slice with its own boxes) and the box layers::

    {"key": "gold", "name": "Gold lesions", "colour": "#F0E442", "dash": "", "kind": "gold",
     "visible": true, "boxes": [{"x0": 10, "y0": 12, "x1": 40, "y1": 33, "label": "cyst"}]}

Colours come from `common.palette`: gold for the reference standard, anatomy dashed, a model's
colour from its endpoint id, except on blinded pages, where a model shown as "Model B" takes the
colour of its letter's position so the colour cannot be traced back to a named model.

`pixels_response` serves ``GET /images/<pk>/pixels``: the frame's values in modality units as
little-endian Int16 or Float32 (`annotation.ingest.pixels`), described by ``X-Pixel-*`` headers;
a missing or unusable source is a 404/422 JSON error and the viewer falls back to the PNG.
"""
from __future__ import annotations

import logging

from django.http import HttpResponse, JsonResponse
from django.urls import reverse

from annotation import selectors
from annotation.ingest import IngestError, pixels as stored
from annotation.models import Finding, Image
from annotation.storage import resolve
from common import palette

logger = logging.getLogger(__name__)
GOLD, ANATOMY, DRAWN = "gold", "anatomy", "drawn"
#: the box being drawn (a proposed gold box): gold, dashed, so it differs from the current gold
DRAWN_DASH = "8 4"
ANATOMY_DASH = "6 4"
#: (key, name, centre, width) in HU
CT_PRESETS = (
    ("brain", "Brain", 40, 80),
    ("subdural", "Subdural", 75, 215),
    ("stroke", "Stroke", 40, 40),
    ("lung", "Lung", -600, 1500),
    ("mediastinum", "Mediastinum", 50, 350),
    ("soft_tissue", "Soft tissue", 40, 400),
    ("liver", "Liver", 60, 160),
    ("bone", "Bone", 400, 1800),
)
WINDOW_SOURCES = {"dicom_tag": "From the file", "auto_percentile": "Import (percentiles)"}
#: the standard display of each DICOM plane (the patient's right on the viewer's left)
PLANE_MARKERS = {"axial": stored.NIFTI_ORIENTATION[2], "coronal": stored.NIFTI_ORIENTATION[1],
                 "sagittal": stored.NIFTI_ORIENTATION[0]}
DEEP_RASTER_MODES = {"I", "I;16", "I;16B", "I;16L", "I;16N", "F"}


# --------------------------------------------------------------------------- layers
def box(x0, y0, x1, y1, label: str = "") -> dict:
    return {"x0": round(float(x0), 2), "y0": round(float(y0), 2), "x1": round(float(x1), 2),
            "y1": round(float(y1), 2), "label": str(label or "")}


def layer(key: str, name: str, colour: str, *, kind: str, dash: str = "", visible: bool = True,
          boxes=()) -> dict:
    """One box layer; `kind` is gold, anatomy, model or drawn."""
    return {"key": key, "name": name, "colour": colour, "dash": dash, "kind": kind, "visible": visible,
            "boxes": list(boxes)}


def gold_layers(boxes, *, only_ids=None, gold_name: str = "Gold: lesions", anatomy_visible: bool = True,
                extra_gold=()) -> list[dict]:
    """The reference standard of an image: lesion boxes (and `extra_gold`, e.g. an item's gold box)
    in gold, anatomy boxes dashed. With `only_ids`, those boxes (an item's evidence, whatever their
    kind) are the gold layer and every other box goes to the anatomy/other layer."""
    gold, other = list(extra_gold), []
    for b in boxes:
        is_gold = b.pk in only_ids if only_ids is not None else b.finding.kind != Finding.Kind.ANATOMY
        (gold if is_gold else other).append(box(b.x0, b.y0, b.x1, b.y1, b.label))
    other_name = "Anatomy" if only_ids is None else "Other boxes on the image"
    return [layer(GOLD, gold_name, palette.GOLD, kind="gold", boxes=gold),
            layer(ANATOMY, other_name, palette.ANATOMY, kind="anatomy", dash=ANATOMY_DASH,
                  visible=anatomy_visible, boxes=other)]


def model_style(*, endpoint_id: int | None, position: int, blinded: bool) -> palette.ModelStyle:
    """A model's style: by endpoint id (the same on every page and plot), or, on a blinded page,
    by the position of its letter (Model A, B, ...), which says nothing about which model it is."""
    if not blinded:
        return palette.model_style(endpoint_id)
    n = len(palette.MODEL_COLOURS)
    dash_svg, linestyle = palette.MODEL_DASHES[(position // n) % len(palette.MODEL_DASHES)]
    return palette.ModelStyle(palette.MODEL_COLOURS[position % n], dash_svg, linestyle)


def model_layer(key: str, name: str, style: palette.ModelStyle, boxes=(), *, visible: bool = True) -> dict:
    return layer(key, name, style.colour, kind="model", dash=style.dash_svg, visible=visible, boxes=boxes)


def drawn_layer(boxes=()) -> dict:
    return layer(DRAWN, "Your box", palette.GOLD, kind="drawn", dash=DRAWN_DASH, boxes=boxes)


# --------------------------------------------------------------------------- window, presets, orientation
def default_window(image: Image) -> dict | None:
    """The window the import rendered with (the file's, or the percentile window); None for 8-bit
    rasters (the viewer then shows the full range)."""
    if image.window_center is None or not image.window_width or image.window_width <= 0:
        return None
    return {"center": round(image.window_center, 3), "width": round(image.window_width, 3),
            "source": image.window_source}


def presets_for(image: Image) -> list[dict]:
    """The import's window first, the CT presets for CT, then automatic ones computed by the viewer
    from the frame's values: 0.5–99.5th percentile (auto) and minimum to maximum (full range)."""
    out = []
    window = default_window(image)
    if window:
        out.append({"key": "default", "name": WINDOW_SOURCES.get(window["source"], "Default"),
                    "center": window["center"], "width": window["width"], "kind": "fixed"})
    if (image.modality or "").upper() == "CT":
        out += [{"key": k, "name": name, "center": c, "width": w, "kind": "fixed"} for k, name, c, w in CT_PRESETS]
    out += [{"key": "auto", "name": "Auto (this frame)", "center": None, "width": None, "kind": "auto"},
            {"key": "full", "name": "Full range", "center": None, "width": None, "kind": "full"}]
    return out


def orientation_for(image: Image) -> dict | None:
    """Edge markers (left/right/top/bottom patient directions) and where they come from.

    DICOM: Image Orientation (Patient) read from the stored file; when that file is gone, the
    standard display of the plane the import recorded, marked ``assumed``. NIfTI: the import's
    display of the closest canonical (RAS+) orientation of the affine. Rasters: none."""
    meta = image.metadata or {}
    if image.source_format == "nifti":
        axis = meta.get("axis", 2)
        if axis in stored.NIFTI_ORIENTATION:
            return {**stored.NIFTI_ORIENTATION[axis], "source": "NIfTI affine (closest canonical)", "assumed": False}
        return None
    if image.source_format != "dicom":
        return None
    try:
        markers = stored.dicom_orientation(str(resolve(image.source_file))) if image.source_file else None
        if markers is not None:
            return {**markers, "source": "DICOM Image Orientation (Patient)", "assumed": False}
        return None   # the file says nothing: no markers rather than invented ones
    except (OSError, ValueError, IngestError):
        plane = meta.get("plane")
        if plane in PLANE_MARKERS:
            return {**PLANE_MARKERS[plane], "source": f"assumed: standard {plane} display (source file unreadable)",
                    "assumed": True}
        return None


# --------------------------------------------------------------------------- the config
def _slice(image: Image, *, png_url: str, pixels_url: str, boxes: dict | None = None, url: str = "") -> dict:
    """One slice; without stored values `pixels` is empty and `no_pixels` says why (no doomed request)."""
    why = pixels_unavailable(image)
    return {"id": image.pk, "frame": image.frame_index, "width": image.width, "height": image.height,
            "png": png_url, "pixels": "" if why else pixels_url, "no_pixels": why, "url": url, "boxes": boxes or {}}


def _image_urls(pk: int) -> tuple[str, str, str]:
    return (reverse("annotation:image-file", args=[pk]), reverse("annotation:image-pixels", args=[pk]),
            reverse("annotation:image-detail", args=[pk]))


def image_config(*, image: Image, user, layers: list[dict], draw: bool = False, series: bool = False,
                 png_url: str = "", pixels_url: str = "", page_keys=(), title: str = "") -> dict:
    """The viewer's config for one image. `layers` are the boxes of this image (see `gold_layers`,
    `model_layer`); `draw` adds the box-drawing tool and its layer; `series` adds the other slices
    of the image's source file that `user` may see, each with its own gold and anatomy boxes;
    `png_url`/`pixels_url` replace the image's own URLs (the case page serves them per case);
    `page_keys` are the page's own shortcuts [(key as shown, what it does, the `KeyboardEvent.key`
    values it takes)], listed in the viewer's help; the viewer leaves those keys to the page."""
    layers = [dict(lay) for lay in layers]
    if draw and not any(lay["key"] == DRAWN for lay in layers):
        layers.append(drawn_layer())
    png, pixels, detail = _image_urls(image.pk)
    current = _slice(image, png_url=png_url or png, pixels_url=pixels_url or pixels,
                     boxes={lay["key"]: lay["boxes"] for lay in layers}, url=detail)
    slices = [current]
    if series and (image.series_uid or image.source_sha256):
        slices = []
        for other in selectors.image_series(user=user, image=image):
            if other.pk == image.pk:
                slices.append(current)
                continue
            png, pixels, detail = _image_urls(other.pk)
            boxes = {lay["key"]: lay["boxes"] for lay in gold_layers(other.active_boxes)}
            slices.append(_slice(other, png_url=png, pixels_url=pixels, boxes=boxes, url=detail))
    photometric = str((image.metadata or {}).get("photometric_interpretation", "")).upper()
    return {
        "dom_id": f"mv-{image.pk}",
        "config_id": f"mv-{image.pk}-config",
        "title": title or f"Image {image.pk}",
        "image": {"id": image.pk, "width": image.width, "height": image.height, "modality": image.modality,
                  "format": image.source_format},
        "units": stored.units_for(image.modality, image.source_format),
        "window": default_window(image),
        "presets": presets_for(image),
        "invert": photometric == "MONOCHROME1",
        "orientation": orientation_for(image),
        "layers": layers,
        "draw": bool(draw),
        "series": {"current": next(i for i, s in enumerate(slices) if s["id"] == image.pk), "slices": slices},
        "page_keys": [{"key": key, "action": action, "codes": list(codes)} for key, action, codes in page_keys],
    }


def item_layers(*, item, image: Image) -> list[dict]:
    """An item's gold: its evidence boxes and, for a box question, its gold box; the image's other
    boxes in a second layer, hidden until asked for."""
    evidence = list(item.evidence_boxes.all())
    by_pk = {b.pk: b for b in [*image.active_boxes, *evidence]}
    extra = []
    if item.category.answer_type == "box" and is_box(item.gold_answer):
        extra = [box(*item.gold_answer, label="gold answer")]
    return gold_layers(by_pk.values(), only_ids={b.pk for b in evidence}, extra_gold=extra,
                       gold_name="Gold: this item's answer and evidence", anatomy_visible=False)


def is_box(value) -> bool:
    try:
        return isinstance(value, (list, tuple)) and len(value) == 4 and all(float(v) == float(v) for v in value)
    except (TypeError, ValueError):
        return False


def item_config(*, item, user, edit: bool = False) -> dict:
    """The item and item edit pages: the item's image with its gold; on the edit page of a box
    question, the draw tool (the curator's form listens for ``mv:boxdrawn``)."""
    image = selectors.image_get(user=user, pk=item.chain.image_id)
    return image_config(image=image, user=user, layers=item_layers(item=item, image=image),
                        draw=edit and item.category.answer_type == "box", title=f"Image {image.pk}")


def chain_config(*, image: Image, evidence_ids: set[int], user) -> dict:
    """The chain page: its image once, the boxes its steps use as evidence in gold."""
    layers = gold_layers(image.active_boxes, only_ids=evidence_ids, gold_name="Gold: evidence of this chain",
                         anatomy_visible=False)
    return image_config(image=image, user=user, layers=layers, title=f"Image {image.pk}")


# --------------------------------------------------------------------------- stored values
class PixelsUnavailable(Exception):
    def __init__(self, status: int, code: str, detail: str):
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


def pixel_source(image: Image):
    """The stored file the frame's values come from, or `PixelsUnavailable` when it is known without
    decoding that there are none: a colour image, a deep raster (its values were not kept), a source
    file that is not in storage. Cheap (metadata and one stat), so pages ask before the browser does."""
    fmt, meta = image.source_format, image.metadata or {}
    raster = fmt in ("png", "jpeg", "tiff")
    if raster and meta.get("source_mode") in DEEP_RASTER_MODES:
        raise PixelsUnavailable(422, "not_stored", "this raster's deep values were windowed into its PNG at "
                                                   "import and not kept")
    colour = meta.get("mode") == "RGB" if raster else (
        int(meta.get("samples_per_pixel") or 1) != 1 or meta.get("photometric_interpretation") == "PALETTE COLOR")
    if colour:
        raise PixelsUnavailable(422, "colour", "a colour image has no single stored value per pixel")
    rel = image.file if raster else image.source_file
    if not rel:
        raise PixelsUnavailable(404, "source_missing", "the source file of this image was not kept")
    try:
        path = resolve(rel)
    except ValueError:
        raise PixelsUnavailable(404, "source_missing", "the source file of this image is not in storage") from None
    if not path.is_file():
        raise PixelsUnavailable(404, "source_missing", "the source file of this image is not in storage")
    return path


def pixels_unavailable(image: Image) -> str:
    """Why the viewer will get no stored values for `image` ('' when it should)."""
    try:
        pixel_source(image)
    except PixelsUnavailable as exc:
        return exc.detail
    return ""


def image_pixels(image: Image) -> stored.EncodedPixels:
    """The frame's stored values, encoded; `PixelsUnavailable` (404 no source, 422 unusable) else."""
    path, fmt = pixel_source(image), image.source_format
    try:
        values = stored.frame_values(
            source_format=fmt, frame_index=image.frame_index, read_source=path.read_bytes,
            source_key=image.source_sha256 or image.sha256, nifti_axis=(image.metadata or {}).get("axis", 2))
        return stored.encode(stored.checked(values, image.sha256))
    except IngestError as exc:
        raise PixelsUnavailable(422, exc.code, exc.message) from None
    except OSError:
        raise PixelsUnavailable(404, "source_missing", "the source file of this image cannot be read") from None
    except Exception:  # noqa: BLE001 - a source that breaks a decoder is unusable, not a server error
        logger.exception("the stored values of image %s cannot be decoded", image.pk)
        raise PixelsUnavailable(422, "corrupt", "the source file of this image cannot be decoded") from None


def pixels_response(image: Image) -> HttpResponse:
    """The binary frame with its description in headers, or the error as ``{"code", "detail"}``."""
    try:
        data = image_pixels(image)
    except PixelsUnavailable as exc:
        return JsonResponse({"code": exc.code, "detail": exc.detail}, status=exc.status)
    response = HttpResponse(data.body, content_type="application/octet-stream")
    response["X-Pixel-Dtype"] = data.dtype
    response["X-Pixel-Width"] = str(data.width)
    response["X-Pixel-Height"] = str(data.height)
    response["X-Pixel-Min"] = repr(data.min)
    response["X-Pixel-Max"] = repr(data.max)
    response["X-Pixel-Units"] = stored.units_for(image.modality, image.source_format)
    response["Cache-Control"] = "private, max-age=3600"
    return response
