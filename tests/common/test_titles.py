"""Names instead of codes (common/titles.py): every variant kind and detection rule has a title and a
one-line description in one place, registered by its app; categories are named from the taxonomy; a rule
hit's evidence reads as a small table (models as the page names them, IoUs to two decimals)."""
from __future__ import annotations

import pytest

from adjudication.rules import RULES
from adjudication.rules.titles import CONFLICT_KINDS, evidence_rows
from annotation.models import VariantKind
from annotation.variants import KINDS
from annotation.variants.titles import KIND_TITLES, kind_title
from common.titles import Title, description_of, filters_text, register_titles, title_of, titles


def test_every_variant_kind_has_a_title_and_a_description():
    assert set(KINDS) == set(VariantKind.values) == set(KIND_TITLES)
    for kind in KINDS:
        t = KIND_TITLES[kind]
        assert t.title and t.description and "_" not in t.title and t.title[0].isupper(), kind
        assert title_of("variant_kind", kind) == t.title == kind_title(kind)
    assert kind_title("some_new_kind") == "Some new kind"


def test_every_detection_rule_has_a_title_a_description_and_an_evidence_layout():
    for name, rule in RULES.items():
        assert rule.title and rule.description and "_" not in rule.title, name
        assert title_of("rule", name) == rule.title and description_of("rule", name) == rule.description
    assert title_of("rule", "right_answer_wrong_evidence") == "Right answer, wrong evidence"
    from adjudication.rules.titles import EVIDENCE

    assert set(RULES) <= set(EVIDENCE)


def test_an_unknown_code_is_humanised_never_shown_raw():
    assert title_of("rule", "no_such_rule") == "No such rule"
    assert title_of("nothing-registered", "a_b") == "A b"
    assert title_of("rule", None) == "" and description_of("rule", "no_such_rule") == ""


def test_a_callable_source_is_read_at_each_lookup():
    names = {"x": "First"}
    register_titles("test-kind", lambda: names)
    assert title_of("test-kind", "x") == "First"
    names["x"] = Title("Second", "why")
    assert title_of("test-kind", "x") == "Second" and description_of("test-kind", "x") == "why"
    assert titles("test-kind") == {"x": Title("Second", "why")}


@pytest.mark.django_db
def test_categories_are_named_from_the_taxonomy_and_an_edit_shows_at_once(django_capture_on_commit_callbacks):
    from annotation.models import TaskCategory
    from annotation.services.taxonomy import category_update

    category = TaskCategory.objects.order_by("pk").first()
    assert title_of("category", category.code) == category.name
    with django_capture_on_commit_callbacks(execute=True):
        category_update(category=category, actor=None, name="Renamed category")
    assert title_of("category", category.code) == "Renamed category"
    text = filters_text({"status": ["approved"], "category": [category.code], "item_ids": [1, 2, 3], "modality": "CT"})
    assert text == "status: approved; category: Renamed category; 3 chosen items; modality: CT"
    assert filters_text({}, "approved items") == "approved items"


def test_rule_evidence_reads_as_rows_with_names_steps_and_rounded_ious():
    rows = evidence_rows("right_answer_wrong_evidence", {"models": {"Model A": {
        "weak_grounding": [{"item": "step 2", "iou": 0.12345678901234567}, {"item": "step 3", "iou": None}],
        "wrong_earlier": ["step 1"]}}})
    assert rows == [("Model A: weak or missing box at", "step 2 (IoU 0.12), step 3 (no box)"),
                    ("Model A: wrong at earlier", "step 1")]
    rows = dict(evidence_rows("adversarial_flip", {"flipped": {"Model B": ["misleading_hint", "image_ablation"]},
                                                   "robust": ["Model A", "Model C"]}))
    assert rows == {"Model B: wrong under": "Misleading hint, Image ablation",
                    "Right under every variant": "Model A, Model C"}
    rows = dict(evidence_rows("model_consensus", {"answer": ["cyst"], "gold": "mass", "agree": 3, "answered": 4}))
    assert rows == {"Their answer": "cyst", "Gold": "mass", "Models agreeing": "3 of 4 that answered"}
    rows = dict(evidence_rows("chain_contradiction", {"denial_item": "step 2", "late_items": ["step 3", "step 4"]}))
    assert rows == {"Gold denies the finding at": "step 2", "Gold describes it later at": "step 3, step 4"}
    rows = dict(evidence_rows("annotator_disagreement", {"task": 12, "kinds": ["box_unmatched", "gold_answer"]}))
    assert rows == {"Label Studio task": "#12",
                    "They disagree on": f"{CONFLICT_KINDS['box_unmatched']}, the gold answer"}
    # a rule without its own layout, or evidence of another shape: the generic table, still no repr
    rows = evidence_rows("new_rule", {"some_field": [1, 2], "flag": True})
    assert rows == [("Some field", "1, 2"), ("Flag", "yes")]
    assert evidence_rows("adversarial_flip", {"flipped": "odd"}) and evidence_rows("model_consensus", None) == []
