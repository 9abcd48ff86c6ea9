"""Whole-database validation of QA items (manage.py check_items)."""
from __future__ import annotations

from annotation.chains import validate_step
from annotation.chains.types import StepSpec
from annotation.models import QAItem
from annotation.services.chains import category_definitions, chunked, image_facts


def items_check(*, batch_size: int = 2000) -> tuple[int, list[tuple[int, str]]]:
    """(number checked, [(item id, violation)]) over every current item, in batches."""
    definitions = category_definitions(active_only=False)
    violations: list[tuple[int, str]] = []
    checked = 0
    ids = list(QAItem.objects.filter(is_current=True).order_by("pk").values_list("pk", flat=True))
    Through = QAItem.evidence_boxes.through
    for batch in chunked(ids, batch_size):
        items = list(QAItem.objects.filter(pk__in=batch).select_related("stage", "category", "chain").order_by("pk"))
        facts = image_facts(sorted({it.chain.image_id for it in items}))
        evidence: dict[int, list[int]] = {}
        for item_id, box_id in Through.objects.filter(qaitem_id__in=batch).values_list("qaitem_id", "groundingbox_id"):
            evidence.setdefault(item_id, []).append(box_id)
        for it in items:
            checked += 1
            category = definitions[it.category.code][0]
            spec = StepSpec(step=it.step, stage=it.stage.code, category=it.category.code,
                            answer_type=it.category.answer_type, question=it.question, options=it.options,
                            gold=it.gold_answer, evidence_box_ids=tuple(sorted(evidence.get(it.pk, ()))))
            for problem in validate_step(spec, facts[it.chain.image_id], category):
                violations.append((it.pk, problem))
    return checked, violations
