"""PredictionTable construction and cell_table against hand counts (layout in hand_table.py)."""
from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pytest

from tests.workers.scoring.hand_table import CLUSTERS, COLUMNS, hand_rows, hand_table, reference_interval
from workers.scoring.metrics import PredictionTable, cell_table, model_metrics
from workers.scoring.table import OPTIONAL_COLUMNS, factorize

approx = pytest.approx


def test_from_rows_types_and_missing_values():
    t = hand_table()
    assert len(t) == 35  # 12 + 12 clean + 11 adversarial
    assert t.endpoint.dtype == np.int64 and t.correct.dtype == bool
    assert t.kind.dtype.kind == "U" and t.iou.dtype == float
    assert np.isnan(t.iou[t.answer_type != "box"]).all()
    assert set(np.unique(t.cue_adopted[~np.isnan(t.cue_adopted)])) == {0.0, 1.0}
    # the optional columns: cluster = chain, n_options 0, keys and subkind "", cue_clean and level nan
    assert (t.cluster == t.chain).all() and (t.n_options == 0).all()
    assert set(t.answer) == set(t.cue) == set(t.subkind) == set(t.family) == {""}
    assert np.isnan(t.cue_clean).all() and np.isnan(t.level).all()


def test_from_rows_reads_every_optional_column():
    cols = [f.name for f in fields(PredictionTable) if f.init]
    assert set(OPTIONAL_COLUMNS) <= set(cols)
    rows = [(1, 2, 3, 4, 1, 1, "c", "CT", "wrong_visual_cue", "single_choice", "answered", True, None, 1.0, "test",
             77, 4, "B", "C", 0.0, None, "mislabeled", "letter"),
            (1, 3, 3, 4, 2, 1, None, "CT", "box_dose_response", "box", "answered", False, 0.4, None, None,
             77, 0, None, None, None, 0.5, "0.5", "box")]
    t = PredictionTable.from_rows(rows, cols)
    assert t.cluster.tolist() == [77, 77] and t.n_options.tolist() == [4, 0]
    assert t.answer.tolist() == ["B", ""] and t.cue.tolist() == ["C", ""] and t.category.tolist() == ["c", ""]
    assert t.cue_clean[0] == 0.0 and math.isnan(t.cue_clean[1]) and t.level[1] == 0.5 and math.isnan(t.level[0])
    assert t.subkind.tolist() == ["mislabeled", "0.5"] and t.family.tolist() == ["letter", "box"]
    # the string columns come with their codes; take() hands them on
    uniq, inv = t.codes("kind")
    assert uniq.tolist() == ["box_dose_response", "wrong_visual_cue"] and inv.tolist() == [1, 0]
    sub = t.take(np.array([1]))
    assert sub.codes("kind")[0][sub.codes("kind")[1]].tolist() == ["box_dose_response"]
    assert sub.take(slice(0, 1)).kind.tolist() == ["box_dose_response"]


def test_string_cluster_ids_become_codes():
    cols = ("endpoint", "variant", "item", "chain", "stage", "step", "kind", "answer_type", "outcome", "correct",
            "cluster")
    rows = [(1, v, v, v, 1, 1, "clean", "yes_no", "answered", True, c)
            for v, c in enumerate(["p2", "image:7", "p2", "p10"])]
    t = PredictionTable.from_rows(iter(rows), cols)
    assert t.cluster.dtype == np.int64 and t.cluster.tolist() == [2, 0, 2, 1]   # image:7 < p10 < p2
    direct = PredictionTable(**{f.name: getattr(t, f.name) for f in fields(PredictionTable) if f.init
                                and f.name != "cluster"}, cluster=np.array(["p2", "image:7", "p2", "p10"]))
    assert direct.cluster.tolist() == [2, 0, 2, 1]


def test_from_rows_optional_and_bad_columns():
    cols = ("endpoint", "variant", "item", "chain", "stage", "step", "kind", "answer_type", "outcome", "correct")
    t = PredictionTable.from_rows([(1, 2, 3, 4, 1, 1, "clean", "yes_no", "answered", True)], cols)
    assert t.category.tolist() == [""] and math.isnan(t.iou[0]) and math.isnan(t.cue_adopted[0])
    assert t.cluster.tolist() == [4]
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
                        iou=[0.5, None], cue_adopted=[None, None], answer=obj)
    assert t.category.tolist() == ["clean", ""] and t.kind.dtype.kind == "U" and t.answer.tolist() == ["clean", ""]
    assert t.iou[0] == 0.5 and math.isnan(t.iou[1])
    with pytest.raises(ValueError):
        PredictionTable(endpoint=[1], variant=[1, 2], item=[1, 2], chain=[1, 1], stage=[1, 2], step=[1, 2],
                        category=obj, modality=obj, kind=obj, answer_type=obj, outcome=obj, correct=[1, 0],
                        iou=[0, 0], cue_adopted=[0, 0])


def test_codes_follow_a_replaced_column():
    t = hand_table()
    assert t.codes("split")[0].tolist() == [""]
    t.split = np.where(t.chain == 10, "test", "train")
    assert t.codes("split")[0].tolist() == ["test", "train"]


@pytest.mark.parametrize("values", [
    np.array(["b", "a", "", "ccc", "a", "b"]), np.array(["x"] * 5), np.array([f"k{i % 50}" for i in range(500)]),
    np.array([5, 3, 5, 0, 2**40]), np.array([7, 7, 1]), np.array([-3, 4, -3]),
])
def test_factorize_matches_unique(values):
    uniq, inv = factorize(values)
    ref_u, ref_i = np.unique(values, return_inverse=True)
    assert uniq.tolist() == ref_u.tolist() and inv.tolist() == ref_i.ravel().tolist()


def check_cell(cell, n, k, abstained=0, unparseable=0, errors=0, mean_iou=None, iou_n=0, per_cluster=None,
               clusters=None, answered=None):
    assert cell["n"] == n and cell["correct"] == k
    assert cell["accuracy"] == approx(k / n)
    if per_cluster is not None:
        lo, hi = reference_interval(per_cluster, clusters)
        assert (cell["acc_lo"], cell["acc_hi"]) == (approx(lo), approx(hi))
    assert (cell["abstained"], cell["unparseable"], cell["errors"]) == (abstained, unparseable, errors)
    answered = n - abstained - unparseable - errors if answered is None else answered
    assert cell["answered"] == answered
    assert cell["answered_accuracy"] == (approx(k / answered) if answered else None)
    assert cell["chance"] == 0.0   # no n_options in the hand table
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
    # per endpoint: its own clusters (endpoint 1: chains 10, 20, 30, 40)
    check_cell(cells[0], 12, 8, abstained=1, mean_iou=(0.8 + 0.3 + 0.6) / 3, iou_n=3,
               per_cluster={10: (4, 4), 20: (3, 4), 30: (1, 4)}, clusters=CLUSTERS[1])
    check_cell(cells[1], 3, 3, per_cluster={10: (2, 2), 20: (1, 1)}, clusters=CLUSTERS[1])  # Wilson(2, 2)
    # 103 F, 103 F (unparseable), 203 T, 999 F (error)
    check_cell(cells[2], 4, 1, unparseable=1, errors=1, per_cluster={10: (0, 2), 20: (1, 1), 40: (0, 1)},
               clusters=CLUSTERS[1])
    check_cell(cells[3], 3, 2, per_cluster={10: (0, 1), 20: (1, 1), 30: (1, 1)}, clusters=CLUSTERS[1])
    check_cell(cells[4], 1, 0, mean_iou=0.1, iou_n=1)
    assert cells[4]["acc_lo"] is None and cells[4]["acc_hi"] is None     # one cluster
    check_cell(cells[5], 12, 10, abstained=1, mean_iou=(0.7 + 0.9 + 0.0) / 3, iou_n=3,
               per_cluster={10: (3, 4), 20: (4, 4), 30: (3, 4)}, clusters=CLUSTERS[2])


def test_cell_intervals_match_model_metrics():
    t = hand_table()
    m = model_metrics(t)
    for cell in cell_table(t, ["endpoint", "kind"]):
        if cell["kind"] == "clean":
            acc = m[cell["endpoint"]]["step_accuracy"]
            assert (cell["acc_lo"], cell["acc_hi"]) == (acc["lo"], acc["hi"])


def test_cell_table_by_answer_type_and_all():
    cells = cell_table(hand_table(), ("answer_type",))
    assert [c["answer_type"] for c in cells] == ["box", "single_choice"]
    # box rows: endpoint 1 clean T F T + wrong_visual_cue F, endpoint 2 clean T T F -> 4 / 7, over all chains
    every = (10, 20, 30, 40)
    check_cell(cells[0], 7, 4, abstained=1, mean_iou=(0.8 + 0.3 + 0.6 + 0.1 + 0.7 + 0.9 + 0.0) / 7, iou_n=7,
               per_cluster={10: (2, 3), 20: (1, 2), 30: (1, 2)}, clusters=every)
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
    assert cells[4]["acc_lo"] is None   # one cluster (chain 30)
    # CT stage 3: chains 10, 20: endpoint 1 T T, endpoint 2 F T
    check_cell(cells[2], 4, 3, per_cluster={10: (1, 2), 20: (2, 2)}, clusters=(10, 20, 30))


def test_cell_table_rejects_unknown_columns_and_empty():
    with pytest.raises(ValueError):
        cell_table(hand_table(), ["chain"])
    t = hand_table()
    assert cell_table(t.take(t.endpoint == 99), ["endpoint"]) == []


def test_from_rows_reads_an_iterator_in_chunks(monkeypatch):
    from workers.scoring import table as table_module

    whole = PredictionTable.from_rows(hand_rows(), COLUMNS)
    monkeypatch.setattr(table_module, "FROM_ROWS_CHUNK", 4)      # 35 rows: 9 chunks
    chunked = PredictionTable.from_rows(iter(hand_rows()), COLUMNS)
    for f in fields(PredictionTable):
        if f.init:
            a, b = getattr(whole, f.name), getattr(chunked, f.name)
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f.name
    assert [c.tolist() for c in chunked.codes("kind")] == [c.tolist() for c in whole.codes("kind")]
    with pytest.raises(ValueError):
        PredictionTable.from_rows(iter([*hand_rows()[:5], (1, 2)]), COLUMNS)


def test_from_rows_of_hand_rows_equals_direct_construction():
    t = PredictionTable.from_rows(hand_rows(), COLUMNS)
    u = PredictionTable(**{f.name: getattr(t, f.name) for f in fields(PredictionTable) if f.init})
    assert cell_table(t, ["endpoint", "stage"]) == cell_table(u, ["endpoint", "stage"])
