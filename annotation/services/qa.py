"""Chains and versioned QA items. An edit never overwrites: it creates version n+1 with the
same item_key and marks the old row not current (Wagtail-style revisions)."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.models import Chain, GroundingBox, Image, QAItem, TaskCategory
from audit.services import audit_record

EDITABLE_FIELDS = ("question", "options", "gold_answer", "category", "status")


def qa_content_hash(*, category: TaskCategory | None = None, category_code: str = "", stage_code: str = "",
                    question: str, options: list, gold_answer, box_ids: Iterable[int]) -> str:
    """SHA-256 of what the item asks and expects (not of its status or version)."""
    if category is not None:
        category_code, stage_code = category.code, category.stage.code
    payload = {
        "category": category_code, "stage": stage_code, "question": question,
        "options": options, "gold": gold_answer, "boxes": sorted(box_ids),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _snapshot(item: QAItem, box_ids: list[int]) -> dict:
    return {"item_key": str(item.item_key), "version": item.version, "step": item.step,
            "category": item.category.code, "question": item.question, "options": item.options,
            "gold_answer": item.gold_answer, "status": item.status, "evidence_box_ids": box_ids,
            "content_hash": item.content_hash}


def chain_create(*, image: Image, actor, seed: int = 0) -> Chain:
    with transaction.atomic():
        chain = Chain.objects.create(image=image, seed=seed,
                                     created_by=actor if getattr(actor, "is_authenticated", False) else None)
        audit_record(actor=actor, action="annotation.chain.create", target=chain,
                     after={"image_id": image.pk, "seed": seed})
    return chain


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value   # not NaN


def box_errors(box, *, width: int, height: int) -> list[str]:
    """Why `box` ([x0, y0, x1, y1] pixels, x1/y1 exclusive) is no box on a `width` × `height` image, in words
    a curator can act on; empty when it is one. A box outside the image is refused, never clipped."""
    if not isinstance(box, (list, tuple)) or len(box) != 4 or not all(_number(v) for v in box):
        return ["a box is four numbers: x0, y0 (top left), x1, y1 (bottom right), in pixels"]
    x0, y0, x1, y1 = box
    out = [f"{name} = {value:g} is {where}" for name, value, bad, where in (
        ("x0", x0, x0 < 0, "left of the image (x starts at 0)"),
        ("y0", y0, y0 < 0, "above the image (y starts at 0)"),
        ("x1", x1, x1 > width, f"past the right edge (the image is {width} px wide)"),
        ("y1", y1, y1 > height, f"below the bottom edge (the image is {height} px high)")) if bad]
    if x1 <= x0:
        out.append(f"x1 ({x1:g}) must be greater than x0 ({x0:g})")
    if y1 <= y0:
        out.append(f"y1 ({y1:g}) must be greater than y0 ({y0:g})")
    return out


def gold_errors(*, answer_type: str, options: list, gold_answer, image: Image | None = None) -> list[str]:
    """What is wrong with a gold answer of this answer type (annotation/chains/types.py, "Answer encoding"),
    in words; empty when it is sound. Boxes are checked against `image`'s size when given."""
    if len(options) != len({json.dumps(o, sort_keys=True) for o in options}):
        return ["options must be unique"]
    if answer_type == "single_choice" and gold_answer not in options:
        return ["the gold answer must be one of the options"]
    if answer_type == "yes_no" and gold_answer not in ("yes", "no"):
        return ['the gold answer of a yes / no question is "yes" or "no"']
    if answer_type == "multi_choice":
        if not isinstance(gold_answer, list) or not gold_answer:
            return ["pick at least one correct option"]
        missing = [g for g in gold_answer if g not in options]
        if missing:
            return [f"every gold answer must be one of the options (not: {', '.join(map(str, missing))})"]
        if len({json.dumps(g, sort_keys=True) for g in gold_answer}) != len(gold_answer):
            return ["the gold answer repeats an option"]
    if answer_type == "box":
        return box_errors(gold_answer, width=image.width, height=image.height) if image is not None else \
            box_errors(gold_answer, width=float("inf"), height=float("inf"))
    if answer_type == "short_text" and not (isinstance(gold_answer, str) and gold_answer.strip()):
        return ["the gold answer is empty"]
    return []


def _validate(category: TaskCategory, options: list, gold_answer, image: Image | None = None) -> None:
    problems = gold_errors(answer_type=category.answer_type, options=options, gold_answer=gold_answer, image=image)
    if problems:
        raise ValidationError(problems)


def qa_item_create(
    *, chain: Chain, step: int, category: TaskCategory, question: str, options: list, gold_answer, actor,
    evidence_boxes: Iterable[GroundingBox] = (),
) -> QAItem:
    boxes = list(evidence_boxes)
    _validate(category, options, gold_answer, image=chain.image)
    with transaction.atomic():
        item = QAItem.objects.create(
            chain=chain, step=step, stage=category.stage, category=category, question=question,
            options=options, gold_answer=gold_answer,
            content_hash=qa_content_hash(category=category, question=question, options=options,
                                         gold_answer=gold_answer, box_ids=[b.pk for b in boxes]),
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
        )
        item.evidence_boxes.set(boxes)
        audit_record(actor=actor, action="annotation.qa_item.create", target=item,
                     after=_snapshot(item, [b.pk for b in boxes]))
    return item


def qa_item_revise(*, item: QAItem, actor, reason: str, **changes) -> QAItem:
    """Create the next version of `item` with `changes` applied; the old version stays."""
    unknown = set(changes) - set(EDITABLE_FIELDS) - {"evidence_boxes"}
    if unknown:
        raise ValidationError(f"cannot edit {sorted(unknown)}")
    with transaction.atomic():
        current = QAItem.objects.select_for_update().select_related("category__stage").get(pk=item.pk)
        if not current.is_current:
            raise ValidationError(f"version {current.version} is not the current version of this item")
        old_boxes = list(current.evidence_boxes.values_list("pk", flat=True))
        boxes = list(changes.pop("evidence_boxes")) if "evidence_boxes" in changes else list(
            GroundingBox.objects.filter(pk__in=old_boxes))
        fields = {f: changes.get(f, getattr(current, f)) for f in EDITABLE_FIELDS}
        _validate(fields["category"], fields["options"], fields["gold_answer"], image=current.chain.image)
        before = _snapshot(current, old_boxes)
        current.is_current = False
        current.save(update_fields=["is_current"])
        new = QAItem.objects.create(
            item_key=current.item_key, version=current.version + 1, is_current=True, previous=current,
            chain=current.chain, step=current.step, stage=fields["category"].stage, change_reason=reason,
            content_hash=qa_content_hash(category=fields["category"], question=fields["question"],
                                         options=fields["options"], gold_answer=fields["gold_answer"],
                                         box_ids=[b.pk for b in boxes]),
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
            **fields,
        )
        new.evidence_boxes.set(boxes)
        audit_record(actor=actor, action="annotation.qa_item.revise", target=new, before=before,
                     after={**_snapshot(new, [b.pk for b in boxes]), "reason": reason})
    return new


REVIEW_STATUSES = (QAItem.Status.DRAFT, QAItem.Status.IN_REVIEW, QAItem.Status.APPROVED, QAItem.Status.REJECTED)


def qa_items_review(*, item_ids: Iterable[int], status: str, actor, note: str = "") -> int:
    """Set the review status of current item versions (approve / reject, single or bulk).
    Status is workflow state, not content: it changes in place, with one audit event per call
    listing every item and its previous status. Old versions cannot be reviewed."""
    if status not in REVIEW_STATUSES:
        raise ValidationError(f"unknown status {status!r}; use one of {', '.join(REVIEW_STATUSES)}")
    ids = sorted({int(i) for i in item_ids})
    with transaction.atomic():
        rows = list(QAItem.objects.select_for_update().filter(pk__in=ids).values_list("pk", "status", "is_current"))
        stale = [pk for pk, _, current in rows if not current]
        if stale:
            raise ValidationError(f"items {stale} are old versions; review the current version instead")
        missing = sorted(set(ids) - {pk for pk, _, _ in rows})
        if missing:
            raise ValidationError(f"no items with ids {missing}")
        changed = {pk: old for pk, old, _ in rows if old != status}
        QAItem.objects.filter(pk__in=list(changed)).update(status=status)
        if changed:
            audit_record(actor=actor, action="annotation.qa_item.review", object_type="annotation.qaitem",
                         object_id=ids[0] if len(ids) == 1 else "",
                         before={"status": {str(k): v for k, v in changed.items()}},
                         after={"status": status, "item_ids": sorted(changed), "note": note},
                         objects=[("annotation.qaitem", pk) for pk in changed])
    return len(changed)
