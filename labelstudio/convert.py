"""Label Studio results <-> our pixel boxes.  Pure Python: no Django, no database, no network.

Label Studio (1.23) stores a rectangle as percentages of the original image size, with (x, y) the TOP-LEFT
corner::

    {"id": "r1", "from_name": "findings", "to_name": "image", "type": "rectanglelabels",
     "original_width": 512, "original_height": 384, "image_rotation": 0,
     "value": {"x": 10.0, "y": 5.0, "width": 20.0, "height": 30.0, "rotation": 0, "rectanglelabels": ["cyst"]}}

Our boxes are pixels ``(x0, y0, x1, y1)`` as floats: (x0, y0) inclusive top-left, (x1, y1) exclusive
bottom-right, always inside the image (``0 <= x0 < x1 <= W`` and ``0 <= y0 < y1 <= H``).  A box that is not
inside the image is rejected, never clipped.

`parse_result` turns a whole annotation result into regions, the answer to the task's question and free
texts; it never raises on a bad payload and reports every entry it cannot use as a `Rejection`, so nothing
is dropped silently.

Rejection / `RegionError` codes: ``rotated``, ``out_of_bounds``, ``no_area``, ``size_mismatch``,
``malformed``, ``ambiguous_label``, ``unknown_label``, ``unknown_control``.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

__all__ = [
    "SNAP_EPS_PX", "ParsedAnnotation", "Region", "RegionError", "Rejection",
    "parse_result", "percent_to_pixels", "pixels_to_percent",
]

SNAP_EPS_PX = 1e-6          # a pixel coordinate this close to an integer is that integer
_ROTATION_EPS = 1e-9        # degrees; anything larger is a rotated box, which we do not support

Box = tuple[float, float, float, float]


class RegionError(ValueError):
    """A region that cannot become a pixel box.  `code` is stable (callers key on it); `message` is for people."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message


# ---------------------------------------------------------------------------------------------------------------
# geometry
# ---------------------------------------------------------------------------------------------------------------

def _is_number(value: Any) -> bool:
    """True for finite real numbers; bools, strings, None, NaN and infinities are not numbers here."""
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def _check_image_size(width: Any, height: Any) -> None:
    """Our own image size must be positive integers; a bad one is a programming error, not a bad payload."""
    for name, value in (("width", width), ("height", height)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"image {name} must be a positive integer, got {value!r}")


def _snap(value: float) -> float:
    """`value` as a float, replaced by the nearest integer when it lies within SNAP_EPS_PX of it."""
    nearest = round(value)
    return float(nearest) if abs(value - nearest) <= SNAP_EPS_PX else float(value)


def _check_unrotated(rotation: Any, error: type[Exception], name: str, rotated: str) -> None:
    """A rotation (missing or None means 0) must be a finite number within _ROTATION_EPS of 0:
    otherwise `error("malformed" | "rotated", message)`."""
    rotation = 0 if rotation is None else rotation
    if not _is_number(rotation):
        raise error("malformed", f"{name} must be a finite number, got {rotation!r}")
    if abs(rotation) > _ROTATION_EPS:
        raise error("rotated", rotated.format(float(rotation)))


def _number_field(value: Mapping, key: str) -> float:
    if key not in value:
        raise RegionError("malformed", f"region value lacks '{key}'")
    number = value[key]
    if not _is_number(number):
        raise RegionError("malformed", f"region '{key}' must be a finite number, got {number!r}")
    return float(number)


def _check_inside(box: Box, width: int, height: int) -> None:
    x0, y0, x1, y1 = box
    if not (x0 < x1 and y0 < y1):
        raise RegionError("no_area", f"box {box} has no area")
    if x0 < 0 or y0 < 0 or x1 > width or y1 > height:
        raise RegionError("out_of_bounds", f"box {box} lies outside the {width}x{height} image")


def percent_to_pixels(value: Mapping, *, original_width: int, original_height: int) -> Box:
    """The pixel box ``(x0, y0, x1, y1)`` of a Label Studio rectangle value (percent, top-left corner).

    ``x0 = x * W / 100`` and ``x1 = (x + width) * W / 100`` (likewise for y with H), then every coordinate
    within `SNAP_EPS_PX` of an integer becomes that integer.  Raises `RegionError` with code
    ``malformed`` (value not a mapping; x/y/width/height/rotation missing, not a number, bool, NaN or
    infinite), ``rotated`` (rotation other than 0; missing rotation means 0), ``no_area`` (width or height
    <= 0, also after snapping) or ``out_of_bounds`` (any part outside the image; never clipped).
    Raises plain `ValueError` when the image size itself is not two positive integers.
    """
    _check_image_size(original_width, original_height)
    if not isinstance(value, Mapping):
        raise RegionError("malformed", f"region value must be an object, got {type(value).__name__}")
    x, y, w, h = (_number_field(value, key) for key in ("x", "y", "width", "height"))
    _check_unrotated(value.get("rotation"), RegionError, "region 'rotation'",
                     "rotated boxes are not supported (rotation {:g} degrees)")
    if w <= 0 or h <= 0:
        raise RegionError("no_area", f"region has no area (width {w:g}%, height {h:g}%)")
    box = (
        _snap(x * original_width / 100),
        _snap(y * original_height / 100),
        _snap((x + w) * original_width / 100),
        _snap((y + h) * original_height / 100),
    )
    _check_inside(box, original_width, original_height)
    return box


def pixels_to_percent(box: Sequence[float], *, width: int, height: int) -> dict:
    """The Label Studio rectangle value of a pixel box inside a `width` x `height` image.

    Returns ``{"x", "y", "width", "height", "rotation": 0}`` in percent.  For every integer box inside the
    image, ``percent_to_pixels(pixels_to_percent(box))`` gives the box back exactly.  Raises `RegionError`
    (``malformed``, ``no_area``, ``out_of_bounds``) for a box that is not four finite numbers inside the image,
    and `ValueError` for a bad image size.
    """
    _check_image_size(width, height)
    if isinstance(box, (str, bytes)) or not isinstance(box, Sequence) or len(box) != 4:
        raise RegionError("malformed", f"box must be four numbers (x0, y0, x1, y1), got {box!r}")
    if not all(_is_number(v) for v in box):
        raise RegionError("malformed", f"box coordinates must be finite numbers, got {tuple(box)!r}")
    x0, y0, x1, y1 = (float(v) for v in box)
    _check_inside((x0, y0, x1, y1), width, height)
    return {
        "x": x0 * 100 / width,
        "y": y0 * 100 / height,
        "width": (x1 - x0) * 100 / width,
        "height": (y1 - y0) * 100 / height,
        "rotation": 0,
    }


# ---------------------------------------------------------------------------------------------------------------
# parsing a whole result
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Region:
    """One accepted rectangle.  `attributes` maps an attribute control name to the chosen value (a string),
    or to a list of strings when several were chosen."""

    result_id: str
    control: str
    kind: str
    label: str
    box: Box
    attributes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Rejection:
    """One result entry that could not be used.  `message` starts with ``result[<index>]:``, except for the single
    rejection of a `result` that is not a list at all (then `result_id` and `control` are empty)."""

    result_id: str
    control: str
    code: str
    message: str


@dataclass(frozen=True)
class ParsedAnnotation:
    """What `parse_result` made of one annotation.  `answer` is None when no answer entry was present."""

    regions: tuple[Region, ...]
    rejections: tuple[Rejection, ...]
    answer: tuple[str, ...] | None
    texts: dict[str, str]

    @property
    def ok(self) -> bool:
        """True when every entry of the result was used."""
        return not self.rejections


class _Reject(Exception):
    """Internal: one entry is rejected with this code and message (without the ``result[i]:`` prefix)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class _Entry:
    index: int
    result_id: str
    control: str
    type: str
    value: Mapping
    raw: Mapping


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _read_entry(index: int, raw: Any) -> _Entry:
    """Validate the envelope of one result entry (object with string type/from_name, object value, id)."""
    if not isinstance(raw, Mapping):
        raise _Reject("malformed", f"entry must be an object, got {_type_name(raw)}")
    for key in ("type", "from_name", "value"):
        if key not in raw:
            raise _Reject("malformed", f"entry lacks '{key}'")
    for key in ("type", "from_name"):
        if not isinstance(raw[key], str) or not raw[key]:
            raise _Reject("malformed", f"'{key}' must be a non-empty string, got {raw[key]!r}")
    if not isinstance(raw["value"], Mapping):
        raise _Reject("malformed", f"'value' must be an object, got {_type_name(raw['value'])}")
    result_id = raw.get("id", "")
    if result_id is None:
        result_id = ""
    if not isinstance(result_id, str):
        raise _Reject("malformed", f"'id' must be a string, got {_type_name(result_id)}")
    return _Entry(index, result_id, raw["from_name"], raw["type"], raw["value"], raw)


def _string_list(value: Mapping, key: str) -> list[str]:
    """value[key] as a non-empty list of strings."""
    items = value.get(key)
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise _Reject("malformed", f"'value.{key}' must be a list of strings, got {items!r}")
    if not items:
        raise _Reject("malformed", f"'value.{key}' is empty")
    return items


def _size_field(raw: Mapping, key: str) -> int | None:
    if raw.get(key) is None:
        return None
    size = raw[key]
    if not _is_number(size) or size != int(size) or size <= 0:
        raise _Reject("malformed", f"'{key}' must be a positive integer, got {size!r}")
    return int(size)


def _read_rectangle(entry: _Entry, *, kind: str, image_width: int, image_height: int,
                    labels: Mapping[str, Collection[str]] | None) -> Region:
    if not entry.result_id:
        raise _Reject("malformed", "rectangle has no 'id'")
    value = entry.value
    chosen = value.get("rectanglelabels")
    if not isinstance(chosen, list) or not all(isinstance(label, str) for label in chosen):
        raise _Reject("malformed", f"'value.rectanglelabels' must be a list of strings, got {chosen!r}")
    if len(chosen) != 1:
        raise _Reject("ambiguous_label", f"rectangle must have exactly one label, got {len(chosen)}: {chosen!r}")
    label = chosen[0]
    if labels is not None and label not in labels.get(entry.control, ()):
        raise _Reject("unknown_label", f"label {label!r} is not a label of control '{entry.control}'")
    original = (_size_field(entry.raw, "original_width"), _size_field(entry.raw, "original_height"))
    expected = (image_width, image_height)
    if any(got is not None and got != want for got, want in zip(original, expected, strict=True)):
        shown = "x".join("?" if got is None else str(got) for got in original)
        raise _Reject("size_mismatch", f"annotated on a {shown} image, but the image is {image_width}x{image_height}")
    _check_unrotated(entry.raw.get("image_rotation"), _Reject, "'image_rotation'",
                     "the image was rotated by {:g} degrees while annotating")
    try:
        box = percent_to_pixels(value, original_width=image_width, original_height=image_height)
    except RegionError as err:
        raise _Reject(err.code, err.message) from None
    return Region(entry.result_id, entry.control, kind, label, box)


def _text_of(entry: _Entry) -> str:
    text = entry.value.get("text")
    if isinstance(text, str):
        return text
    if isinstance(text, list) and all(isinstance(line, str) for line in text):
        return "\n".join(text)
    raise _Reject("malformed", f"'value.text' must be a string or a list of strings, got {text!r}")


def parse_result(
    result: Any,
    *,
    image_width: int,
    image_height: int,
    box_controls: Mapping[str, str],
    attribute_controls: Collection[str] = (),
    answer_control: str = "answer",
    text_controls: Collection[str] = (),
    labels: Mapping[str, Collection[str]] | None = None,
) -> ParsedAnnotation:
    """Regions, answer and texts of one Label Studio annotation `result` on a `image_width` x `image_height` image.

    * ``rectanglelabels`` entries of a control in `box_controls` (control name -> our finding kind) become
      `Region`s, in result order.  Exactly one label each (else ``ambiguous_label``); when `labels` is given the
      label must be in ``labels[control]`` (else ``unknown_label``); ``original_width``/``original_height``, when
      present, must equal the image size (else ``size_mismatch``); ``image_rotation`` must be 0 (else
      ``rotated``); geometry errors of `percent_to_pixels` keep their code.
    * ``choices`` entries of a control in `attribute_controls` attach to the rectangle with the same ``id``:
      ``attributes[control]`` is the single choice, or the list when several were chosen.  One whose rectangle
      was rejected is ignored; one with no rectangle at all, or a second one for the same region and control,
      is ``malformed``.
    * the ``choices`` entry of `answer_control` gives `answer` (tuple of the choices); a second one is ``malformed``.
    * ``textarea`` entries of a control in `text_controls` give ``texts[control]`` (lines joined with newlines);
      a second one for the same control is ``malformed``.
    * anything else is ``unknown_control``; envelopes that are not well-formed are ``malformed``.

    Never raises on a bad `result` (only on a bad image size, with `ValueError`); every unused entry is one
    `Rejection`, in result order, with a message that starts with ``result[<index>]:``.
    """
    _check_image_size(image_width, image_height)
    if not isinstance(result, list):
        message = f"result must be a list of entries, got {_type_name(result)}"
        return ParsedAnnotation((), (Rejection("", "", "malformed", message),), None, {})

    rejections: list[tuple[int, Rejection]] = []
    pending: dict[str, Region] = {}   # in result order; attributes are filled in below
    rejected_ids: set[str] = set()
    attribute_entries: list[_Entry] = []
    answer: tuple[str, ...] | None = None
    texts: dict[str, str] = {}

    def reject(index: int, result_id: str, control: str, err: _Reject) -> None:
        rejections.append((index, Rejection(result_id, control, err.code, f"result[{index}]: {err.message}")))

    for index, raw in enumerate(result):
        result_id = raw.get("id") if isinstance(raw, Mapping) and isinstance(raw.get("id"), str) else ""
        control = raw.get("from_name") if isinstance(raw, Mapping) and isinstance(raw.get("from_name"), str) else ""
        try:
            entry = _read_entry(index, raw)
            if entry.type == "rectanglelabels" and entry.control in box_controls:
                if entry.result_id in pending or entry.result_id in rejected_ids:
                    raise _Reject("malformed", f"a second rectangle with id {entry.result_id!r}")
                try:
                    region = _read_rectangle(entry, kind=box_controls[entry.control], image_width=image_width,
                                             image_height=image_height, labels=labels)
                except _Reject:
                    if entry.result_id:
                        rejected_ids.add(entry.result_id)
                    raise
                pending[region.result_id] = region
            elif entry.type == "choices" and entry.control in attribute_controls:
                _string_list(entry.value, "choices")
                attribute_entries.append(entry)
            elif entry.type == "choices" and entry.control == answer_control:
                choices = _string_list(entry.value, "choices")
                if answer is not None:
                    raise _Reject("malformed", f"a second answer from control '{entry.control}'")
                answer = tuple(choices)
            elif entry.type == "textarea" and entry.control in text_controls:
                text = _text_of(entry)
                if entry.control in texts:
                    raise _Reject("malformed", f"a second text from control '{entry.control}'")
                texts[entry.control] = text
            else:
                raise _Reject("unknown_control",
                              f"control '{entry.control}' of type '{entry.type}' is not expected here")
        except _Reject as err:
            reject(index, result_id, control, err)

    for entry in attribute_entries:
        choices = list(entry.value["choices"])
        region = pending.get(entry.result_id)
        if region is None:
            if entry.result_id not in rejected_ids:
                reject(entry.index, entry.result_id, entry.control,
                       _Reject("malformed", f"attribute '{entry.control}' refers to no region"))
            continue
        if entry.control in region.attributes:
            reject(entry.index, entry.result_id, entry.control,
                   _Reject("malformed", f"a second attribute '{entry.control}' for region {entry.result_id!r}"))
            continue
        region.attributes[entry.control] = choices[0] if len(choices) == 1 else choices

    regions = tuple(pending.values())
    ordered = tuple(rejection for _, rejection in sorted(rejections, key=lambda item: item[0]))
    return ParsedAnnotation(regions, ordered, answer, texts)
