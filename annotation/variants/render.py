"""Exact, on-demand rendering of a visual variant's image recipe (no Django).

Recipe schema (plain JSON; stored in `Variant.image_recipe`; `None` there means "the item's image
unchanged" and is never passed here)::

    {
      "base": {"image_id": N}                            # an Image row, loaded by `load_image(N)`
            | {"blank": [w, h]}                          # all-black image of that size
            | {"noise": [w, h], "seed": s, "sigma": 40}, # seeded Gaussian noise (see below)
      "draw": [                                          # optional, drawn in order
        {"box": [x0, y0, x1, y1], "color": [r, g, b], "width": 2, "label": "text" | null},
        ...
      ]
    }

Rules (all exact and deterministic):
- The output is always an RGB image the size of the base; the base is converted with
  `Image.convert("RGB")` (`load_image` must return the 8-bit display rendering of the image).
- Boxes are pixel boxes with x1/y1 EXCLUSIVE, as everywhere in the platform. Fractional corners are
  rounded outward: floor(x0), floor(y0), ceil(x1), ceil(y1). The outline occupies exactly the
  border pixels of columns x0..x1-1 and rows y0..y1-1, `width` pixels thick, drawn INSIDE the box
  (`ImageDraw.rectangle([x0, y0, x1 - 1, y1 - 1], outline=color, width=width)`); pixels outside the
  box are never touched by the outline. Empty boxes (x1 <= x0 or y1 <= y0) are an error.
- A label is drawn with PIL's built-in bitmap font, black text on a filled rectangle of the box
  colour, left-aligned with the box (shifted left only to stay inside the image): just above the
  box if there is room, else just below it, else inside its top-left corner (the only case where it
  covers part of the box, and then only the label's own rectangle).
- Noise: `numpy.random.default_rng(seed).normal(128, sigma, (h, w))`, rounded, clipped to 0..255,
  one grey channel replicated to RGB.

`recipe_hash` is the SHA-256 of the canonical JSON (sorted keys, no spaces, integral floats written
as integers), so key order and 10 vs 10.0 do not change it.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

DEFAULT_SIGMA = 40.0
LABEL_PAD = 1


def _canonical(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("recipes may not hold NaN or infinity")
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    raise TypeError(f"not JSON data: {type(value).__name__}")


def canonical_json(value: Any) -> str:
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def recipe_hash(recipe: dict | None) -> str:
    """SHA-256 hex digest of the canonical JSON of `recipe` (stable across key order)."""
    return hashlib.sha256(canonical_json(recipe).encode("utf-8")).hexdigest()


def pixel_box(box) -> tuple[int, int, int, int]:
    """Round a float box outward to integer pixels (floor x0/y0, ceil x1/y1)."""
    x0, y0, x1, y1 = (float(v) for v in box)
    out = (math.floor(x0), math.floor(y0), math.ceil(x1), math.ceil(y1))
    if out[2] <= out[0] or out[3] <= out[1]:
        raise ValueError(f"empty box {list(box)!r}")
    return out


def noise_image(width: int, height: int, seed: int, sigma: float = DEFAULT_SIGMA) -> Image.Image:
    rng = np.random.default_rng(int(seed))
    grey = np.clip(np.rint(rng.normal(128.0, float(sigma), (int(height), int(width)))), 0, 255)
    return Image.fromarray(grey.astype(np.uint8), mode="L").convert("RGB")


def _base(base: dict, load_image: Callable[[int], Image.Image]) -> Image.Image:
    if "image_id" in base:
        return load_image(int(base["image_id"])).convert("RGB")
    if "blank" in base:
        w, h = (int(v) for v in base["blank"])
        return Image.new("RGB", (w, h), (0, 0, 0))
    if "noise" in base:
        w, h = (int(v) for v in base["noise"])
        return noise_image(w, h, int(base["seed"]), float(base.get("sigma", DEFAULT_SIGMA)))
    raise ValueError(f"unknown recipe base {sorted(base)!r}")


def _font() -> ImageFont.ImageFont:
    loader = getattr(ImageFont, "load_default_imagefont", None)  # Pillow >= 10.1: the bitmap font
    return loader() if loader else ImageFont.load_default()


_ASCII = str.maketrans({"\u2013": "-", "\u2014": "-", "\u2212": "-", "\u2265": ">=", "\u2264": "<=",
                        "\u00d7": "x", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                        "\u2026": "..."})


def drawable(text: str) -> str:
    """The label as the bitmap font can draw it: Latin-1 only. Typographic dashes, quotes and signs
    ("10\u201320 mm") become their ASCII forms; anything else outside Latin-1 becomes "?"."""
    return text.translate(_ASCII).encode("latin-1", "replace").decode("latin-1")


def label_rect(text: str, box: tuple[int, int, int, int], size: tuple[int, int], font=None):
    """Where a label goes: (left, top, right_excl, bottom_excl) of its filled rectangle."""
    text = drawable(text)
    font = font or _font()
    l, t, r, b = ImageDraw.Draw(Image.new("RGB", (1, 1))).textbbox((0, 0), text, font=font)
    tw, th = r - l + 2 * LABEL_PAD, b - t + 2 * LABEL_PAD
    x0, y0, x1, y1 = box
    W, H = size
    left = max(0, min(x0, W - tw))
    if y0 - th >= 0:
        top = y0 - th                      # above, touching the box's top edge from outside
    elif y1 + th <= H:
        top = y1                           # below
    else:
        top = max(0, y0)                   # inside the top-left corner
    return left, top, left + tw, top + th


def _draw_label(draw: ImageDraw.ImageDraw, text: str, box, color, size) -> None:
    text = drawable(text)
    font = _font()
    left, top, right, bottom = label_rect(text, box, size, font)
    draw.rectangle([left, top, right - 1, bottom - 1], fill=color)
    l, t, _, _ = draw.textbbox((0, 0), text, font=font)
    draw.text((left + LABEL_PAD - l, top + LABEL_PAD - t), text, fill=(0, 0, 0), font=font)


def render_recipe(recipe: dict, *, load_image: Callable[[int], Image.Image]) -> Image.Image:
    """Render a recipe to a new RGB image (the loaded base image is never modified)."""
    img = _base(recipe["base"], load_image)
    if img.mode != "RGB":
        img = img.convert("RGB")
    draw = ImageDraw.Draw(img)
    for item in recipe.get("draw", ()):
        box = pixel_box(item["box"])
        color = tuple(int(c) for c in item.get("color", (255, 0, 0)))
        width = int(item.get("width", 2))
        if width < 1:
            raise ValueError("outline width must be >= 1")
        draw.rectangle([box[0], box[1], box[2] - 1, box[3] - 1], outline=color, width=width)
        if item.get("label"):
            _draw_label(draw, str(item["label"]), box, color, img.size)
    return img
