"""Factories for the adjudication rule tests: a standard six-step chain, model answers on it, and
edits of those answers (tests/adjudication/test_rules*.py)."""
from __future__ import annotations

import dataclasses

from adjudication.rules import ItemFact, ModelAnswer, RuleHit, RuleParams

MODELS = ("m1", "m2", "m3", "m4")
PARAMS = RuleParams()
BOX = (10.0, 10.0, 50.0, 50.0)
KIND_OFFSET = {"clean": 0, "misleading_hint": 1, "false_premise": 2, "option_permutation": 3, "image_ablation": 4}

# (stage, category, answer_type, gold) of the standard six-step chain; item ids are base + step
STEPS = (
    (1, "modality", "single_choice", "CT"),
    (2, "finding-presence", "yes_no", "yes"),
    (2, "lesion-grounding", "box", BOX),
    (3, "shape", "single_choice", "round"),
    (4, "benign-vs-malignant", "single_choice", "benign"),
    (4, "diagnosis", "single_choice", "cyst"),
)
PRESENCE, GROUNDING, SHAPE, MALIGNANCY, DIAGNOSIS = 102, 103, 104, 105, 106  # ids in the default chain


# --------------------------------------------------------------------------------------------- factories


def make_chain(chain_id: int = 1, image_id: int = 10, base: int = 100, steps=STEPS, key_prefix: str = "") -> list:
    """One chain on one image; item_id = base + step, item_key = "<prefix>c<chain>-s<step>"."""
    return [
        ItemFact(item_id=base + n, item_key=f"{key_prefix}c{chain_id}-s{n}", chain_id=chain_id, image_id=image_id,
                 stage=stage, step=n, category=category, answer_type=answer_type, gold=gold)
        for n, (stage, category, answer_type, gold) in enumerate(steps, start=1)
    ]


def answer(model: str, item_id: int, value=None, *, kind: str = "clean", outcome: str = "answered",
           correct: bool = False, iou: float | None = None, variant_id: int | None = None) -> ModelAnswer:
    vid = variant_id if variant_id is not None else item_id * 10 + KIND_OFFSET.get(kind, 9)
    return ModelAnswer(model=model, item_id=item_id, variant_id=vid, variant_kind=kind, outcome=outcome,
                       value=value, correct=correct, iou=iou)


def perfect(items, models=MODELS) -> list[ModelAnswer]:
    """Every model answers every item's clean variant correctly (boxes with IoU 0.9)."""
    return [answer(m, it.item_id, it.gold, correct=True, iou=0.9 if it.answer_type == "box" else None)
            for m in models for it in items]


def setting(answers, model: str, item_id: int, **changes) -> list[ModelAnswer]:
    """Answers with `model`'s clean answer on `item_id` changed (value given -> correct False unless said)."""
    if "value" in changes:
        changes.setdefault("correct", False)
    return [dataclasses.replace(a, **changes) if (a.model, a.item_id, a.variant_kind) == (model, item_id, "clean")
            else a for a in answers]


def wrong(answers, models, item_id: int, value) -> list[ModelAnswer]:
    for model in models:
        answers = setting(answers, model, item_id, value=value)
    return answers


def adversarial(models, item_id: int, kind: str = "misleading_hint", correct: bool = True) -> list[ModelAnswer]:
    return [answer(m, item_id, "x", kind=kind, correct=correct) for m in models]


def only(hits, rule: str) -> list[RuleHit]:
    return [h for h in hits if h.rule == rule]
