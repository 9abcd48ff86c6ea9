"""Adjudication rules, one by one: positives, threshold boundaries, negatives, evidence, priorities.

No database: SECRET_KEY=x python -m pytest tests/adjudication -p no:warnings -p no:cacheprovider
"""
from __future__ import annotations

import json

import pytest

from adjudication.rules import (
    DENIAL_CATEGORIES,
    NEUTRAL_LATE_CATEGORIES,
    AnnotatorConflict,
    RuleParams,
    adversarial_flip,
    annotator_disagreement,
    chain_contradiction,
    model_consensus,
    right_answer_wrong_evidence,
)
from tests.adjudication.rule_factories import (
    DIAGNOSIS,
    GROUNDING,
    MALIGNANCY,
    MODELS,
    PARAMS,
    PRESENCE,
    SHAPE,
    STEPS,
    adversarial,
    answer,
    make_chain,
    perfect,
    setting,
    wrong,
)

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
