"""Premise and joint answer + box variants through the service, on imported phantoms."""
from __future__ import annotations

import pytest

from annotation.models import QAItem, TaskCategory, Variant
from annotation.services.chains import chains_generate
from annotation.services.variants import variants_generate

pytestmark = pytest.mark.django_db


def test_joint_items_get_the_lesion_box_and_premises_come_in_pairs(phantom_images):
    images = phantom_images(8)
    flagged = list(TaskCategory.objects.filter(stage__code__in=["S3", "S4"],
                                               answer_type__in=["single_choice", "yes_no"]))
    for category in flagged:
        category.rule = {**category.rule, "answer_with_box": True}
        category.save(update_fields=["rule"])
    chains_generate(image_ids=[i.pk for i in images], actor=None, seed=0)
    items = list(QAItem.objects.filter(is_current=True).select_related("category").prefetch_related("evidence_boxes"))
    joint = [it for it in items if it.category.rule.get("answer_with_box")]
    assert joint, "the phantoms gave no S3/S4 choice item"
    variants_generate(items=[it.pk for it in items], actor=None, seed=0)

    for item in joint:
        lesion_boxes = [[b.x0, b.y0, b.x1, b.y1] for b in item.evidence_boxes.all() if b.finding.kind == "lesion"]
        variants = list(Variant.objects.filter(item=item))
        assert variants and lesion_boxes
        for v in variants:
            assert "and the box around the lesion as (x0, y0, x1, y1)" in v.prompt
            assert v.expected_answer["answer_with_box"] is True
            if v.kind in ("false_premise", "negation"):
                assert v.expected_answer["evidence_box"] is None
            else:
                assert v.expected_answer["evidence_box"] in lesion_boxes
    for item in items:
        kinds = set(Variant.objects.filter(item=item).values_list("kind", flat=True))
        assert ("false_premise" in kinds) == ("true_premise" in kinds)
        if item not in joint:
            assert not any("evidence_box" in e for e in Variant.objects.filter(item=item)
                           .values_list("expected_answer", flat=True))
    pairs = Variant.objects.filter(kind__in=["false_premise", "true_premise"])
    assert pairs.filter(kind="true_premise", expected_answer__rejects_premise=False).count() == \
        pairs.filter(kind="false_premise", expected_answer__rejects_premise=True).count() > 0
