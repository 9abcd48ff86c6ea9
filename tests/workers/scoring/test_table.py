"""PredictionTable construction and cell_table against hand counts (layout in hand_table.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.workers.scoring.hand_table import COLUMNS, hand_table
from workers.scoring.metrics import PredictionTable, cell_table
from workers.scoring.stats import wilson_interval

approx = pytest.approx


def test_from_rows_types_and_missing_values():
    t = hand_table()
    assert len(t) == 35  # 12 + 12 clean + 11 adversarial
    assert t.endpoint.dtype == np.int64 and t.correct.dtype == bool
    assert t.kind.dtype.kind == "U" and t.iou.dtype == float
    assert np.isnan(t.iou[t.answer_type != "box"]).all()
    assert set(np.unique(t.cue_adopted[~np.isnan(t.cue_adopted)])) == {0.0, 1.0}


def test_from_rows_optional_and_bad_columns():
    cols = ("endpoint", "variant", "item", "chain", "stage", "step", "kind", "answer_type", "outcome", "correct")
    t = PredictionTable.from_rows([(1, 2, 3, 4, 1, 1, "clean", "yes_no", "answered", True)], cols)
    assert t.category.tolist() == [""] and math.isnan(t.iou[0]) and math.isnan(t.cue_adopted[0])
    with pytest.raises(ValueError):
        PredictionTable.from_rows([], cols[:-1])
    with pytest.raises(ValueError):
        PredictionTable.from_rows([], (*COLUMNS, "bogus"))
    with pytest.raises(ValueError):
        PredictionTable.from_rows([(1, 2)], cols)


def test_constructor_coerces_object_arrays_and_checks_lengths():
    obj = np.array(["clean", None], dtype=object)
    t = PredictionTable(endpoint=[1, 1], variant=[1, 2], item=[1, 2], chain=[1, 1], stage=[1, 2], step=[1, 2],
                        category=obj, modality=obj, kind=np.array(["clean", "clean"], dtype=object),
                        answer_type=["box", "yes_no"], outcome=["answered", "error"], correct=[1, 0],
                        iou=[0.5, None], cue_adopted=[None, None])
    assert t.category.tolist() == ["clean", ""] and t.kind.dtype.kind == "U"
    assert t.iou[0] == 0.5 and math.isnan(t.iou[1])
    with pytest.raises(ValueError):
        PredictionTable(endpoint=[1], variant=[1, 2], item=[1, 2], chain=[1, 1], stage=[1, 2], step=[1, 2],
                        category=obj, modality=obj, kind=obj, answer_type=obj, outcome=obj, correct=[1, 0],
                        iou=[0, 0], cue_adopted=[0, 0])


def check_cell(cell, n, k, abstained=0, unparseable=0, errors=0, mean_iou=None, iou_n=0):
    lo, hi = wilson_interval(k, n)
    assert cell["n"] == n and cell["correct"] == k
    assert cell["accuracy"] == approx(k / n)
    assert (cell["acc_lo"], cell["acc_hi"]) == (approx(lo), approx(hi))
    assert (cell["abstained"], cell["unparseable"], cell["errors"]) == (abstained, unparseable, errors)
    assert cell["abstention_rate"] == approx(abstained / n)
    assert cell["unparseable_rate"] == approx(unparseable / n)
    assert cell["error_rate"] == approx(errors / n)
    assert cell["iou_n"] == iou_n
    assert cell["mean_iou"] == (None if mean_iou is None else approx(mean_iou))


def test_cell_table_by_endpoint_and_kind():
    cells = cell_table(hand_table(), ["endpoint", "kind"])
    keys = [(c["endpoint"], c["kind"]) for c in cells]
    assert keys == [(1, "clean"), (1, "correct_hint"), (1, "image_ablation"), (1, "misleading_hint"),
                    (1, "wrong_visual_cue"), (2, "clean")]
    assert all(type(c["endpoint"]) is int and type(c["kind"]) is str for c in cells)
    check_cell(cells[0], 12, 8, abstained=1, mean_iou=(0.8 + 0.3 + 0.6) / 3, iou_n=3)
    check_cell(cells[1], 3, 3)
    check_cell(cells[2], 4, 1, unparseable=1, errors=1)  # 103 F, 103 F (unparseable), 203 T, 999 F (error)
    check_cell(cells[3], 3, 2)
    check_cell(cells[4], 1, 0, mean_iou=0.1, iou_n=1)
    check_cell(cells[5], 12, 10, abstained=1, mean_iou=(0.7 + 0.9 + 0.0) / 3, iou_n=3)


def test_cell_table_by_answer_type_and_all():
    cells = cell_table(hand_table(), ("answer_type",))
    assert [c["answer_type"] for c in cells] == ["box", "single_choice"]
    # box rows: endpoint 1 clean T F T + wrong_visual_cue F, endpoint 2 clean T T F -> 4 / 7
    check_cell(cells[0], 7, 4, abstained=1, mean_iou=(0.8 + 0.3 + 0.6 + 0.1 + 0.7 + 0.9 + 0.0) / 7, iou_n=7)
    # all correct: endpoint 1 8 + 3 + 1 + 2 + 0 = 14, endpoint 2 10 -> 24; minus 4 box -> 20 / 28
    check_cell(cells[1], 28, 20, abstained=1, unparseable=1, errors=1)
    (total,) = cell_table(hand_table(), [])
    check_cell(total, 35, 24, abstained=2, unparseable=1, errors=1, mean_iou=3.4 / 7, iou_n=7)


def test_cell_table_stage_modality_order():
    t = hand_table()
    cells = cell_table(t.take(t.kind == "clean"), ["modality", "stage"])
    assert [(c["modality"], c["stage"]) for c in cells] == [(m, s) for m in ("CT", "MR") for s in (1, 2, 3, 4)]
    # MR = chain 30: stage 1 endpoint 1 F (abstained), endpoint 2 T
    check_cell(cells[4], 2, 1, abstained=1)
    # CT stage 3: chains 10, 20: endpoint 1 T T, endpoint 2 F T
    check_cell(cells[2], 4, 3)


def test_cell_table_rejects_unknown_columns_and_empty():
    with pytest.raises(ValueError):
        cell_table(hand_table(), ["chain"])
    t = hand_table()
    assert cell_table(t.take(t.endpoint == 99), ["endpoint"]) == []
