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


def test_false_premises_name_what_true_premises_name(phantom_images):
    """Over the whole set, each (label, organ) is named by false premises about as often as by true
    ones (PremiseBalance), per category, so the named lesion alone does not tell the kinds apart;
    the vocabulary follows the index lesions the items are really about."""
    from collections import Counter

    from annotation.services.variants import premise_vocabularies

    images = phantom_images(40)
    chains_generate(image_ids=[i.pk for i in images], actor=None, seed=0)
    ids = list(QAItem.objects.filter(is_current=True).values_list("pk", flat=True))
    overall, by_category = premise_vocabularies()
    index_pairs = {(b.label, b.finding.attributes["organ"])
                   for it in QAItem.objects.filter(stage__code__in=["S3", "S4"])
                   for b in it.evidence_boxes.all() if b.finding.kind == "lesion"}
    named = {(label, organ) for rows in overall.values() for label, organ, w in rows if w >= 1}
    assert index_pairs and index_pairs <= named          # every real index lesion weighs at least one item
    variants_generate(items=ids, actor=None, seed=0, kinds=["false_premise", "true_premise"])
    true, false = Counter(), Counter()
    for kind, category, params in Variant.objects.filter(kind__in=["false_premise", "true_premise"]).values_list(
            "kind", "item__category__code", "params"):
        (true if kind == "true_premise" else false)[(category, params["label"], params["organ"])] += 1
    assert sum(true.values()) == sum(false.values()) > 10
    for key in true:
        assert true[key] - false[key] <= 1, key          # never more than the balance's slack ahead
    # resuming is seeded from the stored variants: a second call adds nothing and changes nothing
    again = variants_generate(items=ids, actor=None, seed=0, kinds=["false_premise", "true_premise"])
    assert again.variants == 0


def test_premise_balance_hand_example():
    from annotation.variants.premise import PremiseBalance

    b = PremiseBalance()
    b.record("shape", ("mass", "brain"), ("cyst", "liver"))
    assert b.deficit("shape", ("mass", "brain")) == 1 and b.deficit("shape", ("cyst", "liver")) == -1
    assert not b.accepts("shape", ("mass", "brain")) and b.accepts("shape", ("cyst", "liver"))
    assert b.accepts("margin", ("mass", "brain"))                  # per category
    cands = [(("cyst", "liver"), 5.0), (("mass", "brain"), 0.1), (("infarct", "brain"), 1.0)]
    assert b.most_needed("shape", cands) == [(("mass", "brain"), 0.1)]
