"""Rule kinds, part 1: the registry, the per-image context and the S1 perception kinds (no Django).

S2 kinds live in ``rules_detection.py``, S3/S4 kinds in ``rules_lesion.py``.

A rule kind is a pydantic model registered with ``@rule_kind("name")``; its fields are the data a
curator edits (pools of distractors, label maps, bins, mappings) and ``build(ctx, rng, n)`` derives
one step draft from an image, or returns None when the image's data cannot support it (nothing is
ever invented). Models are validated once per category set; ``build`` only reads plain attributes.

Conventions shared by all kinds:
- the *index lesion* is the largest lesion (``diameter_mm`` when every lesion has it, else box
  area; ties by the lower box id); S3/S4 questions are about it;
- a lesion's organ comes from its ``organ`` attribute (no guessing from box overlap);
- every candidate list is built in a deterministic order (box id, then mapping order) and only the
  step's own ``random.Random`` draws from it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .types import BoxFact, ImageFacts

CHOICE = frozenset({"single_choice", "short_text"})
YES_NO = frozenset({"yes_no"})
BOX = frozenset({"box"})
MULTI = frozenset({"multi_choice"})
COMMON_PLACEHOLDERS = frozenset({"modality", "body_region", "lesion"})   # every kind provides these
# How S1/S3/S4 questions refer to the index lesion: by what the reader must find in the image, never by
# the finding's name (which would give away the S2 answer and, through it, the S3/S4 answers).
LESION_REFERENCE = "the largest lesion"
LESION = frozenset({"finding", "organ"})
CONTAINERS = ["body", "head"]


@dataclass(slots=True)
class Draft:
    """What a rule derived; the generator renders the question and orders the options."""

    gold: Any
    values: dict = field(default_factory=dict)   # template placeholder values
    tiers: tuple = ()               # distractor candidates, most plausible list first
    options: list | None = None     # a fixed option set (still shuffled unless yes/no)
    evidence: tuple = ()
    meta: dict = field(default_factory=dict)


class RuleBase(BaseModel):
    """Base of every rule kind; subclasses declare ``kind: Literal["<name>"]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    n_options: int | None = Field(None, ge=2, le=10, description="options shown; None: the policy's")
    answer_with_box: bool = Field(False, description="ask for the answer together with a box around the "
                                                     "lesion it is about (grounding scored on the lesion)")

    placeholders: ClassVar[frozenset[str]] = frozenset()
    answer_types: ClassVar[frozenset[str]] = CHOICE
    any_placeholder: ClassVar[bool] = False

    def build(self, ctx: Ctx, rng: random.Random, n_options: int) -> Draft | None:   # pragma: no cover
        raise NotImplementedError

    def candidates(self, ctx: Ctx, rng: random.Random, n_options: int) -> list[Draft]:
        """Every true fact this rule could ask about on this image; the balancer chooses among them
        (see balance.py). Default: the one draft ``build`` derives."""
        d = self.build(ctx, rng, n_options)
        return [] if d is None else [d]


RULE_KINDS: dict[str, type[RuleBase]] = {}
_VERSION = [0]   # bumped on every (un)registration; definitions.py rebuilds its union from it


def rule_kind(name: str):
    """Register a rule kind; a second registration of the same name is refused."""
    def register(cls):
        if name in RULE_KINDS:
            raise ValueError(f"rule kind {name!r} is already registered by {RULE_KINDS[name].__qualname__}")
        if not (isinstance(cls, type) and issubclass(cls, RuleBase)):
            raise TypeError(f"@rule_kind({name!r}) must decorate a RuleBase subclass")
        kind = cls.model_fields.get("kind")
        if kind is None or get_args(kind.annotation) != (name,):
            raise TypeError(f"{cls.__qualname__} must declare kind: Literal[{name!r}]")
        RULE_KINDS[name] = cls
        _VERSION[0] += 1
        return cls
    return register


def unregister_rule_kind(name: str) -> None:
    """Remove a registered kind (plugins and tests)."""
    if RULE_KINDS.pop(name, None) is not None:
        _VERSION[0] += 1


# ---------------------------------------------------------------------------------------------
# geometry and wording helpers

def group(organ: str) -> str:
    """'left kidney' -> 'kidney'; organs without a side are their own group."""
    first, _, rest = organ.partition(" ")
    return rest if first in ("left", "right") and rest else organ


def side_of_name(organ: str) -> str | None:
    first = organ.split(" ", 1)[0]
    return first if first in ("left", "right") else None


def centre(b) -> tuple[float, float]:
    return (b[0] + b[2]) / 2.0, (b[1] + b[3]) / 2.0


def inside(pt, b) -> bool:
    return b[0] <= pt[0] < b[2] and b[1] <= pt[1] < b[3]


def overlap(a, b) -> float:
    w, h = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def area(b) -> float:
    return max(b[2] - b[0], 0) * max(b[3] - b[1], 0)


def fmt_box(b) -> str:
    return "(" + ", ".join(str(int(v)) if float(v).is_integer() else f"{v:.1f}" for v in b) + ")"


def lookup(mapping: dict, modality: str, key: str):
    """``mapping["CT:liver"]`` before ``mapping["liver"]``."""
    hit = mapping.get(f"{modality}:{key}")
    return hit if hit is not None else mapping.get(key)


def organ_of(b: BoxFact) -> str | None:
    return b.attributes.get("organ") or (b.label if b.kind == "anatomy" else None)


class Ctx:
    """Everything the rules need about one image, computed once per chain."""

    __slots__ = ("facts", "mod", "region", "plane", "lesions", "organs", "other", "index", "attrs",
                 "organ", "finding", "lesion_organs")

    def __init__(self, facts: ImageFacts):
        self.facts = facts
        self.mod = (facts.modality or "").upper()
        self.region = (facts.body_region or "").upper()
        self.plane = (facts.plane or "").lower()
        lesions, organs, other = [], {}, []
        for b in sorted(facts.boxes, key=lambda b: b.id):
            if b.kind == "lesion":
                lesions.append(b)
            elif b.kind == "anatomy":
                organs.setdefault(organ_of(b), b)
            else:
                other.append(b)
        self.lesions, self.organs, self.other = lesions, organs, other
        self.lesion_organs = {organ_of(b) for b in lesions}
        self.index = self.attrs = self.organ = self.finding = None
        if lesions:
            by_mm = all(isinstance(b.attributes.get("diameter_mm"), (int, float)) for b in lesions)
            idx = max(lesions, key=lambda b: (b.attributes["diameter_mm"] if by_mm else area(b.xyxy), -b.id))
            self.index, self.attrs, self.organ = idx, idx.attributes, organ_of(idx)
            twins = any(b.label == idx.label and b is not idx for b in lesions)
            self.finding = f"largest {idx.label}" if twins else idx.label

    def organ_names(self, exclude) -> list[str]:
        return [n for n in self.organs if n not in exclude]

    def lesion_values(self, **extra) -> dict:
        return {"finding": self.finding, "organ": self.organ, **extra}


class Choice(RuleBase):
    """Shared fields of rules that pick an organ or finding for lesion-free images."""

    exclude_organs: list[str] = Field(default_factory=lambda: list(CONTAINERS))
    findings_by_organ: dict[str, list[str]] = Field(default_factory=dict)

    synonyms: list[list[str]] = Field(default_factory=lambda: [["nodule", "mass"]])

    def absent_pairs(self, ctx: Ctx) -> list[tuple[str, BoxFact, str]]:
        """Every (organ present, anatomy box, finding) whose finding is not in that organ (nor a
        synonym of one that is): the true 'no' facts of the image, in a deterministic order."""
        out = []
        for name in ctx.organ_names(self.exclude_organs):
            there = {b.label for b in ctx.lesions if organ_of(b) == name}
            for grp in self.synonyms:
                if there.intersection(grp):
                    there.update(grp)
            out += [(name, ctx.organs[name], f) for f in self.findings_by_organ.get(group(name), ()) if f not in there]
        return out

    def present_pairs(self, ctx: Ctx) -> list[tuple[str, str, list[BoxFact]]]:
        """(organ, finding, its boxes) for every lesion label present in an organ."""
        seen: dict[tuple[str, str], list[BoxFact]] = {}
        for b in ctx.lesions:
            if organ_of(b):
                seen.setdefault((organ_of(b), b.label), []).append(b)
        return [(o, f, bs) for (o, f), bs in seen.items()]


# ---------------------------------------------------------------------------------------------
# S1: perception

@rule_kind("image_attribute")
class ImageAttribute(RuleBase):
    """An image-level fact: modality / body region / plane from the header, or any key of the image's
    recorded facts (``ImageFacts.attributes``: image_quality, contrast_phase, ...). Unknown values are
    not applicable. ``pools_by_modality`` restricts distractors to the image's modality (CT phases are
    never offered for an MR image)."""

    kind: Literal["image_attribute"]
    attribute: str = Field(pattern=r"^[a-z_][a-z0-9_]*$")
    label_map: dict[str, str] = Field(min_length=1)    # recorded value (any case) -> answer text
    pool: list[str] = Field(default_factory=list)      # distractor texts; default: label_map values
    pools_by_modality: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("label_map")
    @classmethod
    def _upper_keys(cls, v):
        return {k.upper(): t for k, t in v.items()}

    def value(self, facts: ImageFacts):
        if self.attribute in ("modality", "body_region", "plane"):
            return getattr(facts, self.attribute)
        return (facts.attributes or {}).get(self.attribute)

    def build(self, ctx, rng, n):
        v = self.value(ctx.facts)
        gold = self.label_map.get(v.upper()) if isinstance(v, str) else None
        if gold is None:
            return None
        pool = self.pools_by_modality.get(ctx.mod) if self.pools_by_modality else None
        if self.pools_by_modality and (pool is None or gold not in pool):
            return None
        return Draft(gold, tiers=(pool or self.pool or list(dict.fromkeys(self.label_map.values())),))


class WindowBin(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    label: str = Field(min_length=1)
    center: tuple[float, float]     # inclusive range of the window center
    width: tuple[float, float]      # inclusive range of the window width


@rule_kind("ct_window")
class CtWindow(RuleBase):
    """Display window named from the recorded window center/width (CT only by default)."""

    kind: Literal["ct_window"]
    modalities: list[str] = Field(default_factory=lambda: ["CT"])
    sequence_kind: str = "CT display window"
    windows: list[WindowBin] = Field(min_length=2)
    placeholders = frozenset({"sequence_kind"})

    def build(self, ctx, rng, n):
        c, w = ctx.facts.window_center, ctx.facts.window_width
        if ctx.mod not in self.modalities or c is None or w is None:
            return None
        for b in self.windows:
            if b.center[0] <= c <= b.center[1] and b.width[0] <= w <= b.width[1]:
                return Draft(b.label, values={"sequence_kind": self.sequence_kind},
                             tiers=([x.label for x in self.windows],))
        return None


NOT_ORGANS = ["skull", "vertebra", "sternum", "rib", "aorta", "inferior vena cava", "lateral ventricles"]


@rule_kind("organ_identification")
class OrganIdentification(RuleBase):
    """The most prominent organ (largest anatomy box; bones, vessels and ventricles are not organs
    here). Distractors: organs of the image clearly smaller than it (under ``smaller_than`` of its
    area: telling them apart is the visual task), then organs of other regions (absent); the balancer
    offers them at their fair share, so the option set does not tell the region."""

    kind: Literal["organ_identification"]
    exclude_organs: list[str] = Field(default_factory=lambda: list(CONTAINERS) + NOT_ORGANS)
    organs_by_region: dict[str, list[str]] = Field(min_length=2)
    smaller_than: float = Field(0.6, gt=0, le=1)

    def build(self, ctx, rng, n):
        names = ctx.organ_names(self.exclude_organs)
        if not names:
            return None
        best = max(names, key=lambda k: (area(ctx.organs[k].xyxy), -ctx.organs[k].id))
        top = area(ctx.organs[best].xyxy)
        gold = group(best)
        if any(group(k) != gold and area(ctx.organs[k].xyxy) >= self.smaller_than * top for k in names):
            return None     # two organs of similar size: "most prominent" is no clear fact (and leaving the
                            # runner-up out of the options would tell the answer)
        smaller = list(dict.fromkeys(group(k) for k in names
                                     if group(k) != gold and area(ctx.organs[k].xyxy) < self.smaller_than * top))
        present = {group(k) for k in ctx.organs}
        pool = [o for r, lst in self.organs_by_region.items() if r != ctx.region for o in lst if o not in present]
        return Draft(gold, tiers=(smaller, pool), evidence=(ctx.organs[best].id,))


@rule_kind("anatomy_box")
class AnatomyBox(RuleBase):
    """Box answer: an organ present (the index lesion's organ first, else a seeded choice)."""

    kind: Literal["anatomy_box"]
    exclude_organs: list[str] = Field(default_factory=lambda: list(CONTAINERS))
    min_area_fraction: float = Field(0.002, ge=0, lt=1)
    prefer_focus_organ: bool = True
    placeholders = frozenset({"organ"})
    answer_types = BOX

    def build(self, ctx, rng, n):
        if self.prefer_focus_organ and ctx.organ in ctx.organs and ctx.organ not in self.exclude_organs:
            name = ctx.organ
        else:
            floor = self.min_area_fraction * ctx.facts.width * ctx.facts.height
            names = [k for k in ctx.organ_names(self.exclude_organs) if area(ctx.organs[k].xyxy) >= floor]
            if not names:
                return None
            name = rng.choice(names)
        b = ctx.organs[name]
        return Draft([float(v) for v in b.xyxy], values={"organ": name}, evidence=(b.id,))


@rule_kind("laterality")
class Laterality(RuleBase):
    """Patient side of the index lesion (else of a lateral organ).

    The side comes from the organ name ('left kidney') or, for axial/coronal images, from the
    x-centre against the midline (centre of the body/head box, else of the image). Radiological
    convention: image left = patient right (``neurological``: image left = patient left). Within
    ``midline_margin`` of the midline the side is not applicable.
    """

    kind: Literal["laterality"]
    convention: Literal["radiological", "neurological"] = "radiological"
    pool: list[str] = Field(default_factory=lambda: ["right", "left", "midline"])
    midline_margin: float = Field(0.05, ge=0, lt=0.5)
    midline_structures: list[str] = Field(default_factory=lambda: list(CONTAINERS))
    exclude_organs: list[str] = Field(default_factory=lambda: list(CONTAINERS))
    use_organs: bool = Field(False, description="also ask about unpaired organs (their side is anatomy "
                                                "knowledge, answerable without the image: off by default)")
    placeholders = frozenset({"structure"})

    def x_side(self, ctx: Ctx, xyxy) -> str | None:
        if ctx.plane not in ("axial", "coronal"):
            return None
        ref = next((ctx.organs[s].xyxy for s in self.midline_structures if s in ctx.organs), None)
        ref = ref or (0, 0, ctx.facts.width, ctx.facts.height)
        dx = centre(xyxy)[0] - centre(ref)[0]
        if abs(dx) < self.midline_margin * (ref[2] - ref[0]):
            return None
        image_left = dx < 0
        return "right" if image_left == (self.convention == "radiological") else "left"

    def build(self, ctx, rng, n):
        if ctx.index is not None and ctx.organ and ctx.plane != "sagittal":   # a sagittal slice shows no side
            side = side_of_name(ctx.organ) or self.x_side(ctx, ctx.index.xyxy)
            if side:
                return Draft(side, values={"structure": LESION_REFERENCE}, tiers=(self.pool,),
                             evidence=(ctx.index.id,), meta={"side_from": "lesion"})
        if not self.use_organs:
            return None
        names = [k for k in ctx.organ_names(self.exclude_organs) if side_of_name(k) is None]
        rng.shuffle(names)
        for k in names:
            side = self.x_side(ctx, ctx.organs[k].xyxy)
            if side:
                return Draft(side, values={"structure": f"the {k}"}, tiers=(self.pool,), evidence=(ctx.organs[k].id,),
                             meta={"side_from": "organ"})
        return None


@rule_kind("box_label")
class BoxLabel(RuleBase):
    """The label of a box of a given kind (e.g. 'artifact'); not applicable without one."""

    kind: Literal["box_label"]
    box_kind: str = "artifact"
    label_map: dict[str, str] = Field(default_factory=dict)
    pool: list[str] = Field(min_length=2)

    def build(self, ctx, rng, n):
        boxes = [b for b in ctx.other if b.kind == self.box_kind]
        labels = list(dict.fromkeys(self.label_map.get(b.label, b.label) for b in boxes))
        if len(labels) != 1:
            return None
        return Draft(labels[0], tiers=(self.pool,), evidence=tuple(b.id for b in boxes))
