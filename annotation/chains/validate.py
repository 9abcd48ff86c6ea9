"""Checks of one generated (or hand-edited) step against its image and category (no Django)."""
from __future__ import annotations

import json
import re

from .types import CategoryDef, ImageFacts, StepSpec

NAME_FREE_STAGES = ("S3", "S4")   # characterization and diagnosis must not name what S2 asks to find
_PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


def _box_problem(b, facts: ImageFacts) -> str | None:
    """Why ``b`` is no usable pixel box on this image (None when it is)."""
    if not isinstance(b, (list, tuple)) or len(b) != 4 or not all(isinstance(v, (int, float)) for v in b):
        return f"{b!r} is not [x0, y0, x1, y1]"
    x0, y0, x1, y1 = b
    if x1 <= x0 or y1 <= y0:
        return f"{list(b)} has no area"
    if x0 < 0 or y0 < 0 or x1 > facts.width or y1 > facts.height:
        return f"{list(b)} lies outside the {facts.width}x{facts.height} image"
    return None


def _key(o) -> str:
    return json.dumps(o, sort_keys=True)


def validate_step(step: StepSpec, facts: ImageFacts, category: CategoryDef) -> list[str]:
    """Human-readable violations (empty when the step is sound)."""
    out: list[str] = []
    at = step.answer_type
    if step.category != category.code:
        out.append(f"category {step.category!r} is not {category.code!r}")
    if step.stage != category.stage:
        out.append(f"stage {step.stage} differs from the category's stage {category.stage}")
    if at != category.answer_type:
        out.append(f"answer_type {at!r} differs from the category's {category.answer_type!r}")
    if not isinstance(step.question, str) or not step.question.strip():
        out.append("the question is empty")
    else:
        left = _PLACEHOLDER.findall(step.question)
        if left:
            out.append(f"unfilled placeholder(s) in the question: {', '.join(left)}")
    options = list(step.options or [])
    if len({_key(o) for o in options}) != len(options):
        out.append("options are not unique")
    if at == "single_choice":
        if len(options) < 2:
            out.append("a single-choice step needs at least 2 options")
        if step.gold not in options:
            out.append(f"gold {step.gold!r} is not among the options")
    elif at == "multi_choice":
        if not isinstance(step.gold, (list, tuple)) or not step.gold:
            out.append("multi-choice gold must be a non-empty list")
        else:
            missing = [g for g in step.gold if g not in options]
            if missing:
                out.append(f"multi-choice gold is not a subset of the options: {missing}")
            if len(set(map(_key, step.gold))) != len(step.gold):
                out.append("multi-choice gold repeats an option")
        if len(options) < 2:
            out.append("a multi-choice step needs at least 2 options")
    elif at == "yes_no":
        if options != ["yes", "no"]:
            out.append(f'yes/no options must be exactly ["yes", "no"], got {options}')
        if step.gold not in ("yes", "no"):
            out.append(f'yes/no gold must be "yes" or "no", got {step.gold!r}')
    elif at == "box":
        if options:
            out.append("a box step has no options")
        problem = _box_problem(step.gold, facts)
        if problem:
            out.append(f"box gold {problem}")
    elif at == "short_text":
        if not isinstance(step.gold, str) or not step.gold.strip():
            out.append("short-text gold must be a non-empty string")
    else:
        out.append(f"unknown answer_type {at!r}")
    boxes = {b.id: b for b in facts.boxes}
    if step.stage in NAME_FREE_STAGES and at in ("single_choice", "multi_choice") and isinstance(step.question, str):
        named = sorted({b.label for b in facts.boxes if b.kind == "lesion" and b.id in step.evidence_box_ids
                        and re.search(rf"\b{re.escape(b.label)}\b", step.question, re.IGNORECASE)})
        if named:
            out.append(f"the question names the finding ({', '.join(named)}), which gives away the "
                       f"detection answer; refer to the lesion by location (e.g. 'the largest lesion')")
    for bid in step.evidence_box_ids:
        b = boxes.get(bid)
        if b is None:
            out.append(f"evidence box {bid} is not on image {facts.image_id}")
            continue
        problem = _box_problem(list(b.xyxy), facts)
        if problem:
            out.append(f"evidence box {bid}: {problem}")
    return out
