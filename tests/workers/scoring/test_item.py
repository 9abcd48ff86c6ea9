"""score_prediction over every answer type and cue rule, table-driven; box_iou; normalize_text."""
from __future__ import annotations

import pytest

from workers.scoring import ItemScore, box_iou, normalize_text, score_prediction

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
MISLABELED = {"cue": "mislabeled", "box": GOLD_BOX, "label": "KIDNEY"}

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
    ("region on choice item", "single_choice", "wrong_visual_cue", SC, WRONG_REGION, "answered", "A",
     (False, None, None)),
    # wrong visual cue, mislabeled (choice items; label compared case-insensitively)
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
    # kinds without a decidable cue
    ("premise injection", "single_choice", "premise_injection", SC, {"injected_answer": "x"}, "answered", "A",
     (False, None, None)),
    ("correct cue", "box", "correct_visual_cue", BOX, {"box": GOLD_BOX}, "answered", GOLD_BOX, (True, 1.0, None)),
    ("dose", "box", "box_dose_response", BOX, {"box": MISS}, "abstained", None, (False, 0.0, None)),
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
