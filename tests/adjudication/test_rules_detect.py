"""Adjudication rules together: detect (selection, order, determinism, duplicates), cases, property.

No database: SECRET_KEY=x python -m pytest tests/adjudication -p no:warnings -p no:cacheprovider
"""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings, strategies as st

from adjudication.rules import (
    RULES,
    AnnotatorConflict,
    CaseDraft,
    ItemFact,
    ModelAnswer,
    Rule,
    RuleHit,
    RuleParams,
    cases_from_hits,
    detect,
    model_consensus,
)
from tests.adjudication.rule_factories import (
    BOX,
    DIAGNOSIS,
    GROUNDING,
    KIND_OFFSET,
    MODELS,
    PARAMS,
    SHAPE,
    adversarial,
    answer,
    make_chain,
    only,
    perfect,
    setting,
    wrong,
)

# --------------------------------------------------------------------------------------------- detect


def busy_run():
    """Two chains on two images with one pattern per rule, plus conflicts."""
    items = make_chain() + make_chain(chain_id=2, image_id=20, base=200)
    answers = perfect(items)
    answers = wrong(answers, ["m1", "m2", "m3"], 201, "MR")                         # consensus on 201
    answers = setting(answers, "m4", GROUNDING, iou=0.2)                             # weak grounding, chain 1
    answers = setting(answers, "m1", 202, value="no")                                # contradiction, chain 2
    answers += adversarial(["m1", "m2", "m3"], SHAPE) + adversarial(["m4"], SHAPE, correct=False)
    answers += adversarial(["m1", "m2", "m3"], SHAPE, kind="option_permutation")
    conflicts = [AnnotatorConflict(1, 10, SHAPE, ("answer",)), AnnotatorConflict(2, 20, None, ("box_unmatched",))]
    return items, answers, conflicts


def snapshot(hits):
    return [(h, json.dumps(h.evidence, sort_keys=True)) for h in hits]


def test_detect_runs_every_rule_sorted():
    hits = detect(*busy_run())
    assert {h.rule for h in hits} == set(RULES)
    keys = [(-h.priority, h.rule, -1 if h.item_id is None else h.item_id, h.image_id) for h in hits]
    assert keys == sorted(keys)
    for h in hits:
        assert 0.0 <= h.priority <= 1.0
        assert json.loads(json.dumps(h.evidence)) == h.evidence


def test_detect_is_deterministic_under_shuffled_input():
    items, answers, conflicts = busy_run()
    expected = snapshot(detect(items, answers, conflicts))
    rng = random.Random(7)
    for _ in range(5):
        items, answers, conflicts = (rng.sample(x, len(x)) for x in (items, answers, conflicts))
        assert snapshot(detect(items, answers, conflicts)) == expected


def test_detect_rule_selection_and_unknown_names():
    items, answers, conflicts = busy_run()
    assert {h.rule for h in detect(items, answers, conflicts, rules=["adversarial_flip"])} == {"adversarial_flip"}
    assert {h.rule for h in detect(items, answers, conflicts, rules="annotator_disagreement")} == {
        "annotator_disagreement"}
    assert detect(items, answers, conflicts, rules=[]) == []
    with pytest.raises(ValueError, match="unknown rule.*'nope'.*known rules.*model_consensus"):
        detect(items, answers, rules=["model_consensus", "nope"])


def test_detect_passes_params():
    items, answers, conflicts = busy_run()
    assert only(detect(items, answers, conflicts), "model_consensus")
    assert not only(detect(items, answers, conflicts, params=RuleParams(consensus_min_agree=4)), "model_consensus")


def test_duplicate_answers_keep_the_first():
    items = make_chain()
    answers = wrong(perfect(items), ["m1", "m2"], SHAPE, "oval")      # m3 answered "round" on the same variant
    dup_wrong = answer("m3", SHAPE, "oval")
    [hit] = model_consensus(items, answers + [dup_wrong] * 3, PARAMS)
    assert (hit.evidence["agree"], hit.evidence["answered"]) == (2, 4)
    [hit] = model_consensus(items, [dup_wrong] + answers, PARAMS)
    assert (hit.evidence["agree"], hit.evidence["answered"]) == (3, 4)


def test_answers_about_unknown_items_are_ignored():
    items = make_chain()
    answers = perfect(items) + [answer(m, 999, "oval") for m in MODELS]
    assert detect(items, answers) == []


def test_rule_params_validation_and_registry():
    with pytest.raises(ValueError, match="consensus_share"):
        RuleParams(consensus_share=1.5)
    with pytest.raises(ValueError, match="consensus_min_models"):
        RuleParams(consensus_min_models=0)
    assert all(isinstance(r, Rule) and r.name == name and r.title and r.description for name, r in RULES.items())
    assert RULES["annotator_disagreement"].source == "conflicts"


# --------------------------------------------------------------------------------------------- cases_from_hits


def test_two_rules_on_one_item_make_one_case_with_a_bump():
    items, answers, conflicts = busy_run()
    cases = {c.key: c for c in cases_from_hits(detect(items, answers, conflicts), items)}
    shape = cases["item:c1-s4"]                                       # adversarial flip + annotator conflict
    assert {h.rule for h in shape.hits} == {"adversarial_flip", "annotator_disagreement"}
    assert shape.priority == round(0.65 + 0.05, 4) and shape.item_id == SHAPE and shape.image_id == 10
    assert cases["image:20"].item_id is None and cases["image:20"].priority == 0.65
    ordered = list(cases.values())
    assert [(-c.priority, c.key) for c in ordered] == sorted((-c.priority, c.key) for c in ordered)


def test_versions_of_one_item_share_a_case_and_duplicates_are_dropped():
    v1 = make_chain()
    v2 = make_chain(base=300)                                   # same chain / item keys, new item ids
    hits = [RuleHit("model_consensus", SHAPE, 10, 0.75, ("m1", "m2")),
            RuleHit("model_consensus", 304, 10, 0.875, ("m1", "m2", "m3")),
            RuleHit("model_consensus", 304, 10, 0.875, ("m1", "m2", "m3"), evidence={"again": True}),
            RuleHit("annotator_disagreement", 304, 10, 0.8)]
    [case] = cases_from_hits(hits, v1 + v2)
    assert isinstance(case, CaseDraft)
    assert (case.key, case.item_id, case.image_id) == ("item:c1-s4", 304, 10)
    assert [(h.rule, h.item_id) for h in case.hits] == [
        ("model_consensus", 304), ("annotator_disagreement", 304), ("model_consensus", SHAPE)]
    assert case.priority == 0.925


def test_case_priority_is_capped_and_unknown_items_keep_their_own_case():
    items = make_chain()
    hits = [RuleHit("chain_contradiction", DIAGNOSIS, 10, 0.95), RuleHit("model_consensus", DIAGNOSIS, 10, 0.9),
            RuleHit("annotator_disagreement", DIAGNOSIS, 10, 0.8), RuleHit("annotator_disagreement", 999, 10, 0.65)]
    top, orphan = cases_from_hits(hits, items)
    assert (top.key, top.priority) == ("item:c1-s6", 1.0)
    assert (orphan.key, orphan.item_id) == ("item-id:999", 999)
    assert cases_from_hits([], items) == []


def test_image_only_conflict_makes_an_image_case():
    items = make_chain()
    hits = detect(items, perfect(items), [AnnotatorConflict(5, 10, None, ("box_unmatched", "gold_answer"))])
    [case] = cases_from_hits(hits, items)
    assert (case.key, case.item_id, case.image_id, case.priority) == ("image:10", None, 10, 0.8)


# --------------------------------------------------------------------------------------------- property


CATEGORIES = ("finding-presence", "normal-vs-abnormal", "lesion-grounding", "shape", "diagnosis", "next-step")
TYPE_OF = {"finding-presence": "yes_no", "normal-vs-abnormal": "yes_no", "lesion-grounding": "box",
           "shape": "single_choice", "diagnosis": "multi_choice", "next-step": "single_choice"}
VALUES = {"yes_no": ("yes", "no"), "box": (BOX, (0.0, 0.0, 1.0, 1.0)), "single_choice": ("a", "b", "c"),
          "multi_choice": (("a",), ("a", "b"), ("b", "a"))}


def random_run(seed: int, n_items: int, n_answers: int):
    """A random small run (random.Random for speed; hypothesis picks seed and sizes): up to two chains, four
    models, clean and adversarial answers with any outcome, some about unknown items, two conflicts."""
    rng = random.Random(seed)
    items = []
    for n in range(n_items):
        category = rng.choice(CATEGORIES)
        answer_type = TYPE_OF[category]
        items.append(ItemFact(item_id=n, item_key=f"k{n % 4}", chain_id=rng.randint(0, 1), image_id=n % 2,
                              stage=rng.randint(1, 4), step=rng.randint(1, 3), category=category,
                              answer_type=answer_type, gold=rng.choice(VALUES[answer_type])))
    answers = {}
    for _ in range(n_answers):
        item = rng.choice(items)
        item_id = item.item_id if rng.random() < 0.9 else 99
        kind = rng.choice(("clean", "clean", "misleading_hint", "image_ablation"))
        key = (rng.choice(MODELS), item_id, item_id * 10 + KIND_OFFSET[kind])
        answers[key] = ModelAnswer(
            model=key[0], item_id=item_id, variant_id=key[2], variant_kind=kind,
            outcome=rng.choice(("answered", "answered", "abstained", "error")),
            value=rng.choice(VALUES[item.answer_type] + (None,)), correct=rng.random() < 0.6,
            iou=rng.choice((None, rng.random())))
    conflicts = [AnnotatorConflict(t, t % 2, rng.choice((None, 0, 1, 50)), ("answer",)) for t in range(2)]
    return items, list(answers.values()), conflicts


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32), n_items=st.integers(1, 8), n_answers=st.integers(0, 60),
       params=st.builds(RuleParams, consensus_min_models=st.integers(1, 4), consensus_min_agree=st.integers(1, 3),
                        consensus_share=st.floats(0, 1), grounding_iou=st.floats(0, 1), robust_share=st.floats(0, 1)))
def test_property_detect_is_total_bounded_and_order_free(seed, n_items, n_answers, params):
    items, answers, conflicts = random_run(seed, n_items, n_answers)
    hits = detect(items, answers, conflicts, params=params)
    for hit in hits:
        assert 0.0 <= hit.priority <= 1.0
        assert list(hit.models) == sorted(set(hit.models))
        assert json.loads(json.dumps(hit.evidence, allow_nan=False)) == hit.evidence
    rng = random.Random(seed + 1)
    shuffled = detect(rng.sample(items, len(items)), rng.sample(answers, len(answers)), conflicts[::-1], params)
    assert snapshot(shuffled) == snapshot(hits)
    cases = cases_from_hits(hits, items)
    assert sum(len(c.hits) for c in cases) <= len(hits)
    assert all(0.0 <= c.priority <= 1.0 for c in cases)
    assert {h.item_id for c in cases for h in c.hits} == {h.item_id for h in hits}
