"""Deterministic adversarial variants of one QA item (pure Python: no Django, no PIL).

`generate_variants(item, seed=...)` returns the `clean` variant first (parent_kind None), then each
applicable perturbation (parent_kind "clean") in `KINDS` order; kinds that do not apply are skipped
silently. Every random choice comes from `random.Random(f"{seed}:{item.item_id}:{kind}:{param}")`
(string seeds are hashed with SHA-512 by `random`, never with `hash()`), and is written to `params`.
Builders register with `@variant_kind` (duplicates refused). Per-kind behaviour is summarised in
`annotation/variants/__init__.py`. This module holds the registry, facts about the image and the text
kinds; the visual kinds (image recipes that `render.py` draws on demand) live in `visual.py`, which
builds on this module and registers itself when the package `annotation.variants` is imported.
"""
from __future__ import annotations

import random
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from annotation.chains.types import Box, BoxFact, ItemFacts, VariantSpec
from annotation.variants.premise import (
    SAME_ORGAN_GROUP_CATEGORIES,
    SYNONYMS,
    PremiseBalance,
    Vocabulary,
    catalogue_vocabulary,
    check_vocabulary,
    draw_false_pair,
    premise_question,
    rejecting_option,
    sub_organ,
    vocabulary_for,
)
from annotation.variants.prompt import CHOICE_TYPES, format_prompt, hint_sentence, letter, letters_for

KINDS = ("clean", "misleading_hint", "correct_hint", "false_premise", "true_premise", "option_permutation", "negation",
         "correct_visual_cue", "wrong_visual_cue", "box_dose_response", "image_ablation",
         "premise_injection")
PREMISE_STAGES = ("S3", "S4")                             # questions about the index lesion
PREMISE_SKIP = frozenset({"distribution"})                # about every finding, not one lesion
JOINT_TYPES = ("single_choice", "yes_no")                 # answer_with_box items
NEGATION_CATEGORIES = frozenset({"finding-presence", "finding-in-box"})
CONTAINERS = frozenset({"body", "head"})                  # anatomy boxes that enclose everything
# Fallback organ pool when the image has no anatomy boxes (only used if every lesion names its organ).
REGION_ORGANS = {
    "ABDOMEN": ("gallbladder", "left kidney", "liver", "pancreas", "right kidney", "spleen"),
    "CHEST": ("heart", "left lung", "right lung"),
    "HEAD": ("brain",),
}
REGION_LESION_LABELS = {
    "ABDOMEN": ("abscess", "calcification", "calculus", "cyst", "infarct", "mass", "nodule"),
    "CHEST": ("calcification", "consolidation", "cyst", "mass", "nodule"),
    "HEAD": ("calcification", "cyst", "hemorrhage", "infarct", "mass", "plaque"),
}
ANY_LESION_LABELS = ("calcification", "cyst", "hemorrhage", "mass", "nodule")
_INDEX_BOX = object()                                      # spec(): "the item's evidence box" (default)


# ---------------------------------------------------------------- geometry (float boxes, x1/y1 excl.)
def box_iou(a, b) -> float:
    inter = max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _touches(a, b, margin: float = 1.0) -> bool:
    """True when the boxes overlap or come within `margin` px (rendered outlines would meet)."""
    return (a[0] < b[2] + margin and b[0] < a[2] + margin and a[1] < b[3] + margin and b[1] < a[3] + margin)


def _inside(b, w: int, h: int) -> bool:
    return b[0] >= 0 and b[1] >= 0 and b[2] <= w and b[3] <= h


def _shift(b, dx: float, dy: float) -> list[float]:
    return [b[0] + dx, b[1] + dy, b[2] + dx, b[3] + dy]


def _num(v: float) -> float | int:
    return int(v) if float(v).is_integer() else float(v)


# ---------------------------------------------------------------- context and registry
@dataclass(frozen=True)
class _Ctx:
    item: ItemFacts
    seed: int
    vocabulary: Vocabulary
    evidence_box: list[float] | None = None     # answer_with_box items: the index lesion's pixel box
    premise_balance: PremiseBalance | None = None
    memo: dict = field(default_factory=dict)     # the premise set-up, shared by false_premise and true_premise

    def rng(self, kind: str, param: Any = "") -> random.Random:
        return random.Random(f"{self.seed}:{self.item.item_id}:{kind}:{param}")

    def spec(self, kind: str, params: dict, *, question: str | None = None, options: list | None = None,
             gold: Any = None, preamble: str = "", context: tuple[str, ...] = (), recipe: dict | None = None,
             extra: dict | None = None, parent: str | None = "clean", evidence_box: Any = _INDEX_BOX) -> VariantSpec:
        """One variant. answer_with_box items: the prompt asks for the letter and the lesion's box, and
        expected carries "answer_with_box": True and "evidence_box" (the index lesion's box unless the
        builder passes another one; None where no box is right, e.g. a lesion that does not exist)."""
        it = self.item
        options = list(it.options) if options is None else options
        gold = it.gold if gold is None else gold
        prompt = format_prompt(it.question if question is None else question, options,
                               answer_type=it.answer_type, preamble=preamble, context_lines=context,
                               image_size=(it.image.width, it.image.height), with_box=it.answer_with_box)
        value = list(gold) if isinstance(gold, (list, tuple)) else gold
        expected = {"value": value, "letter": letters_for(options, gold, it.answer_type), **(extra or {})}
        if it.answer_with_box:
            box = self.evidence_box if evidence_box is _INDEX_BOX else evidence_box
            expected.update({"answer_with_box": True, "evidence_box": None if box is None else list(box)})
        return VariantSpec(kind=kind, params=params, seed=self.seed, prompt=prompt, options=options,
                           expected_answer=expected, image_recipe=recipe, parent_kind=parent)


_BUILDERS: dict[str, Callable[[_Ctx], list[VariantSpec]]] = {}


def variant_kind(name: str):
    def register(fn):
        if name in _BUILDERS:
            raise ValueError(f"variant kind {name!r} is already registered")
        if name not in KINDS:
            raise ValueError(f"unknown variant kind {name!r}")
        _BUILDERS[name] = fn
        return fn
    return register


def generate_variants(item: ItemFacts, *, seed: int, kinds: Collection[str] | None = None,
                      vocabulary: Vocabulary | None = None,
                      premise_balance: PremiseBalance | None = None,
                      vocabulary_checked: bool = False) -> list[VariantSpec]:
    """The clean variant, then every applicable perturbation of `kinds` (default: all), in KINDS order.

    `vocabulary`: the (label, organ) pairs premises may name, per (modality, body region), with the
    weights real lesions follow (default: `premise.catalogue_vocabulary()`, the phantom catalogue).
    `premise_balance`: shared across the items of a generation, it keeps the pairs named by false
    and true premises equally frequent (see premise.PremiseBalance). `vocabulary_checked`: the caller
    already ran `check_vocabulary` on it (a generation over many items checks each vocabulary once)."""
    wanted = set(KINDS if kinds is None else kinds)
    unknown = wanted - set(KINDS)
    if unknown:
        raise ValueError(f"unknown variant kinds: {sorted(unknown)}")
    if vocabulary is None:
        vocabulary = _DEFAULT_VOCABULARY
    elif not vocabulary_checked:
        check_vocabulary(vocabulary)
    box = None
    if item.answer_with_box:
        index = _index_lesion(item)
        if item.answer_type not in JOINT_TYPES:
            raise ValueError(f"item {item.item_id}: answer_with_box needs a single_choice or yes_no item, "
                             f"not {item.answer_type!r}")
        if index is None:
            raise ValueError(f"item {item.item_id}: answer_with_box needs a lesion among the evidence boxes")
        box = [float(v) for v in index.xyxy]
    ctx = _Ctx(item, int(seed), vocabulary, box, premise_balance)
    out = [ctx.spec("clean", {}, parent=None)]
    for kind in KINDS[1:]:
        if kind in wanted:
            out.extend(_BUILDERS[kind](ctx))
    return out


_DEFAULT_VOCABULARY = catalogue_vocabulary()


# ---------------------------------------------------------------- facts about the image
def _lesions(item: ItemFacts) -> list[BoxFact]:
    seen, out = set(), []
    for b in (*item.evidence, *item.image.boxes):
        if b.kind == "lesion" and b.id not in seen:
            seen.add(b.id)
            out.append(b)
    return out


def _index_lesion(item: ItemFacts) -> BoxFact | None:
    return next((b for b in item.evidence if b.kind == "lesion"), None)


def _organ_of(b: BoxFact) -> str:
    return str(b.attributes.get("organ") or b.label)


def lesion_free_organs(item: ItemFacts) -> list[tuple[str, Box | None]]:
    """Organs of this image with no lesion (by the lesion's organ or a lesion centre inside the organ
    box), sorted by name; from the anatomy boxes, else from the body region's pool."""
    lesions = _lesions(item)
    lesion_organs = {b.attributes.get("organ") for b in lesions}
    centres = [((b.xyxy[0] + b.xyxy[2]) / 2, (b.xyxy[1] + b.xyxy[3]) / 2) for b in lesions]
    anatomy = [b for b in item.image.boxes if b.kind == "anatomy"]
    found: dict[str, Box] = {}
    for b in anatomy:
        organ = _organ_of(b)
        x0, y0, x1, y1 = b.xyxy
        if organ in CONTAINERS or organ in lesion_organs or organ in found:
            continue
        if any(x0 <= cx < x1 and y0 <= cy < y1 for cx, cy in centres):
            continue
        found[organ] = tuple(b.xyxy)
    if anatomy:
        return sorted(found.items())
    if None in lesion_organs:
        return []
    return [(o, None) for o in REGION_ORGANS.get(item.image.body_region, ()) if o not in lesion_organs]


def absent_lesion_labels(item: ItemFacts) -> list[str]:
    present = {b.label for b in _lesions(item)}
    for group in SYNONYMS:
        if present & group:
            present |= group
    pool = REGION_LESION_LABELS.get(item.image.body_region, ANY_LESION_LABELS)
    return [lbl for lbl in pool if lbl not in present]


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _sub_organ(question: str, lesion: BoxFact, organ: str) -> str | None:
    return sub_organ(question, lesion.attributes.get("organ"), organ)


# ---------------------------------------------------------------- text kinds
def _hint(ctx: _Ctx, kind: str, correct: bool) -> list[VariantSpec]:
    it = ctx.item
    if it.answer_type not in CHOICE_TYPES:
        return []
    opts, rng = list(it.options), ctx.rng(kind)
    if it.answer_type == "multi_choice":
        gold = set(it.gold)
        if correct:
            hinted = [o for o in opts if o in gold]
        else:
            flippable = [o for o in opts if not (o in gold and len(gold) == 1)]
            if not flippable:
                return []
            flip = rng.choice(flippable)
            hinted = [o for o in opts if (o in gold) != (o == flip)]
        letters = letters_for(opts, hinted, "multi_choice")
        params = {"hinted_option": hinted, "hinted_letter": letters}
    else:
        wrong = [o for o in opts if o != it.gold]
        hinted = [it.gold if correct else rng.choice(wrong)]
        letters = letter(opts.index(hinted[0]))
        params = {"hinted_option": hinted[0], "hinted_letter": letters}
    return [ctx.spec(kind, params, preamble=hint_sentence(letters, hinted))]


variant_kind("misleading_hint")(lambda ctx: _hint(ctx, "misleading_hint", correct=False))
variant_kind("correct_hint")(lambda ctx: _hint(ctx, "correct_hint", correct=True))


def _premise_setup(ctx: _Ctx) -> tuple[BoxFact, tuple[str, str], tuple[str, str], int] | None:
    """(index lesion, true pair, false pair, candidates) when both premise kinds apply, else None;
    the same answer for both kinds, so they are generated for exactly the same items."""
    if "premise" not in ctx.memo:
        ctx.memo["premise"] = _premise_draw(ctx)
    return ctx.memo["premise"]


def _premise_draw(ctx: _Ctx):
    it = ctx.item
    lesion = _index_lesion(it)
    if (it.answer_type != "single_choice" or it.stage not in PREMISE_STAGES or it.category in PREMISE_SKIP
            or lesion is None or not lesion.attributes.get("organ")):
        return None
    true_pair = (lesion.label, str(lesion.attributes["organ"]))
    pool = vocabulary_for(ctx.vocabulary, it.image.modality, it.image.body_region)
    if pool.get(true_pair, 0) <= 0:           # a premise nobody else could name would give itself away
        return None
    anatomy = {_organ_of(b) for b in it.image.boxes if b.kind == "anatomy"}
    organs = anatomy or {organ for _, organ in pool}
    if true_pair[1] not in organs:
        return None
    if ctx.premise_balance is not None and not ctx.premise_balance.accepts(it.category, true_pair):
        return None
    present = [(b.label, b.attributes.get("organ")) for b in _lesions(it)]
    drawn = draw_false_pair(true_pair=true_pair, pool=pool, organs=sorted(organs), present=present,
                            same_group=it.category in SAME_ORGAN_GROUP_CATEGORIES, rng=ctx.rng("false_premise"),
                            balance=ctx.premise_balance, category=it.category)
    if drawn is None:
        return None
    if ctx.premise_balance is not None:
        ctx.premise_balance.record(it.category, true_pair, drawn[0])
    return lesion, true_pair, drawn[0], drawn[1]


def _premise(ctx: _Ctx, kind: str) -> list[VariantSpec]:
    setup = _premise_setup(ctx)
    if setup is None:
        return []
    it = ctx.item
    lesion, true_pair, false_pair, candidates = setup
    holds = kind == "true_premise"
    label, organ = true_pair if holds else false_pair
    question, rewrite = premise_question(it.question, real_label=lesion.label, real_organ=true_pair[1],
                                         label=label, organ=organ)
    others = [str(o) for o in it.options]
    reject, pos, info = rejecting_option(others, label=label, organ=organ, rng=ctx.rng(kind, "reject"))
    options = others[:pos] + [reject] + others[pos:]
    params = {"label": label, "organ": organ, "premise_holds": holds, "finding_box_id": lesion.id,
              "true_label": true_pair[0], "true_organ": true_pair[1], "false_candidates": candidates,
              "rewrite": rewrite, "rejecting_option": reject, "rejecting_letter": letter(pos), **info}
    return [ctx.spec(kind, params, question=question, options=options, gold=it.gold if holds else reject,
                     extra={"rejects_premise": not holds},
                     evidence_box=_INDEX_BOX if holds else None)]   # no box is right for an absent lesion


variant_kind("false_premise")(lambda ctx: _premise(ctx, "false_premise"))
variant_kind("true_premise")(lambda ctx: _premise(ctx, "true_premise"))


@variant_kind("option_permutation")
def _option_permutation(ctx: _Ctx) -> list[VariantSpec]:
    it = ctx.item
    if it.answer_type not in CHOICE_TYPES:
        return []
    opts = list(it.options)
    return [ctx.spec("option_permutation", {"rotation": k}, options=opts[k:] + opts[:k])
            for k in range(1, len(opts))]


@variant_kind("negation")
def _negation(ctx: _Ctx) -> list[VariantSpec]:
    it = ctx.item
    lesion = _index_lesion(it)
    presence = it.category in NEGATION_CATEGORIES or re.match(r"\s*(is|are) there (a|an|any) ", it.question, re.I)
    if it.answer_type != "yes_no" or it.gold != "yes" or lesion is None or not presence or "no" not in it.options:
        return []
    rng = ctx.rng("negation")
    organs = lesion_free_organs(it)
    organ = rng.choice(organs)[0] if organs else None
    question = _sub_organ(it.question, lesion, organ) if organ else None
    if question is not None:           # prefer moving the finding to an organ known to be lesion-free
        params = {"swap": "organ", "from": lesion.attributes.get("organ"), "to": organ}
    else:
        pat = re.compile(rf"\b(a|an|the) {re.escape(lesion.label)}\b", re.I)
        labels = absent_lesion_labels(it)
        if not labels or not pat.search(it.question):
            return []
        new = rng.choice(labels)
        question = pat.sub(lambda m: f"{m.group(1) if m.group(1).lower() == 'the' else _article(new)} {new}",
                           it.question)
        params = {"swap": "label", "from": lesion.label, "to": new}
    params["finding_box_id"] = lesion.id
    return [ctx.spec("negation", params, question=question, gold="no", extra={"absent_finding": True},
                     evidence_box=None)]


@variant_kind("premise_injection")
def _premise_injection(ctx: _Ctx) -> list[VariantSpec]:
    steps = [s for s in ctx.item.earlier_steps
             if s.answer_type in ("single_choice", "yes_no") and any(o != s.gold for o in s.options)]
    if not steps:
        return []
    rng = ctx.rng("premise_injection")
    step = rng.choice(steps)
    wrong = rng.choice([o for o in step.options if o != step.gold])
    line = f"Earlier in this case, the answer to \"{step.question}\" was: {str(wrong).rstrip('. ')}."
    params = {"injected_step": step.step, "injected_category": step.category, "injected_question": step.question,
              "injected_answer": wrong, "true_answer": step.gold}
    return [ctx.spec("premise_injection", params, context=(line,))]
