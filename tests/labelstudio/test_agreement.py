"""Inter-annotator agreement: IoU, one-to-one box matching, kappa/alpha against textbook values, task agreement."""
from __future__ import annotations

import json

import pytest

from labelstudio.agreement import (
    AnnotatorView,
    LabeledBox,
    PairAgreement,
    TaskAgreement,
    box_iou,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha_nominal,
    match_boxes,
    task_agreement,
)


def _box(label: str, x0, y0, x1, y1, kind: str = "lesion", **attributes) -> LabeledBox:
    return LabeledBox(label, (x0, y0, x1, y1), kind, attributes)


# --- box_iou ----------------------------------------------------------------------------------------------------

def test_box_iou():
    assert box_iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert box_iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(50 / 150)
    assert box_iou((0, 0, 10, 10), (2, 2, 4, 4)) == pytest.approx(4 / 100)
    assert box_iou((0, 0, 10, 10), (10, 0, 20, 10)) == 0.0          # touching edges
    assert box_iou((0, 0, 10, 10), (20, 20, 30, 30)) == 0.0
    assert box_iou((5, 5, 5, 5), (5, 5, 5, 5)) == 0.0                # zero area, no division by zero
    assert box_iou((0, 0, 0, 10), (0, 0, 10, 10)) == 0.0
    assert isinstance(box_iou((0, 0, 1, 1), (0, 0, 1, 1)), float)


# --- LabeledBox -------------------------------------------------------------------------------------------------

def test_labeled_box_is_hashable_and_normalised():
    a = LabeledBox("cyst", [1, 2, 3, 4], attributes={"margin": ["a", "b"]})
    b = LabeledBox("cyst", (1.0, 2.0, 3.0, 4.0))
    assert a.box == (1.0, 2.0, 3.0, 4.0) and a.kind == "lesion"
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    with pytest.raises(ValueError):
        LabeledBox("cyst", (1, 2, 3))


# --- match_boxes ------------------------------------------------------------------------------------------------

def test_match_boxes_one_to_one_and_greedy_by_iou():
    a = [_box("cyst", 0, 0, 10, 10), _box("cyst", 1, 0, 11, 10)]
    b = [_box("cyst", 1, 0, 11, 10)]
    # b[0] overlaps a[1] exactly (IoU 1) and a[0] with 90/110: the better pair wins, a[0] stays unmatched
    assert match_boxes(a, b) == [(1, 0, 1.0)]


def test_match_boxes_threshold_labels_and_kinds():
    a = [_box("cyst", 0, 0, 10, 10)]
    half = [_box("cyst", 5, 0, 15, 10)]                            # IoU 1/3
    assert match_boxes(a, half) == []
    assert match_boxes(a, half, iou_threshold=0.3) == [(0, 0, pytest.approx(1 / 3))]
    other = [_box("mass", 0, 0, 10, 10)]
    assert match_boxes(a, other) == []
    assert match_boxes(a, other, same_label=False) == [(0, 0, 1.0)]
    assert match_boxes(a, [_box("cyst", 0, 0, 10, 10, kind="anatomy")]) == []
    # threshold 0 never pairs boxes that do not overlap at all
    assert match_boxes(a, [_box("cyst", 20, 20, 30, 30)], iou_threshold=0.0) == []


def test_match_boxes_ties_are_broken_by_index():
    same = _box("cyst", 0, 0, 10, 10)
    assert match_boxes([same, same], [same, same]) == [(0, 0, 1.0), (1, 1, 1.0)]
    assert match_boxes([same], [same, same, same]) == [(0, 0, 1.0)]
    assert match_boxes([same, same, same], [same]) == [(0, 0, 1.0)]


def test_match_boxes_many_boxes_deterministic_and_one_to_one():
    a = [_box("cyst" if k % 3 else "mass", k * 7 % 40, k * 11 % 40, k * 7 % 40 + 12, k * 11 % 40 + 9)
         for k in range(25)]
    b = [_box("cyst" if k % 4 else "mass", k * 5 % 40, k * 13 % 40, k * 5 % 40 + 10, k * 13 % 40 + 11)
         for k in range(25)]
    matches = match_boxes(a, b, iou_threshold=0.2)
    assert matches
    assert matches == match_boxes(list(a), list(b), iou_threshold=0.2)
    assert len({i for i, _, _ in matches}) == len({j for _, j, _ in matches}) == len(matches)
    assert matches == sorted(matches)
    for i, j, iou in matches:
        assert iou >= 0.2 and a[i].label == b[j].label and iou == box_iou(a[i].box, b[j].box)
    assert match_boxes([], b) == match_boxes(a, []) == []


# --- Cohen's kappa ----------------------------------------------------------------------------------------------

def test_cohen_kappa_textbook():
    # 50 grant proposals: both yes 20, A yes/B no 5, A no/B yes 10, both no 15.
    # po = 35/50 = 0.7; A yes 25/50, B yes 30/50: pe = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7-0.5)/0.5 = 0.4
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_cohen_kappa_three_categories_by_hand():
    # pairs: (x,x) (x,y) (y,y) (z,z) (z,x) (y,y): po = 4/6
    # A: x2 y2 z2, B: x2 y3 z1 -> pe = (2*2 + 2*3 + 2*1) / 36 = 12/36 = 1/3
    # kappa = (2/3 - 1/3) / (2/3) = 0.5
    a = ["x", "x", "y", "z", "z", "y"]
    b = ["x", "y", "y", "z", "x", "y"]
    assert cohen_kappa(a, b) == pytest.approx(0.5)


def test_cohen_kappa_edge_cases():
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["a", "a"], ["a", "a"]) == 1.0                # pe == 1, po == 1
    assert cohen_kappa(["a", "b"], ["a", "b"]) == 1.0
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)
    assert cohen_kappa([1, 2, (3, 4)], [1, 2, (3, 4)]) == 1.0         # any hashables
    with pytest.raises(ValueError, match="equally long"):
        cohen_kappa(["a"], ["a", "b"])


# --- Fleiss' kappa ----------------------------------------------------------------------------------------------

# Wikipedia "Fleiss' kappa" worked example: 10 subjects, 14 raters, 5 categories; n_ij per row.
# P-bar = 0.378, P_e = 0.213, kappa = 0.210.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def _ratings_from_table(table: list[list[int]]) -> list[list[str]]:
    return [[f"c{j + 1}" for j, count in enumerate(row) for _ in range(count)] for row in table]


def test_fleiss_kappa_wikipedia_example():
    ratings = _ratings_from_table(FLEISS_TABLE)
    assert {len(r) for r in ratings} == {14}
    assert [sum(col) for col in zip(*FLEISS_TABLE, strict=True)] == [20, 28, 39, 21, 32]   # column totals as published
    assert fleiss_kappa(ratings) == pytest.approx(0.20993, abs=5e-5)
    assert round(fleiss_kappa(ratings), 3) == 0.210


def test_fleiss_kappa_rater_order_does_not_matter():
    ratings = _ratings_from_table(FLEISS_TABLE)
    assert fleiss_kappa([list(reversed(r)) for r in ratings]) == pytest.approx(fleiss_kappa(ratings))


def test_fleiss_kappa_two_raters_by_hand():
    # subjects (a,a) (a,b) (b,b) (b,b): P_i = 1, 0, 1, 1 -> P-bar = 0.75
    # p_a = 3/8, p_b = 5/8 -> P_e = 9/64 + 25/64 = 34/64; kappa = (48/64 - 34/64) / (30/64) = 14/30
    assert fleiss_kappa([["a", "a"], ["a", "b"], ["b", "b"], ["b", "b"]]) == pytest.approx(14 / 30)


def test_fleiss_kappa_edge_cases():
    assert fleiss_kappa([]) is None
    assert fleiss_kappa([["a", "a", "a"], ["a", "a", "a"]]) == 1.0
    with pytest.raises(ValueError, match="same number of raters"):
        fleiss_kappa([["a", "b"], ["a", "b", "c"]])
    with pytest.raises(ValueError, match="at least 2 raters"):
        fleiss_kappa([["a"], ["b"]])


# --- Krippendorff's alpha ---------------------------------------------------------------------------------------

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers, 12 units, nominal,
# "." = missing.  alpha_nominal = 0.743.  Unit 12 has a single value and is not pairable.
_ = None
KRIPPENDORFF_OBSERVERS = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],    # A
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],    # B
    [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],    # C
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],    # D
]


def test_krippendorff_alpha_published_example():
    units = [list(unit) for unit in zip(*KRIPPENDORFF_OBSERVERS, strict=True)]
    alpha = krippendorff_alpha_nominal(units)
    assert round(alpha, 3) == 0.743
    # exact value: n = 40 pairable values, Do = 10/3 / 40, alpha = 1 - (n-1) * sum(o_ck, c!=k) / sum(n_c n_k, c!=k)
    assert alpha == pytest.approx(0.743421, abs=1e-6)


def test_krippendorff_alpha_by_hand():
    # units (a,a) (a,b) (b,b): o_aa = 2, o_ab = o_ba = 1, o_bb = 2; n_a = n_b = 3, n = 6
    # Do = 2/6, De = (36 - 9 - 9) / (6*5) = 0.6; alpha = 1 - (1/3)/0.6 = 4/9
    assert krippendorff_alpha_nominal([["a", "a"], ["a", "b"], ["b", "b"]]) == pytest.approx(4 / 9)
    # missing values and unpairable units change nothing
    assert krippendorff_alpha_nominal([["a", "a", None], [None, "a", "b"], ["b", "b"], ["c"], [None, None]]) \
        == pytest.approx(4 / 9)


def test_krippendorff_alpha_edge_cases():
    assert krippendorff_alpha_nominal([]) is None
    assert krippendorff_alpha_nominal([["a"], ["b", None], [None]]) is None
    assert krippendorff_alpha_nominal([["a", "a"], ["a", "a", "a"]]) == 1.0      # De == 0, Do == 0
    assert krippendorff_alpha_nominal([["a", "b"], ["b", "a"]]) < 0


def test_krippendorff_alpha_and_scott_pi_for_two_coders_without_missing():
    # two coders, no missing values, n = 2N values: Do = 1 - po and De = n/(n-1) * (1 - pe) with Scott's pe,
    # so alpha = 1 - (n-1)/n * (1 - pi), where pi is Scott's pi
    a = ["x", "x", "y", "z", "z", "y"]
    b = ["x", "y", "y", "z", "x", "y"]
    n = 2 * len(a)
    po = sum(p == q for p, q in zip(a, b, strict=True)) / len(a)
    counts = {c: (a + b).count(c) / n for c in set(a + b)}
    pe = sum(p * p for p in counts.values())
    pi = (po - pe) / (1 - pe)
    alpha = krippendorff_alpha_nominal(list(zip(a, b, strict=True)))
    assert alpha == pytest.approx(1 - (n - 1) / n * (1 - pi))


# --- task_agreement ---------------------------------------------------------------------------------------------

def test_fewer_than_two_views():
    for views in ([], [AnnotatorView("ann1", (_box("cyst", 0, 0, 10, 10),), ("A",))]):
        result = task_agreement(views)
        assert result == TaskAgreement(n_annotators=len(views))
        assert (result.box_f1, result.mean_iou, result.kappa, result.percent_agreement) == (None, None, None, None)
        assert result.pairs == () and result.disagreements == () and not result.has_disagreement
        assert result.as_dict()["pairs"] == []


def test_two_annotators_in_full_agreement():
    boxes = (_box("cyst", 0, 0, 10, 10, shape="round"), _box("liver", 0, 0, 100, 100, kind="anatomy"))
    result = task_agreement([AnnotatorView("ann1", boxes, ("B",)), AnnotatorView("ann2", boxes[::-1], ("B",))])
    assert not result.has_disagreement
    (pair,) = result.pairs
    assert pair == PairAgreement("ann1", "ann2", ((0, 1, 1.0), (1, 0, 1.0)), (), (), 1.0, 1.0, 2, 2)
    assert (result.box_f1, result.mean_iou, result.percent_agreement) == (1.0, 1.0, 1.0)
    assert result.kappa == 1.0           # answer "B" + shape "round": two categories, all agree


def test_both_empty_is_full_box_agreement():
    result = task_agreement([AnnotatorView("a"), AnnotatorView("b")])
    assert result.box_f1 == 1.0 and result.mean_iou is None
    assert result.kappa is None and result.percent_agreement is None
    assert not result.has_disagreement


def test_two_annotators_every_disagreement_kind():
    a = AnnotatorView("ann1", (
        _box("cyst", 0, 0, 10, 10, shape="round", margin="smooth"),     # matched with b[0]; shape differs
        _box("cyst", 50, 50, 60, 60),                                   # same place as b[1] but labelled "mass"
        _box("cyst", 200, 200, 210, 210),                               # only ann1 drew it
    ), ("B. Cyst",))
    b = AnnotatorView("ann2", (
        _box("cyst", 0, 0, 10, 11, shape="oval", margin="smooth", extra=["p", "q"]),
        _box("mass", 50, 50, 60, 61),
        _box("calcification", 300, 300, 305, 305),                      # only ann2 drew it
    ), ("C. Abscess",))
    result = task_agreement([a, b])
    (pair,) = result.pairs
    assert pair.matched == ((0, 0, pytest.approx(100 / 110)),)
    assert (pair.unmatched_a, pair.unmatched_b) == ((1, 2), (1, 2))
    assert pair.box_f1 == pytest.approx(2 / 6)
    # judgments: answer (B vs C), extra (∅ vs p|q), margin (agree), shape (round vs oval)
    assert (pair.n_judgments, pair.n_agree) == (4, 1)
    assert result.percent_agreement == pytest.approx(0.25)
    assert result.kappa == cohen_kappa(["B. Cyst", "∅", "smooth", "round"], ["C. Abscess", "p|q", "smooth", "oval"])
    assert result.has_disagreement
    assert list(result.disagreements) == [
        {"kind": "answer", "annotators": ["ann1", "ann2"], "answers": [["B. Cyst"], ["C. Abscess"]]},
        {"kind": "box_label", "annotators": ["ann1", "ann2"], "labels": ["cyst", "mass"],
         "iou": round(100 / 110, 4), "boxes": [[50.0, 50.0, 60.0, 60.0], [50.0, 50.0, 60.0, 61.0]]},
        {"kind": "attribute", "annotators": ["ann1", "ann2"], "label": "cyst", "attribute": "extra",
         "values": ["∅", "p|q"], "boxes": [[0.0, 0.0, 10.0, 10.0], [0.0, 0.0, 10.0, 11.0]]},
        {"kind": "attribute", "annotators": ["ann1", "ann2"], "label": "cyst", "attribute": "shape",
         "values": ["round", "oval"], "boxes": [[0.0, 0.0, 10.0, 10.0], [0.0, 0.0, 10.0, 11.0]]},
        {"kind": "box_unmatched", "annotators": ["ann1", "ann2"], "annotator": "ann1", "label": "cyst",
         "box": [200.0, 200.0, 210.0, 210.0]},
        {"kind": "box_unmatched", "annotators": ["ann1", "ann2"], "annotator": "ann2", "label": "calcification",
         "box": [300.0, 300.0, 305.0, 305.0]},
    ]


def test_answer_given_by_one_annotator_only():
    result = task_agreement([AnnotatorView("a", answer=("A",)), AnnotatorView("b")])
    assert result.kappa is None and result.pairs[0].n_judgments == 0
    assert result.disagreements == ({"kind": "answer", "annotators": ["a", "b"], "answers": [["A"], None]},)


def test_multi_choice_answers_compare_as_sets():
    result = task_agreement([AnnotatorView("a", answer=("B", "A")), AnnotatorView("b", answer=("A", "B"))])
    assert not result.has_disagreement and result.percent_agreement == 1.0


def test_three_annotators():
    cyst = _box("cyst", 0, 0, 10, 10, shape="round")
    views = [
        AnnotatorView("ann1", (cyst,), ("A",)),
        AnnotatorView("ann2", (_box("cyst", 0, 0, 10, 10, shape="oval"),), ("A",)),
        AnnotatorView("ann3", (), ("B",)),
    ]
    result = task_agreement(views)
    assert result.n_annotators == 3
    assert [(p.annotator_a, p.annotator_b) for p in result.pairs] == [("ann1", "ann2"), ("ann1", "ann3"),
                                                                      ("ann2", "ann3")]
    assert [p.box_f1 for p in result.pairs] == [1.0, 0.0, 0.0]
    assert result.box_f1 == pytest.approx(1 / 3)
    assert result.mean_iou == 1.0
    # pooled judgments: (A,A) (round,oval) | (A,B) | (A,B) -> 1 of 4 agree
    assert result.percent_agreement == pytest.approx(0.25)
    assert result.kappa == pytest.approx(cohen_kappa(["A", "round", "A", "A"], ["A", "oval", "B", "B"]))
    summary = [(d["kind"], tuple(d["annotators"])) for d in result.disagreements]
    assert summary == [
        ("attribute", ("ann1", "ann2")),
        ("answer", ("ann1", "ann3")),
        ("box_unmatched", ("ann1", "ann3")),
        ("answer", ("ann2", "ann3")),
        ("box_unmatched", ("ann2", "ann3")),
    ]
    assert result.disagreements[2]["annotator"] == "ann1"
    assert result.disagreements[4]["annotator"] == "ann2"


def test_iou_threshold_is_passed_through():
    a = AnnotatorView("a", (_box("cyst", 0, 0, 10, 10),))
    b = AnnotatorView("b", (_box("cyst", 4, 0, 14, 10),))                 # IoU 60/140 = 0.43
    assert task_agreement([a, b]).box_f1 == 0.0
    loose = task_agreement([a, b], iou_threshold=0.4)
    assert loose.box_f1 == 1.0 and loose.mean_iou == pytest.approx(60 / 140)


def test_as_dict_is_plain_json_and_rounded():
    a = AnnotatorView("a", (_box("cyst", 0, 0, 10, 10, margin=["x", "y"]), _box("mass", 20, 20, 30, 30)), ("A",))
    b = AnnotatorView("b", (_box("cyst", 0, 0, 10, 11, margin="x"),), ("B",))
    result = task_agreement([a, b])
    data = result.as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["mean_iou"] == round(100 / 110, 4) == data["pairs"][0]["matched"][0][2]
    assert data["has_disagreement"] is True
    assert data["pairs"][0] == {
        "annotator_a": "a", "annotator_b": "b", "matched": [[0, 0, 0.9091]], "unmatched_a": [1], "unmatched_b": [],
        "box_f1": 0.6667, "mean_iou": 0.9091, "n_judgments": 2, "n_agree": 0,
    }
    assert [d["kind"] for d in data["disagreements"]] == ["answer", "attribute", "box_unmatched"]
    assert data["disagreements"][1]["values"] == ["x|y", "x"]
    assert set(data) == {"n_annotators", "box_f1", "mean_iou", "percent_agreement", "kappa", "has_disagreement",
                         "pairs", "disagreements"}


def test_task_agreement_is_deterministic():
    views = [
        AnnotatorView(f"ann{k}", tuple(_box("cyst" if (k + m) % 2 else "mass", m * 10, k, m * 10 + 9, k + 9,
                                            shape=str(m % 2)) for m in range(6)), (str(k % 2),))
        for k in range(4)
    ]
    assert task_agreement(views) == task_agreement(list(views))
    assert task_agreement(views).as_dict() == task_agreement(views).as_dict()
    assert len(task_agreement(views).pairs) == 6
