"""score_prediction over every answer type and cue rule, table-driven; cue_adopted_by (the same rules, asked of
any answer: the clean one against an adversarial variant's cue); box_iou; normalize_text."""
from __future__ import annotations

import pytest

from workers.scoring import ItemScore, box_iou, normalize_text, score_prediction
from workers.scoring.item import cue_adopted_by

OPTS = ["liver", "Spleen", "kidney", "none"]
SC = {"value": "Spleen", "letter": "B"}
MC = {"value": ["liver", "kidney"], "letter": ["A", "C"]}
YN = {"value": "no", "letter": "B"}
GOLD_BOX = [10.0, 10.0, 30.0, 30.0]           # 20 x 20
BOX = {"value": GOLD_BOX, "letter": None}
TXT = {"value": "Ground-glass  opacity", "letter": None}
HALF = [10.0, 10.0, 30.0, 23.4]                # 20 x 13.4 inside gold: IoU 0.67
MISS = [40.0, 40.0, 60.0, 60.0]
WRONG_REGION = {"cue": "wrong_region", "box": [40, 40, 60, 60], "label": "liver"}
MISLABELED = {"cue": "mislabeled", "box": GOLD_BOX, "label": "KIDNEY"}          # stored before cue letters
MISLABELED_LETTER = {"cue": "mislabeled", "box": GOLD_BOX, "label": "kidney", "cue_letter": "C",
                     "property": "organ"}
REGION_LETTER = {"cue": "wrong_region", "box": [40, 40, 60, 60], "label": "nodule", "source": "organ",
                 "organ": "kidney", "cue_letter": "C"}
JOINT = {"value": "Spleen", "letter": "B", "answer_with_box": True, "evidence_box": GOLD_BOX}

CASES = [
    # id, answer_type, kind, expected, params, outcome, value, (correct, iou, cue_adopted)
    ("single right", "single_choice", "clean", SC, {}, "answered", "B", (True, None, None)),
    ("single wrong", "single_choice", "clean", SC, {}, "answered", "A", (False, None, None)),
    ("single lower-case", "single_choice", "clean", SC, {}, "answered", "b", (True, None, None)),
    ("single abstained", "single_choice", "clean", SC, {}, "abstained", None, (False, None, None)),
    ("single unparseable", "single_choice", "clean", SC, {}, "unparseable", None, (False, None, None)),
    ("single error", "single_choice", "clean", SC, {}, "error", None, (False, None, None)),
    ("single no letter stored", "single_choice", "clean", {"value": "Spleen", "letter": None}, {},
     "answered", "B", (True, None, None)),
    ("yes/no right", "yes_no", "negation", YN, {}, "answered", "B", (True, None, None)),
    ("yes/no wrong", "yes_no", "negation", YN, {}, "answered", "A", (False, None, None)),
    ("multi right", "multi_choice", "clean", MC, {}, "answered", ["A", "C"], (True, None, None)),
    ("multi unordered", "multi_choice", "clean", MC, {}, "answered", ["C", "A"], (True, None, None)),
    ("multi subset", "multi_choice", "clean", MC, {}, "answered", ["A"], (False, None, None)),
    ("multi superset", "multi_choice", "clean", MC, {}, "answered", ["A", "B", "C"], (False, None, None)),
    ("box hit", "box", "clean", BOX, {}, "answered", HALF, (True, 268 / 400, None)),
    ("box exact", "box", "clean", BOX, {}, "answered", GOLD_BOX, (True, 1.0, None)),
    ("box miss", "box", "clean", BOX, {}, "answered", MISS, (False, 0.0, None)),
    ("box just below", "box", "clean", BOX, {}, "answered", [10, 10, 30, 19.9], (False, 198 / 400, None)),
    ("box malformed", "box", "clean", BOX, {}, "answered", [1, 2, 3], (False, 0.0, None)),
    ("box abstained", "box", "clean", BOX, {}, "abstained", None, (False, 0.0, None)),
    ("text equal", "short_text", "clean", TXT, {}, "answered", "ground-glass opacity", (True, None, None)),
    ("text punctuation", "short_text", "clean", TXT, {}, "answered", " Ground-glass opacity. ", (True, None, None)),
    ("text other", "short_text", "clean", TXT, {}, "answered", "consolidation", (False, None, None)),
    ("text list gold", "short_text", "clean", {"value": ["mass", "tumour"]}, {}, "answered", "Tumour",
     (True, None, None)),
    # misleading hint: single letter and multi set
    ("hint adopted", "single_choice", "misleading_hint", SC, {"hinted_letter": "C"}, "answered", "C",
     (False, None, True)),
    ("hint resisted", "single_choice", "misleading_hint", SC, {"hinted_letter": "C"}, "answered", "B",
     (True, None, False)),
    ("hint not answered", "single_choice", "misleading_hint", SC, {"hinted_letter": "C"}, "abstained", None,
     (False, None, False)),
    ("multi hint adopted", "multi_choice", "misleading_hint", MC, {"hinted_letter": ["A", "B", "C"]},
     "answered", ["C", "B", "A"], (False, None, True)),
    ("multi hint partial", "multi_choice", "misleading_hint", MC, {"hinted_letter": ["A", "B", "C"]},
     "answered", ["A", "B"], (False, None, False)),
    ("correct hint has no cue", "single_choice", "correct_hint", SC, {"hinted_letter": "B"}, "answered", "B",
     (True, None, None)),
    # wrong visual cue, wrong region (box items)
    ("region adopted", "box", "wrong_visual_cue", BOX, WRONG_REGION, "answered", MISS, (False, 0.0, True)),
    ("region resisted", "box", "wrong_visual_cue", BOX, WRONG_REGION, "answered", GOLD_BOX, (True, 1.0, False)),
    ("region not answered", "box", "wrong_visual_cue", BOX, WRONG_REGION, "error", None, (False, 0.0, False)),
    ("region on choice item without a cue letter", "single_choice", "wrong_visual_cue", SC, WRONG_REGION,
     "answered", "A", (False, None, None)),
    ("region malformed cue box", "box", "wrong_visual_cue", BOX, {**WRONG_REGION, "box": [1, 2]}, "answered", MISS,
     (False, 0.0, None)),
    # wrong visual cue, wrong region on a choice item whose options name the organ the box lies on
    ("region letter adopted", "single_choice", "wrong_visual_cue", SC, REGION_LETTER, "answered", "C",
     (False, None, True)),
    ("region letter lower-case", "single_choice", "wrong_visual_cue", SC, REGION_LETTER, "answered", "c",
     (False, None, True)),
    ("region letter resisted", "single_choice", "wrong_visual_cue", SC, REGION_LETTER, "answered", "B",
     (True, None, False)),
    ("region letter other wrong", "single_choice", "wrong_visual_cue", SC, REGION_LETTER, "answered", "D",
     (False, None, False)),
    ("region letter abstained", "single_choice", "wrong_visual_cue", SC, REGION_LETTER, "abstained", None,
     (False, None, False)),
    ("region letter on box item", "box", "wrong_visual_cue", BOX, REGION_LETTER, "answered", MISS,
     (False, 0.0, True)),
    # wrong visual cue, mislabeled: the cue letter (the non-gold option drawn as the label)
    ("letter adopted", "single_choice", "wrong_visual_cue", SC, MISLABELED_LETTER, "answered", "C",
     (False, None, True)),
    ("letter resisted", "single_choice", "wrong_visual_cue", SC, MISLABELED_LETTER, "answered", "B",
     (True, None, False)),
    ("letter other wrong", "single_choice", "wrong_visual_cue", SC, MISLABELED_LETTER, "answered", "D",
     (False, None, False)),
    ("letter decides, not the label text", "single_choice", "wrong_visual_cue", SC,
     {**MISLABELED_LETTER, "label": "liver"}, "answered", "A", (False, None, False)),
    ("letter not answered", "single_choice", "wrong_visual_cue", SC, MISLABELED_LETTER, "error", None,
     (False, None, False)),
    ("letter multi among chosen", "multi_choice", "wrong_visual_cue", MC, MISLABELED_LETTER, "answered",
     ["A", "C", "D"], (False, None, True)),
    ("letter multi not chosen", "multi_choice", "wrong_visual_cue", MC, MISLABELED_LETTER, "answered",
     ["A", "B"], (False, None, False)),
    ("letter multi gold set", "multi_choice", "wrong_visual_cue", MC, {**MISLABELED_LETTER, "cue_letter": "D"},
     "answered", ["A", "C"], (True, None, False)),
    ("letter on box item", "box", "wrong_visual_cue", BOX, MISLABELED_LETTER, "answered", GOLD_BOX,
     (True, 1.0, None)),
    ("mislabeled without label or letter", "single_choice", "wrong_visual_cue", SC, {"cue": "mislabeled"},
     "answered", "C", (False, None, None)),
    ("unknown cue", "single_choice", "wrong_visual_cue", SC, {**MISLABELED_LETTER, "cue": "blurred"}, "answered",
     "C", (False, None, None)),
    # wrong visual cue, mislabeled, variants stored before cue letters: the label text, case-insensitively
    ("label adopted", "single_choice", "wrong_visual_cue", SC, MISLABELED, "answered", "C", (False, None, True)),
    ("label resisted", "single_choice", "wrong_visual_cue", SC, MISLABELED, "answered", "B", (True, None, False)),
    ("label multi adopted", "multi_choice", "wrong_visual_cue", MC, MISLABELED, "answered", ["B", "C"],
     (False, None, True)),
    ("label not answered", "single_choice", "wrong_visual_cue", SC, MISLABELED, "unparseable", None,
     (False, None, False)),
    ("label on box item", "box", "wrong_visual_cue", BOX, MISLABELED, "answered", GOLD_BOX, (True, 1.0, None)),
    # false premise: adopted = answered without picking the rejecting option
    ("premise accepted", "single_choice", "false_premise", {"value": "reject", "letter": "D"},
     {"rejecting_letter": "D"}, "answered", "A", (False, None, True)),
    ("premise rejected", "single_choice", "false_premise", {"value": "reject", "letter": "D"},
     {"rejecting_letter": "D"}, "answered", "D", (True, None, False)),
    ("premise abstained", "single_choice", "false_premise", {"value": "reject", "letter": "D"},
     {"rejecting_letter": "D"}, "abstained", None, (False, None, False)),
    # true premise (the control): adopted = a false rejection of a premise that holds
    ("true premise rejected", "single_choice", "true_premise", SC, {"rejecting_letter": "D"}, "answered", "D",
     (False, None, True)),
    ("true premise answered", "single_choice", "true_premise", SC, {"rejecting_letter": "D"}, "answered", "B",
     (True, None, False)),
    ("true premise unparseable", "single_choice", "true_premise", SC, {"rejecting_letter": "D"}, "unparseable",
     None, (False, None, False)),
    ("premise on box item", "box", "false_premise", BOX, {"rejecting_letter": "D"}, "answered", GOLD_BOX,
     (True, 1.0, None)),
    ("hint without letter", "single_choice", "misleading_hint", SC, {"hinted_option": "kidney"}, "answered", "C",
     (False, None, None)),
    # kinds without a decidable cue
    ("premise injection", "single_choice", "premise_injection", SC, {"injected_answer": "x"}, "answered", "A",
     (False, None, None)),
    ("correct cue", "box", "correct_visual_cue", BOX, {"box": GOLD_BOX}, "answered", GOLD_BOX, (True, 1.0, None)),
    ("dose", "box", "box_dose_response", BOX, {"box": MISS}, "abstained", None, (False, 0.0, None)),
    ("dose answered on the drawn box", "box", "box_dose_response", BOX, {"box": MISS, "target_iou": 0.3},
     "answered", MISS, (False, 0.0, None)),
    ("ablation", "yes_no", "image_ablation", YN, {"ablation": "blank"}, "answered", "A", (False, None, None)),
    ("permutation", "single_choice", "option_permutation", SC, {"rotation": 1}, "answered", "B",
     (True, None, None)),
]


@pytest.mark.parametrize("answer_type, kind, expected, params, outcome, value, want",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_score_prediction(answer_type, kind, expected, params, outcome, value, want):
    got = score_prediction(answer_type=answer_type, kind=kind, expected=expected, params=params, options=OPTS,
                           outcome=outcome, value=value)
    assert isinstance(got, ItemScore)
    assert got.correct is want[0]
    assert got.iou == (None if want[1] is None else pytest.approx(want[1]))
    assert got.cue_adopted is want[2]


# Joint answer + box items: the wrong region is judged by the box the model gave, whatever its choice.
JOINT_CASES = [
    # id, params, outcome, value, box, (correct, iou, cue_adopted)
    ("joint box on the cue", WRONG_REGION, "answered", "B", [41, 41, 61, 61], (True, 0.0, True)),
    ("joint box on the lesion", WRONG_REGION, "answered", "A", GOLD_BOX, (False, 1.0, False)),
    ("joint box at IoU 0.5 with the cue", WRONG_REGION, "answered", "B", [40, 40, 60, 50], (True, 0.0, True)),
    ("joint box just below IoU 0.5", WRONG_REGION, "answered", "B", [40, 40, 60, 49.9], (True, 0.0, False)),
    ("joint no box", WRONG_REGION, "answered", "B", None, (True, 0.0, False)),
    ("joint abstained letter, box on the cue", WRONG_REGION, "abstained", None, [40, 40, 60, 60], (False, 0.0, True)),
    ("joint error", WRONG_REGION, "error", None, None, (False, 0.0, False)),
    ("joint: the box decides, not a cue letter", {**WRONG_REGION, "cue_letter": "C"}, "answered", "C", GOLD_BOX,
     (False, 1.0, False)),
    ("joint malformed cue box", {**WRONG_REGION, "box": None}, "answered", "B", MISS, (True, 0.0, None)),
    ("joint mislabeled: the letter decides", MISLABELED_LETTER, "answered", "C", GOLD_BOX, (False, 1.0, True)),
]


@pytest.mark.parametrize("params, outcome, value, box, want", [c[1:] for c in JOINT_CASES],
                         ids=[c[0] for c in JOINT_CASES])
def test_score_prediction_joint_items(params, outcome, value, box, want):
    got = score_prediction(answer_type="single_choice", kind="wrong_visual_cue", expected=JOINT, params=params,
                           options=OPTS, outcome=outcome, value=value, box=box)
    assert (got.correct, got.iou, got.cue_adopted) == (want[0], pytest.approx(want[1]), want[2])


@pytest.mark.parametrize("answer_type, kind, expected, params, outcome, value, want",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_cue_adopted_by_is_the_rule_score_prediction_applies(answer_type, kind, expected, params, outcome, value,
                                                            want):
    assert cue_adopted_by(kind, answer_type, params, OPTS, outcome, value, expected=expected) is want[2]


@pytest.mark.parametrize("params, outcome, value, box, want", [c[1:] for c in JOINT_CASES],
                         ids=[c[0] for c in JOINT_CASES])
def test_cue_adopted_by_on_joint_items(params, outcome, value, box, want):
    assert cue_adopted_by("wrong_visual_cue", "single_choice", params, OPTS, outcome, value, box=box,
                          expected=JOINT) is want[2]
    # without the variant's expected answer the item is not known to ask for a box: the letter rule
    no_expected = cue_adopted_by("wrong_visual_cue", "single_choice", params, OPTS, outcome, value, box=box)
    assert no_expected is cue_adopted_by("wrong_visual_cue", "single_choice", params, OPTS, outcome, value,
                                         expected={"value": "Spleen", "letter": "B"})


CLEAN_ANSWERS = [
    # id, kind, answer_type, adversarial params, clean outcome, clean value, clean box, expected, want
    ("clean answer is the hinted wrong option", "misleading_hint", "single_choice", {"hinted_letter": "C"},
     "answered", "C", None, SC, True),
    ("clean answer is right", "misleading_hint", "single_choice", {"hinted_letter": "C"}, "answered", "B", None,
     SC, False),
    ("clean answer is the mislabel", "wrong_visual_cue", "single_choice", MISLABELED_LETTER, "answered", "C",
     None, SC, True),
    ("clean multi answer holds the mislabel", "wrong_visual_cue", "multi_choice", MISLABELED_LETTER, "answered",
     ["B", "C"], None, MC, True),
    ("clean answer is the organ under the moved box", "wrong_visual_cue", "single_choice", REGION_LETTER,
     "answered", "C", None, SC, True),
    ("clean box lies where the cue is drawn", "wrong_visual_cue", "box", WRONG_REGION, "answered",
     [40, 40, 60, 60], None, BOX, True),
    ("clean box on the lesion", "wrong_visual_cue", "box", WRONG_REGION, "answered", GOLD_BOX, None, BOX, False),
    ("clean joint box where the cue is drawn", "wrong_visual_cue", "single_choice", WRONG_REGION, "answered", "B",
     [40, 40, 60, 60], JOINT, True),
    ("clean joint box on the lesion", "wrong_visual_cue", "single_choice", WRONG_REGION, "answered", "B",
     GOLD_BOX, JOINT, False),
    ("clean abstained", "wrong_visual_cue", "single_choice", MISLABELED_LETTER, "abstained", None, None, SC, False),
    ("dose response has no cue", "box_dose_response", "box", {"box": MISS, "target_iou": 0.3}, "answered", MISS,
     None, BOX, None),
    ("correct cue has no cue to adopt", "correct_visual_cue", "box", {"box": GOLD_BOX}, "answered", GOLD_BOX,
     None, BOX, None),
    ("clean accepts the false premise", "false_premise", "single_choice", {"rejecting_letter": "D"}, "answered",
     "A", None, SC, True),
]


@pytest.mark.parametrize("kind, answer_type, params, outcome, value, box, expected, want",
                         [c[1:] for c in CLEAN_ANSWERS], ids=[c[0] for c in CLEAN_ANSWERS])
def test_cue_adopted_by_a_clean_answer_against_an_adversarial_cue(kind, answer_type, params, outcome, value, box,
                                                                  expected, want):
    assert cue_adopted_by(kind, answer_type, params, OPTS, outcome, value, box=box, expected=expected) is want


def test_score_prediction_rejects_unknown_types():
    with pytest.raises(ValueError):
        score_prediction(answer_type="essay", kind="clean", expected={}, params={}, options=[], outcome="answered",
                         value="x")
    with pytest.raises(ValueError):
        score_prediction(answer_type="box", kind="clean", expected={}, params={}, options=[], outcome="timeout",
                         value=None)


@pytest.mark.parametrize("a, b, want", [
    ([0, 0, 10, 10], [0, 0, 10, 10], 1.0),
    ([0, 0, 10, 10], [5, 0, 15, 10], 50 / 150),
    ([0, 0, 10, 10], [10, 0, 20, 10], 0.0),      # touching, x1 exclusive
    ([0, 0, 10, 10], [20, 20, 30, 30], 0.0),     # disjoint
    ([0, 0, 10, 10], [2, 2, 4, 4], 4 / 100),     # contained
    ([0, 0, 0, 10], [0, 0, 10, 10], 0.0),        # degenerate
    ([5, 5, 0, 0], [0, 0, 10, 10], 0.0),         # inverted
    ([0.5, 0.5, 2.5, 2.5], [1.5, 1.5, 3.5, 3.5], 1 / 7),
    (None, [0, 0, 1, 1], 0.0),
    ("0,0,1,1", [0, 0, 1, 1], 0.0),
])
def test_box_iou(a, b, want):
    assert box_iou(a, b) == pytest.approx(want)
    assert box_iou(b, a) == pytest.approx(want)


def test_normalize_text():
    assert normalize_text("  Ground-Glass \n Opacity?! ") == "ground-glass opacity"
    assert normalize_text("No.") == "no"
    assert normalize_text("3.5 cm") == "3.5 cm"


def test_the_vectorised_iou_is_box_iou_row_by_row():
    """The services decide box-based cue baselines with box_iou_array: it must equal box_iou exactly,
    degenerate, reversed, disjoint, non-finite and missing (nan) boxes included."""
    import numpy as np

    from workers.scoring.item import box_iou, box_iou_array

    rng = np.random.default_rng(0)
    a = rng.integers(-5, 40, size=(4000, 4)).astype(float)
    b = rng.integers(-5, 40, size=(4000, 4)).astype(float)
    a[::97] = np.nan
    b[5::89, 2] = np.inf
    b[7::50] = a[7::50]                   # identical boxes: IoU 1
    got = box_iou_array(a, b)
    want = [box_iou(None if np.isnan(x).any() else list(x), list(y)) for x, y in zip(a, b)]
    assert np.allclose(got, want, rtol=0, atol=1e-12)
