"""model_metrics / compare_models against values computed by hand (layout in hand_table.py)."""
from __future__ import annotations

import json

import pytest

from tests.workers.scoring.hand_table import COLUMNS, hand_table, row
from workers.scoring.metrics import PredictionTable, compare_models, model_metrics
from workers.scoring.stats import wilson_interval

approx = pytest.approx


def assert_stat(stat, k, n):
    assert (stat["k"], stat["n"]) == (k, n)
    if n == 0:
        assert stat["value"] is None and stat["lo"] is None and stat["hi"] is None
        return
    lo, hi = wilson_interval(k, n)
    assert stat["value"] == approx(k / n)
    assert (stat["lo"], stat["hi"]) == (approx(lo), approx(hi))


@pytest.fixture(scope="module")
def metrics():
    return model_metrics(hand_table())


def test_endpoints_and_json(metrics):
    assert sorted(metrics) == [1, 2]
    json.dumps(metrics)  # plain ints, floats, None only
    assert metrics[1]["n_predictions"] == 23  # 12 clean + 3 + 3 + 4 + 1
    assert metrics[2]["n_predictions"] == 12


def test_step_and_stage_accuracy_endpoint1(metrics):
    m = metrics[1]
    # clean correct: chain 10: 4, chain 20: 3, chain 30: 1 -> 8 / 12
    assert_stat(m["step_accuracy"], 8, 12)
    # every stage: two of three chains correct
    for s in (1, 2, 3, 4):
        assert_stat(m["by_stage"][s], 2, 3)
    # first wrong stage: chain 10 none, chain 20 stage 2, chain 30 stage 1
    cond = {s: m["by_stage"][s]["conditional"] for s in (1, 2, 3, 4)}
    assert_stat(cond[1], 2, 3)  # all chains qualify at the lowest stage
    assert_stat(cond[2], 1, 2)  # chains 10 (T) and 20 (F)
    assert_stat(cond[3], 1, 1)  # chain 10 only
    assert_stat(cond[4], 1, 1)
    deg = m["stage_degradation"]
    assert deg[1] == approx(0.0)
    assert deg[2] == approx(2 / 3 - 1 / 2)  # 1/6
    assert deg[3] == approx(2 / 3 - 1)      # -1/3
    assert deg[4] == approx(2 / 3 - 1)


def test_chain_and_guess_endpoint1(metrics):
    m = metrics[1]
    assert_stat(m["chain_accuracy"], 1, 3)  # only chain 10 all correct
    # last step correct: chains 10 and 20; chain 20 has a wrong earlier step -> 1 / 2
    assert_stat(m["guess_rate"], 1, 2)


def test_stage_and_chain_endpoint2(metrics):
    m = metrics[2]
    assert_stat(m["step_accuracy"], 10, 12)   # 3 + 4 + 3
    assert_stat(m["by_stage"][1], 3, 3)
    assert_stat(m["by_stage"][2], 2, 3)
    assert_stat(m["by_stage"][3], 2, 3)
    assert_stat(m["by_stage"][4], 3, 3)
    # first wrong stage: chain 10 -> 3, chain 20 none, chain 30 -> 2
    assert_stat(m["by_stage"][1]["conditional"], 3, 3)
    assert_stat(m["by_stage"][2]["conditional"], 2, 3)  # all three qualify; chain 30 wrong
    assert_stat(m["by_stage"][3]["conditional"], 1, 2)  # chains 10 (F) and 20 (T)
    assert_stat(m["by_stage"][4]["conditional"], 1, 1)  # chain 20
    assert m["stage_degradation"] == {1: approx(0), 2: approx(1 / 3), 3: approx(0.5), 4: approx(0)}
    assert_stat(m["chain_accuracy"], 1, 3)
    # every last step correct; chains 10 and 30 have an earlier wrong step -> 2 / 3
    assert_stat(m["guess_rate"], 2, 3)


def test_grounding(metrics):
    g1 = metrics[1]["grounding"]
    assert g1["n"] == 3
    assert g1["mean_iou"] == approx((0.8 + 0.3 + 0.6) / 3)
    assert_stat(g1["hit_rate"], 2, 3)
    # chain 10: last T, box .8 -> grounded; chain 20: last T, box .3 -> wrong evidence; chain 30: last F
    assert_stat(g1["grounded_correct"], 1, 3)
    assert g1["right_answer_wrong_evidence"] == 1
    g2 = metrics[2]["grounding"]
    assert g2["mean_iou"] == approx((0.7 + 0.9 + 0.0) / 3)  # the abstained box counts 0
    assert_stat(g2["hit_rate"], 2, 3)
    assert_stat(g2["grounded_correct"], 2, 3)  # chains 10, 20; chain 30 last T but box 0
    assert g2["right_answer_wrong_evidence"] == 1


def test_robustness_endpoint1(metrics):
    r = metrics[1]["robustness"]
    assert sorted(r) == ["correct_hint", "image_ablation", "misleading_hint", "wrong_visual_cue"]
    # misleading_hint pairs (clean, adv): 101 (T, F), 201 (T, T), 301 (F, T)
    mh = r["misleading_hint"]
    assert mh["n_pairs"] == 3
    assert_stat(mh["clean_accuracy"], 2, 3)
    assert_stat(mh["adversarial_accuracy"], 2, 3)
    assert mh["drop"] == approx(0.0)
    assert_stat(mh["flip_rate"], 2, 3)
    assert_stat(mh["harmful_flip_rate"], 1, 2)  # of clean-correct 101, 201: 101 flips
    assert_stat(mh["helpful_flip_rate"], 1, 1)  # 301
    assert_stat(mh["cue_adoption_rate"], 1, 3)
    # correct_hint pairs: 101, 201, 104 all (T, T)
    ch = r["correct_hint"]
    assert ch["n_pairs"] == 3 and ch["drop"] == approx(0.0)
    assert_stat(ch["flip_rate"], 0, 3)
    assert_stat(ch["harmful_flip_rate"], 0, 3)
    assert_stat(ch["helpful_flip_rate"], 0, 0)  # no clean-wrong pairs -> None
    assert_stat(ch["cue_adoption_rate"], 0, 0)
    # image_ablation pairs: 103 (T, F), 103 (T, F), 203 (T, T); item 999 has no clean prediction
    ia = r["image_ablation"]
    assert ia["n_pairs"] == 3
    assert_stat(ia["clean_accuracy"], 3, 3)
    assert_stat(ia["adversarial_accuracy"], 1, 3)
    assert ia["drop"] == approx(2 / 3)
    assert_stat(ia["flip_rate"], 2, 3)
    assert_stat(ia["harmful_flip_rate"], 2, 3)
    assert_stat(ia["helpful_flip_rate"], 0, 0)
    # wrong_visual_cue: 102 (T, F), cue adopted
    wv = r["wrong_visual_cue"]
    assert wv["n_pairs"] == 1 and wv["drop"] == approx(1.0)
    assert_stat(wv["harmful_flip_rate"], 1, 1)
    assert_stat(wv["cue_adoption_rate"], 1, 1)
    assert metrics[2]["robustness"] == {}


def test_reliance(metrics):
    h = metrics[1]["hint_reliance"]
    # items with both hints: 101, 201. correct_hint 2/2, misleading_hint 1/2 -> 0.5
    assert h["n"] == 2 and h["value"] == approx(0.5)
    assert_stat(h["correct_hint"], 2, 2)
    assert_stat(h["misleading_hint"], 1, 2)
    v = metrics[1]["visual_reliance"]
    assert v == {"value": approx(2 / 3), "n": 3}  # 3/3 - 1/3
    assert metrics[2]["hint_reliance"]["value"] is None and metrics[2]["hint_reliance"]["n"] == 0
    assert metrics[2]["visual_reliance"] == {"value": None, "n": 0}


def test_outcome_rates(metrics):
    m1, m2 = metrics[1], metrics[2]
    assert_stat(m1["abstention_rate"], 1, 23)   # clean 301
    assert_stat(m1["unparseable_rate"], 1, 23)  # image_ablation 1032
    assert_stat(m1["error_rate"], 1, 23)        # image_ablation 9991
    assert_stat(m2["abstention_rate"], 1, 12)   # clean 302
    assert_stat(m2["error_rate"], 0, 12)


def test_first_clean_prediction_by_variant_id():
    # item 51 has two clean predictions: variant 50 (wrong) is the one paired, not 51 (right)
    rows = [row(1, 51, 51, correct=True), row(1, 52, 51, "negation", True), row(1, 50, 51, correct=False)]
    m = model_metrics(PredictionTable.from_rows(rows, COLUMNS))[1]
    assert_stat(m["step_accuracy"], 1, 2)
    neg = m["robustness"]["negation"]
    assert_stat(neg["clean_accuracy"], 0, 1)
    assert_stat(neg["helpful_flip_rate"], 1, 1)
    # both clean predictions sit at the chain's only step: no guess-rate chain, chain wrong
    assert_stat(m["guess_rate"], 0, 0)
    assert_stat(m["chain_accuracy"], 0, 1)


def test_box_last_step_not_judged():
    # chain 5: step 1 single choice (T), step 2 box (T, iou .9) is the last step -> not in grounded_correct
    rows = [row(1, 510, 51), row(1, 520, 52, iou=0.9)]
    g = model_metrics(PredictionTable.from_rows(rows, COLUMNS))[1]["grounding"]
    assert g["n"] == 1 and g["mean_iou"] == approx(0.9)
    assert_stat(g["grounded_correct"], 0, 0)


def test_compare_models():
    t = hand_table()
    # both answered: 12 clean variants minus 301 (endpoint 1 abstained) and 302 (endpoint 2 abstained)
    # the 10 variants: 101 102 103 104 201 202 203 204 303 304
    # endpoint 1:         T   T   T   T   T   F   T   T   F   F  -> 7
    # endpoint 2:         T   T   F   T   T   T   T   T   T   T  -> 9
    c = compare_models(t, 1, 2, n_resamples=500, seed=3)
    assert (c["endpoint_a"], c["endpoint_b"], c["n"]) == (1, 2, 10)
    assert_stat(c["acc_a"], 7, 10)
    assert_stat(c["acc_b"], 9, 10)
    # b (1 right, 2 wrong): 103; c (1 wrong, 2 right): 202, 303, 304. Exact: 2 * (1 + 4) / 16 = 0.625
    assert c["mcnemar"] == {"b": 1, "c": 3, "statistic": 1.0, "p_value": approx(0.625), "method": "exact"}
    boot = c["bootstrap"]
    assert boot["diff"] == approx(-0.2) and boot["n"] == 10
    assert boot["lo"] <= -0.2 <= boot["hi"]
    assert compare_models(t, 1, 2, n_resamples=500, seed=3) == c
    json.dumps(c)
    # every outcome: 12 pairs; b: 103, 302; c: 202, 301, 303, 304 -> 2 * (1 + 6 + 15) / 64
    c_all = compare_models(t, 1, 2, n_resamples=200, answered_only=False)
    assert c_all["n"] == 12
    assert_stat(c_all["acc_a"], 8, 12)
    assert_stat(c_all["acc_b"], 10, 12)
    assert c_all["mcnemar"]["p_value"] == approx(44 / 64)


def test_empty_inputs():
    empty = PredictionTable.from_rows([], COLUMNS)
    assert model_metrics(empty) == {}
    c = compare_models(empty, 1, 2)
    assert c["n"] == 0 and c["acc_a"]["value"] is None and c["bootstrap"]["diff"] is None
    assert c["mcnemar"]["p_value"] == 1.0
    # an endpoint with adversarial predictions only
    m = model_metrics(PredictionTable.from_rows([row(1, 1011, 101, "misleading_hint", cue=0.0)], COLUMNS))[1]
    assert m["step_accuracy"]["n"] == 0 and m["by_stage"] == {} and m["stage_degradation"] == {}
    assert m["grounding"]["mean_iou"] is None
    assert m["robustness"]["misleading_hint"]["n_pairs"] == 0
    assert_stat(m["robustness"]["misleading_hint"]["cue_adoption_rate"], 0, 1)
