"""Adjudication rules: positives, threshold boundaries, negatives, evidence, priorities, determinism, cases.

No database: SECRET_KEY=x python -m pytest tests/adjudication -p no:warnings -p no:cacheprovider
"""
from __future__ import annotations

import dataclasses
import json
import random

import pytest
from hypothesis import given, settings, strategies as st

from adjudication.rules import (
    DENIAL_CATEGORIES,
    NEUTRAL_LATE_CATEGORIES,
    RULES,
    AnnotatorConflict,
    CaseDraft,
    ItemFact,
    ModelAnswer,
    Rule,
    RuleHit,
    RuleParams,
    adversarial_flip,
    annotator_disagreement,
    cases_from_hits,
    chain_contradiction,
    detect,
    model_consensus,
    right_answer_wrong_evidence,
)

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


# --------------------------------------------------------------------------------------------- model_consensus


def test_consensus_positive_with_evidence_and_priority():
    items = make_chain()
    answers = wrong(perfect(items), ["m3", "m1", "m2"], SHAPE, "oval")
    [hit] = model_consensus(items, answers, PARAMS)
    assert (hit.rule, hit.item_id, hit.image_id, hit.models) == ("model_consensus", SHAPE, 10, ("m1", "m2", "m3"))
    assert hit.priority == round(0.5 + 0.5 * 3 / 4, 4) == 0.875
    assert hit.evidence == {"answer": "oval", "gold": "round", "agree": 3, "answered": 4}


def test_consensus_on_gold_is_not_a_hit():
    items = make_chain()
    assert model_consensus(items, perfect(items), PARAMS) == []


def test_consensus_min_agree_boundary():
    items = make_chain()
    three = perfect(items, MODELS[:3])   # n = 3 -> needed = max(2, ceil(1.5)) = 2
    assert model_consensus(items, wrong(three, ["m1"], SHAPE, "oval"), PARAMS) == []
    assert len(model_consensus(items, wrong(three, ["m1", "m2"], SHAPE, "oval"), PARAMS)) == 1


def test_consensus_share_boundary():
    items = make_chain()
    five = perfect(items, ("m1", "m2", "m3", "m4", "m5"))   # n = 5 -> needed = ceil(2.5) = 3
    assert model_consensus(items, wrong(five, ["m1", "m2"], SHAPE, "oval"), PARAMS) == []
    [hit] = model_consensus(items, wrong(five, ["m1", "m2", "m3"], SHAPE, "oval"), PARAMS)
    assert hit.evidence["agree"] == 3 and hit.priority == 0.8
    strict = RuleParams(consensus_share=0.8)                # needed = 4
    assert model_consensus(items, wrong(five, ["m1", "m2", "m3"], SHAPE, "oval"), strict) == []
    assert len(model_consensus(items, wrong(five, ["m1", "m2", "m3", "m4"], SHAPE, "oval"), strict)) == 1


def test_consensus_min_models_and_abstentions_do_not_count():
    items = make_chain()
    answers = wrong(perfect(items), ["m1", "m2"], SHAPE, "oval")
    answers = setting(answers, "m3", SHAPE, outcome="abstained", value=None)
    [hit] = model_consensus(items, answers, PARAMS)          # n = 3 answered (m4 still answers)
    assert hit.evidence["answered"] == 3
    answers = setting(answers, "m4", SHAPE, outcome="unparseable", value=None)
    assert model_consensus(items, answers, PARAMS) == []     # n = 2 < consensus_min_models
    assert len(model_consensus(items, answers, RuleParams(consensus_min_models=2))) == 1


def test_consensus_tie_between_wrong_values_takes_smallest_repr():
    items = make_chain()
    answers = wrong(wrong(perfect(items), ["m1", "m2"], SHAPE, "oval"), ["m3", "m4"], SHAPE, "lobulated")
    [hit] = model_consensus(items, answers, PARAMS)
    assert hit.evidence["answer"] == "lobulated" and hit.models == ("m3", "m4")


def test_consensus_excludes_box_and_short_text_items():
    steps = STEPS + ((4, "impression", "short_text", "simple cyst"),)
    items = make_chain(steps=steps)
    answers = wrong(perfect(items), MODELS, GROUNDING, (0.0, 0.0, 5.0, 5.0))
    answers = wrong(answers, MODELS, 107, "abscess")
    assert model_consensus(items, answers, PARAMS) == []


def test_consensus_multi_choice_compares_as_sets_and_reports_lists():
    steps = ((3, "features", "multi_choice", ("smooth margin", "hypodense")),)
    items = make_chain(steps=steps)
    answers = [answer("m1", 101, ("hypodense", "smooth margin"), correct=True),
               answer("m2", 101, ("hypodense",)), answer("m3", 101, ("hypodense",)), answer("m4", 101, ("hypodense",))]
    [hit] = model_consensus(items, answers, PARAMS)
    assert hit.models == ("m2", "m3", "m4")
    assert hit.evidence == {"answer": ["hypodense"], "gold": ["hypodense", "smooth margin"], "agree": 3, "answered": 4}
    assert json.loads(json.dumps(hit.evidence)) == hit.evidence


# ------------------------------------------------------------------------------------- right_answer_wrong_evidence


def test_rawe_weak_grounding_positive():
    items = make_chain()
    answers = setting(perfect(items), "m2", GROUNDING, iou=0.3, correct=False)
    [hit] = right_answer_wrong_evidence(items, answers, PARAMS)
    assert (hit.item_id, hit.image_id, hit.models) == (DIAGNOSIS, 10, ("m2",))
    # m2's wrong box is also a wrong earlier step (stage 2 < 4)
    assert hit.evidence == {"models": {"m2": {"weak_grounding": [{"item": GROUNDING, "iou": 0.3}],
                                              "wrong_earlier": [GROUNDING]}}}
    assert hit.priority == round(0.55 + 0.35 * 1 / 4, 4) == 0.6375


@pytest.mark.parametrize(("iou", "expected"), [(0.4999, 1), (0.5, 0), (None, 1), (float("nan"), 1)])
def test_rawe_grounding_iou_boundary(iou, expected):
    items = make_chain()
    answers = setting(perfect(items), "m1", GROUNDING, iou=iou)   # still marked correct: only the IoU matters
    assert len(right_answer_wrong_evidence(items, answers, PARAMS)) == expected


def test_rawe_missing_or_abstained_box_is_weak():
    items = make_chain()
    answers = [a for a in perfect(items) if (a.model, a.item_id) != ("m1", GROUNDING)]
    answers = setting(answers, "m2", GROUNDING, outcome="abstained", value=None, iou=None)
    [hit] = right_answer_wrong_evidence(items, answers, PARAMS)
    assert hit.models == ("m1", "m2")
    assert hit.evidence["models"]["m1"] == {"weak_grounding": [{"item": GROUNDING, "iou": None}], "wrong_earlier": []}
    assert hit.evidence["models"]["m2"]["wrong_earlier"] == [GROUNDING]
    assert hit.priority == round(0.55 + 0.35 * 2 / 4, 4)


def test_rawe_wrong_earlier_steps_only_below_final_stage():
    items = make_chain()
    answers = setting(perfect(items), "m1", MALIGNANCY, value="malignant")   # stage 4 = final stage: not earlier
    assert right_answer_wrong_evidence(items, answers, PARAMS) == []
    answers = setting(answers, "m1", SHAPE, value="oval")
    answers = setting(answers, "m1", 101, outcome="abstained", value=None)
    [hit] = right_answer_wrong_evidence(items, answers, PARAMS)
    assert hit.evidence["models"]["m1"] == {"weak_grounding": [], "wrong_earlier": [101, SHAPE]}


def test_rawe_needs_correct_final_answer():
    items = make_chain()
    answers = setting(perfect(items), "m1", GROUNDING, iou=0.1)
    answers = setting(answers, "m1", DIAGNOSIS, value="abscess")
    assert right_answer_wrong_evidence(items, answers, PARAMS) == []


def test_rawe_missing_earlier_non_box_answer_is_not_wrong():
    items = make_chain()
    answers = [a for a in perfect(items) if (a.model, a.item_id) != ("m1", SHAPE)]
    assert right_answer_wrong_evidence(items, answers, PARAMS) == []


def test_rawe_priority_denominator_counts_every_model_with_a_clean_final_answer():
    items = make_chain()
    answers = setting(perfect(items), "m1", GROUNDING, iou=0.2)
    answers.append(answer("m5", DIAGNOSIS, outcome="abstained"))
    [hit] = right_answer_wrong_evidence(items, answers, PARAMS)
    assert hit.priority == round(0.55 + 0.35 * 1 / 5, 4)


def test_rawe_final_is_highest_stage_step_whatever_the_input_order():
    items = make_chain()
    answers = setting(perfect(items), "m1", SHAPE, value="oval")
    [hit] = right_answer_wrong_evidence(list(reversed(items)), answers, PARAMS)
    assert hit.item_id == DIAGNOSIS


# --------------------------------------------------------------------------------------------- chain_contradiction


def test_contradiction_model_level():
    items = make_chain()
    answers = setting(perfect(items), "m2", PRESENCE, value="no")
    [hit] = chain_contradiction(items, answers, PARAMS)
    assert (hit.item_id, hit.image_id, hit.models, hit.priority) == (DIAGNOSIS, 10, ("m2",), 0.7)
    assert hit.evidence == {"denials": {"m2": [PRESENCE]}, "asserted": {"m2": [SHAPE, MALIGNANCY, DIAGNOSIS]}}


def test_contradiction_needs_an_answered_late_item():
    items = make_chain()
    answers = setting(perfect(items), "m2", PRESENCE, value="no")
    for item_id in (SHAPE, MALIGNANCY, DIAGNOSIS):
        answers = setting(answers, "m2", item_id, outcome="abstained", value=None)
    assert chain_contradiction(items, answers, PARAMS) == []


def test_contradiction_denial_must_be_answered_no():
    items = make_chain()
    answers = setting(perfect(items), "m2", PRESENCE, outcome="unparseable", value="no")
    assert chain_contradiction(items, answers, PARAMS) == []


def test_neutral_late_categories_do_not_contradict():
    steps = ((1, "modality", "single_choice", "CT"), (2, "normal-vs-abnormal", "yes_no", "no"),
             (4, "next-step", "single_choice", "no follow-up"), (4, "report-verification", "yes_no", "yes"),
             (4, "rule-out-differential", "single_choice", "abscess"))
    items = make_chain(steps=steps)
    answers = setting(perfect(items), "m1", 102, value="no")
    assert {s[1] for s in steps[2:]} == NEUTRAL_LATE_CATEGORIES
    assert chain_contradiction(items, answers, PARAMS) == []


def test_denial_category_outside_stage_two_is_ignored():
    steps = ((1, "normal-vs-abnormal", "yes_no", "no"), (3, "shape", "single_choice", "round"))
    items = make_chain(steps=steps)
    assert "normal-vs-abnormal" in DENIAL_CATEGORIES
    assert chain_contradiction(items, perfect(items), PARAMS) == []


def test_contradiction_gold_level_and_both_levels():
    steps = list(STEPS)
    steps[1] = (2, "finding-presence", "yes_no", "no")
    items = make_chain(steps=steps)
    gold_only = chain_contradiction(items, perfect(items), PARAMS)   # models answered "no" too, but also
    assert len(gold_only) == 2                                        # the late items: both levels fire
    model_hit, gold_hit = sorted(gold_only, key=lambda h: h.priority)
    assert (gold_hit.item_id, gold_hit.models, gold_hit.priority) == (DIAGNOSIS, (), 0.95)
    assert gold_hit.evidence == {"denial_item": PRESENCE, "late_items": [SHAPE, MALIGNANCY, DIAGNOSIS]}
    assert model_hit.models == MODELS and model_hit.priority == 0.7
    answers = setting(perfect(items), "m1", PRESENCE, value="yes", correct=False)
    answers = [a for a in answers if a.model == "m1"]
    assert [h.priority for h in chain_contradiction(items, answers, PARAMS)] == [0.95]


# --------------------------------------------------------------------------------------------- adversarial_flip


def flip_run(robust, flipped, *, extra=()):
    """SHAPE answered correctly (clean) by everyone; robust models right on a misleading hint, flipped wrong."""
    items = make_chain()
    models = tuple(robust) + tuple(flipped) + tuple(extra)
    answers = perfect(items, models) + adversarial(robust, SHAPE) + adversarial(flipped, SHAPE, correct=False)
    return items, answers


def test_flip_positive_with_evidence_and_priority():
    items, answers = flip_run(["m1", "m2", "m3"], ["m4"])
    answers += [answer("m4", SHAPE, kind="image_ablation", outcome="abstained"),
                answer("m4", SHAPE, "round", kind="option_permutation", correct=True, variant_id=99001),
                answer("m4", SHAPE, kind="misleading_hint", variant_id=99002)]
    [hit] = adversarial_flip(items, answers, PARAMS)
    assert (hit.rule, hit.item_id, hit.models) == ("adversarial_flip", SHAPE, ("m4",))
    assert hit.evidence == {"flipped": {"m4": ["image_ablation", "misleading_hint"]}, "robust": ["m1", "m2", "m3"]}
    assert hit.priority == round(0.4 + 0.2 * 3 / 4, 4) == 0.55


@pytest.mark.parametrize(("n_robust", "n_flipped", "hits"), [(2, 1, 1), (3, 2, 0), (1, 1, 0), (0, 1, 0), (0, 2, 0)])
def test_flip_robust_share_boundary(n_robust, n_flipped, hits):
    robust = [f"r{i}" for i in range(n_robust)]
    flipped = [f"f{i}" for i in range(n_flipped)]
    assert len(adversarial_flip(*flip_run(robust, flipped), PARAMS)) == hits


def test_flip_at_two_thirds_priority():
    [hit] = adversarial_flip(*flip_run(["m1", "m2"], ["m3"]), PARAMS)
    assert hit.priority == round(0.4 + 0.2 * 2 / 3, 4) == 0.5333


def test_model_without_adversarial_answers_is_neither_robust_nor_flipped():
    [hit] = adversarial_flip(*flip_run(["m1", "m2"], ["m3"], extra=["m4"]), PARAMS)
    assert hit.evidence["robust"] == ["m1", "m2"] and "m4" not in hit.models
    assert adversarial_flip(*flip_run(["m1"], ["m3"], extra=["m2", "m4"]), PARAMS) == []


def test_flip_ignores_models_wrong_on_clean():
    items, answers = flip_run(["m1", "m2"], ["m3"])
    answers = setting(answers, "m3", SHAPE, value="oval")
    assert adversarial_flip(items, answers, PARAMS) == []     # m = 2 robust, no flipped


# --------------------------------------------------------------------------------------------- annotator_disagreement


def test_annotator_disagreement_priorities_and_image_level():
    conflicts = [AnnotatorConflict(7, 10, SHAPE, ("answer", "gold_answer")),
                 AnnotatorConflict(8, 10, None, ("box_unmatched",))]
    gold, image = annotator_disagreement(conflicts)
    assert (gold.item_id, gold.image_id, gold.priority, gold.models) == (SHAPE, 10, 0.8, ())
    assert gold.evidence == {"task": 7, "kinds": ["answer", "gold_answer"]}
    assert (image.item_id, image.priority, image.evidence) == (None, 0.65, {"task": 8, "kinds": ["box_unmatched"]})
    assert annotator_disagreement(conflicts + conflicts[:1]) == [gold, image]   # exact duplicate kept once


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
