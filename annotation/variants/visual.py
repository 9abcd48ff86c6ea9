"""Visual variant kinds: image recipes that `render.py` draws on demand (pure Python: no Django, no PIL).

- correct_visual_cue: the evidence box drawn with its true label.
- wrong_visual_cue: a wrong region (a lesion-free organ, else mirrored / shifted) or a mislabeled box.
- box_dose_response: the evidence box shifted to IoU 0.7 / 0.5 / 0.3 with the true one.
- image_ablation: blank, noise and swapped images.

The builders register with `generator.variant_kind` when this module is imported, which the package
`annotation/variants/__init__.py` does (this module imports `generator`, never the reverse at import
time); `generate_variants` runs them in `KINDS` order. Per-kind behaviour is summarised in
`annotation/variants/__init__.py`.
"""
from __future__ import annotations

import hashlib
import math
import random
import re
from functools import lru_cache
from typing import Any

from annotation.chains.types import BoxFact, ItemFacts, VariantSpec
from annotation.variants.generator import (
    _Ctx,
    _index_lesion,
    _inside,
    _lesions,
    _num,
    _shift,
    _touches,
    box_iou,
    lesion_free_organs,
    variant_kind,
)
from annotation.variants.premise import SYNONYMS
from annotation.variants.prompt import letter

CUE_COLOR = [255, 0, 0]
CUE_LINE = "The region of interest is marked with a box."
DOSE_TARGETS = (0.7, 0.5, 0.3)
DOSE_TOLERANCE = 0.05
NOISE_SIGMA = 40


# ---------------------------------------------------------------- cues on the evidence box
def _primary(item: ItemFacts) -> tuple[list[float], BoxFact | None] | None:
    """The box a visual cue marks: the gold box of box items, else the index lesion / first evidence."""
    if item.answer_type == "box":
        gold = [float(v) for v in item.gold]
        fact = next((b for b in item.evidence if [float(v) for v in b.xyxy] == gold), None)
        return gold, fact or (item.evidence[0] if len(item.evidence) == 1 else None)
    fact = _index_lesion(item) or (item.evidence[0] if item.evidence else None)
    return ([float(v) for v in fact.xyxy], fact) if fact else None


def _cue(ctx: _Ctx, kind: str, params: dict, box, label: str | None) -> VariantSpec:
    img = ctx.item.image
    width = max(2, round(max(img.width, img.height) / 256))
    draw = {"box": [_num(v) for v in box], "color": CUE_COLOR, "width": width, "label": label}
    recipe = {"base": {"image_id": img.image_id}, "draw": [draw]}
    return ctx.spec(kind, {**params, "box": draw["box"], "label": label}, context=(CUE_LINE,), recipe=recipe)


@variant_kind("correct_visual_cue")
def _correct_visual_cue(ctx: _Ctx) -> list[VariantSpec]:
    primary = _primary(ctx.item)
    if primary is None:
        return []
    box, fact = primary
    return [_cue(ctx, "correct_visual_cue", {"box_id": fact.id if fact else None}, box, fact.label if fact else None)]


def _wrong_region(ctx: _Ctx, box: list[float]) -> tuple[list[float], dict] | None:
    it, (W, H) = ctx.item, (ctx.item.image.width, ctx.item.image.height)
    bw, bh = box[2] - box[0], box[3] - box[1]
    avoid = [box, *(list(b.xyxy) for b in (*it.evidence, *_lesions(it)))]

    def ok(b):
        return _inside(b, W, H) and not any(_touches(b, a) for a in avoid)

    organ_boxes = []
    for organ, ob in lesion_free_organs(it):
        if ob is not None:
            dx = round((ob[0] + ob[2] - bw) / 2 - box[0])
            dy = round((ob[1] + ob[3] - bh) / 2 - box[1])
            dx = min(max(dx, -math.floor(box[0])), math.floor(W - box[2]))     # keep inside the image
            dy = min(max(dy, -math.floor(box[1])), math.floor(H - box[3]))
            if ok(cand := _shift(box, dx, dy)):
                organ_boxes.append((cand, {"source": "organ", "organ": organ, "shift_px": [dx, dy]}))
    rng = ctx.rng("wrong_visual_cue", "wrong_region")
    if organ_boxes:
        return rng.choice(organ_boxes)
    gx, gy = math.ceil(bw) + max(2, math.ceil(bw / 2)), math.ceil(bh) + max(2, math.ceil(bh / 2))
    shifts = [("mirror_x", round(W - box[2] - box[0]), 0), ("mirror_y", 0, round(H - box[3] - box[1])),
              ("mirror_xy", round(W - box[2] - box[0]), round(H - box[3] - box[1])),
              ("right", gx, 0), ("left", -gx, 0), ("down", 0, gy), ("up", 0, -gy)]
    shifted = [(c, {"source": how, "organ": None, "shift_px": [dx, dy]})
               for how, dx, dy in shifts if ok(c := _shift(box, dx, dy))]
    return rng.choice(shifted) if shifted else None


# ---------------------------------------------------------------- cue labels that answer the question
_SIZE_BIN = re.compile(r"^(?:(?P<lt><)\s*(?P<max>\d+(?:\.\d+)?)|(?P<gt>>)\s*(?P<min>\d+(?:\.\d+)?)"
                       r"|(?P<lo>\d+(?:\.\d+)?)\s*[-\u2013]\s*(?P<hi>\d+(?:\.\d+)?))\s*mm$")


_SPACES = re.compile(r"\s+")


def _norm(text: Any) -> str:
    return _norm_text(text if type(text) is str else str(text))


@lru_cache(maxsize=65536)
def _norm_text(text: str) -> str:
    """Lower case, spaces collapsed: cached, as option texts and labels repeat across every item."""
    return _SPACES.sub(" ", text.strip().lower())


def _group(organ: str) -> str:
    """'left kidney' -> 'kidney' (as option texts of organ questions name paired organs)."""
    first, _, rest = organ.partition(" ")
    return rest if first in ("left", "right") and rest else organ


def _in_size_bin(text: str, mm: Any) -> bool | None:
    """Whether a size option ("< 10 mm", "10-20 mm", "> 50 mm") contains `mm` (ends inclusive, so an
    option on the boundary counts as true); None when `text` is not a size range or `mm` not a number."""
    m = _SIZE_BIN.match(_norm(text))
    if m is None or isinstance(mm, bool) or not isinstance(mm, (int, float)):
        return None
    if m["lt"]:
        return mm <= float(m["max"])
    if m["gt"]:
        return mm >= float(m["min"])
    return float(m["lo"]) <= mm <= float(m["hi"])


def _truths(fact: BoxFact) -> dict[str, str]:
    """What is true of a marked box, as normalised text -> the property it states: the label, the
    organ (and its unpaired group), "{label} in the {organ}", and every text attribute. Nodule and
    mass (size-defined synonyms) count as one."""
    out: dict[str, str] = {}
    organ = fact.attributes.get("organ")
    names = {fact.label}
    for group in SYNONYMS:
        if fact.label in group:
            names |= group
    for key, value in fact.attributes.items():
        if isinstance(value, str) and value.strip():
            out.setdefault(_norm(value), key)
    if organ:
        out.setdefault(_norm(_group(str(organ))), "organ")
        if fact.kind == "lesion":
            for name in names:
                out.setdefault(_norm(f"{name} in the {organ}"), "finding")
    for name in names:
        out[_norm(name)] = "organ" if fact.kind == "anatomy" else "label"
        out.setdefault(_norm(_group(name)), out[_norm(name)])
    return out


def _answered_property(item: ItemFacts, fact: BoxFact) -> str | None:
    """The property of the marked box that the item's gold states ("label", "organ", "finding", an
    attribute key such as "shape", or "diameter_mm" for a size range), or None when the question is
    about something else (a count, the next step, a differential, ...). Yes/no items: None."""
    if item.answer_type == "multi_choice":
        truths = _truths(fact)
        found = [truths[_norm(g)] for g in item.gold if _norm(g) in truths]
        return found[0] if found else None
    if item.answer_type != "single_choice":
        return None
    found = _truths(fact).get(_norm(item.gold))
    if found is None and _in_size_bin(item.gold, fact.attributes.get("diameter_mm")):
        found = "diameter_mm"
    return found


def _mislabel_options(item: ItemFacts, fact: BoxFact) -> tuple[list[int], str | None]:
    """(indices of the options a mislabeled cue may draw, the property they misstate). The drawn label
    must be a plausible wrong answer to the question asked: the gold states a property of the marked
    box (`_answered_property`), so every other option is a rival value of that property; options
    that are nonetheless true of the box (a synonym, a size range on its boundary) are left out."""
    prop = _answered_property(item, fact)
    if prop is None:
        return [], None
    gold = {_norm(g) for g in item.gold} if item.answer_type == "multi_choice" else {_norm(item.gold)}
    truths, mm = _truths(fact), fact.attributes.get("diameter_mm")
    keep = [i for i, o in enumerate(item.options)
            if _norm(o) not in gold and _norm(o) not in truths and not _in_size_bin(o, mm)]
    return keep, prop


def _region_letter(item: ItemFacts, organ: str | None) -> str | None:
    """Letter of the option that names the organ a wrong-region box lies on (exactly, else by its
    unpaired group: "kidney" for "left kidney"); None unless a single-choice item without a box in
    its answer offers that organ as a wrong option (a joint item's cue is judged by the model's box)."""
    if not organ or item.answer_type != "single_choice" or item.answer_with_box:
        return None
    texts, gold = [_norm(o) for o in item.options], _norm(item.gold)
    for name in (_norm(organ), _norm(_group(organ))):
        if name in texts and name not in (gold, _norm(_group(gold))):    # "kidney" is true of a right-kidney lesion
            return letter(texts.index(name))
    return None


@variant_kind("wrong_visual_cue")
def _wrong_visual_cue(ctx: _Ctx) -> list[VariantSpec]:
    it = ctx.item
    primary = _primary(it)
    if primary is None:
        return []
    box, fact = primary
    label = fact.label if fact else None
    out = []
    moved = _wrong_region(ctx, box)
    if moved:
        cand, info = moved
        info = {"cue": "wrong_region", "true_box": [_num(v) for v in box], "iou_with_true": box_iou(cand, box), **info}
        drawn = label
        cue_letter = _region_letter(it, info["organ"])
        if cue_letter is not None:
            info["cue_letter"] = cue_letter
            if label is not None and {_norm(label), _norm(_group(label))} & {_norm(o) for o in it.options}:
                drawn = None      # the true label is itself an option: it would answer the question too
        out.append(_cue(ctx, "wrong_visual_cue", info, cand, drawn))
    keep, prop = _mislabel_options(it, fact) if fact else ([], None)
    if keep:
        i = ctx.rng("wrong_visual_cue", "mislabeled").choice(keep)
        params = {"cue": "mislabeled", "true_label": label, "property": prop, "cue_letter": letter(i)}
        out.append(_cue(ctx, "wrong_visual_cue", params, box, str(it.options[i])))
    return out


def dose_box(box, target: float, rng: random.Random, W: int, H: int) -> tuple[list[float], dict] | None:
    """Same-size box shifted by whole pixels along one seeded axis/direction so that IoU with `box` is
    within DOSE_TOLERANCE of `target` (IoU = (s - d) / (s + d) for a shift d along a side of length s)."""
    directions = [("x", 1), ("x", -1), ("y", 1), ("y", -1)]
    rng.shuffle(directions)
    for axis, sign in directions:
        side = box[2] - box[0] if axis == "x" else box[3] - box[1]
        exact = side * (1 - target) / (1 + target)
        best = None
        for d in sorted({math.floor(exact), math.ceil(exact)}):
            if d <= 0:
                continue
            cand = _shift(box, sign * d, 0) if axis == "x" else _shift(box, 0, sign * d)
            achieved = box_iou(cand, box)
            if _inside(cand, W, H) and abs(achieved - target) <= DOSE_TOLERANCE + 1e-12:
                if best is None or abs(achieved - target) < abs(best[1] - target):
                    best = (cand, achieved, sign * d)
        if best:
            return best[0], {"axis": axis, "shift_px": best[2], "achieved_iou": round(best[1], 4)}
    return None


@variant_kind("box_dose_response")
def _box_dose_response(ctx: _Ctx) -> list[VariantSpec]:
    primary = _primary(ctx.item)
    if primary is None:
        return []
    box, fact = primary
    img, out = ctx.item.image, []
    for target in DOSE_TARGETS:
        found = dose_box(box, target, ctx.rng("box_dose_response", target), img.width, img.height)
        if found:
            cand, info = found
            params = {"target_iou": target, **info, "true_box": [_num(v) for v in box]}
            out.append(_cue(ctx, "box_dose_response", params, cand, fact.label if fact else None))
    return out


@variant_kind("image_ablation")
def _image_ablation(ctx: _Ctx) -> list[VariantSpec]:
    img = ctx.item.image
    size = [img.width, img.height]
    digest = hashlib.sha256(f"{ctx.seed}:{ctx.item.item_id}:image_ablation:noise".encode()).digest()
    noise_seed = int.from_bytes(digest[:4], "big")
    out = [ctx.spec("image_ablation", {"ablation": "blank"}, recipe={"base": {"blank": size}, "draw": []}),
           ctx.spec("image_ablation", {"ablation": "noise", "noise_seed": noise_seed, "sigma": NOISE_SIGMA},
                    recipe={"base": {"noise": size, "seed": noise_seed, "sigma": NOISE_SIGMA}, "draw": []})]
    pool = sorted({int(i) for i in ctx.item.swap_image_ids} - {img.image_id})
    if pool:
        swap = ctx.rng("image_ablation", "swap").choice(pool)
        out.append(ctx.spec("image_ablation", {"ablation": "swap", "swap_image_id": swap},
                            recipe={"base": {"image_id": swap}, "draw": []}))
    return out
