"""Taxonomy as data, findings and boxes, versioned QA items."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotation.models import Finding, GroundingBox, QAItem, Stage, TaskCategory
from annotation.services.findings import finding_create
from annotation.services.images import BytesSource, images_import
from annotation.services.qa import chain_create, qa_item_create, qa_item_revise
from audit.models import AuditEvent
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def image(curator):
    batch = images_import(sources=[BytesSource("x.png", png_bytes(size=(100, 60)))], actor=curator)
    return batch.images.get()


def test_taxonomy_is_seeded_as_data():
    assert list(Stage.objects.values_list("code", flat=True)) == ["S1", "S2", "S3", "S4"]
    per_stage = {s.code: s.categories.count() for s in Stage.objects.all()}
    assert per_stage == {"S1": 8, "S2": 8, "S3": 8, "S4": 7}
    assert TaskCategory.objects.count() == 31
    assert set(TaskCategory.objects.values_list("answer_type", flat=True)) == {
        "single_choice", "yes_no", "box", "multi_choice"}
    assert TaskCategory.objects.get(code="lesion-grounding").answer_type == "box"


def test_box_inside_image_is_stored_with_audit(image, curator):
    finding = finding_create(image=image, kind="lesion", label="nodule", actor=curator, source="manual",
                             attributes={"margin": "spiculated"}, box=(0, 0, 100, 60))
    box = finding.boxes.get()
    assert box.xyxy == (0, 0, 100, 60) and box.author == curator
    event = AuditEvent.objects.filter(action="annotation.finding.create").get()
    assert event.after["box"] == [0, 0, 100, 60] and event.actor == curator


@pytest.mark.parametrize("box,msg", [
    ((-1, 0, 10, 10), "outside"),
    ((0, 0, 101, 10), "outside"),
    ((0, 0, 10, 61), "outside"),
    ((5, 5, 5, 10), "no area"),
    ((10, 10, 5, 20), "no area"),
    (("a", 0, 1, 1), "four numbers"),
])
def test_out_of_bounds_or_empty_box_is_rejected_not_clipped(image, curator, box, msg):
    with pytest.raises(ValidationError, match=msg):
        finding_create(image=image, kind="lesion", label="x", actor=curator, source="manual", box=box)
    assert Finding.objects.count() == 0 and GroundingBox.objects.count() == 0


def test_database_refuses_a_box_without_area(image):
    finding = Finding.objects.create(image=image, kind="lesion", label="x", source="manual")
    with pytest.raises(IntegrityError):
        with transaction.atomic():
            GroundingBox.objects.create(finding=finding, image=image, x0=5, y0=5, x1=5, y1=9, label="x",
                                        source="manual")


def test_qa_item_edit_makes_a_new_version_and_keeps_the_old(image, curator):
    category = TaskCategory.objects.get(code="modality")
    chain = chain_create(image=image, actor=curator, seed=7)
    v1 = qa_item_create(chain=chain, step=1, category=category, question="Which modality?",
                        options=["CT", "MR", "US", "XR"], gold_answer="CT", actor=curator)
    v2 = qa_item_revise(item=v1, actor=curator, reason="gold corrected", gold_answer="MR")
    v1.refresh_from_db()
    assert (v1.version, v1.is_current, v1.gold_answer) == (1, False, "CT")
    assert (v2.version, v2.is_current, v2.gold_answer, v2.item_key) == (2, True, "MR", v1.item_key)
    assert v2.previous == v1 and v2.content_hash != v1.content_hash
    assert QAItem.objects.filter(item_key=v1.item_key).count() == 2
    with pytest.raises(ValidationError, match="not the current version"):
        qa_item_revise(item=v1, actor=curator, reason="stale edit", question="?")
    event = AuditEvent.objects.get(action="annotation.qa_item.revise")
    assert event.before["gold_answer"] == "CT" and event.after["gold_answer"] == "MR"


def test_content_hash_is_stable_for_equal_content(image, curator):
    category = TaskCategory.objects.get(code="modality")
    chain = chain_create(image=image, actor=curator)
    a = qa_item_create(chain=chain, step=1, category=category, question="Q", options=["CT", "MR"], gold_answer="CT",
                       actor=curator)
    b = qa_item_create(chain=chain, step=2, category=category, question="Q", options=["CT", "MR"], gold_answer="CT",
                       actor=curator)
    assert a.content_hash == b.content_hash


def test_invalid_item_rejected(image, curator):
    category = TaskCategory.objects.get(code="modality")
    chain = chain_create(image=image, actor=curator)
    with pytest.raises(ValidationError, match="gold answer"):
        qa_item_create(chain=chain, step=1, category=category, question="Q", options=["CT", "MR"], gold_answer="US",
                       actor=curator)
    with pytest.raises(ValidationError, match="unique"):
        qa_item_create(chain=chain, step=1, category=category, question="Q", options=["CT", "CT"], gold_answer="CT",
                       actor=curator)


def test_only_one_current_version_per_item(image, curator):
    category = TaskCategory.objects.get(code="modality")
    chain = chain_create(image=image, actor=curator)
    item = qa_item_create(chain=chain, step=1, category=category, question="Q", options=["CT", "MR"], gold_answer="CT",
                          actor=curator)
    with pytest.raises(IntegrityError):
        with transaction.atomic():
            QAItem.objects.create(item_key=item.item_key, version=2, is_current=True, chain=chain, step=1,
                                  stage=category.stage, category=category, question="Q", gold_answer="CT",
                                  content_hash="x")
