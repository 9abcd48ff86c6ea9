"""model_metrics / compare_models against values computed by hand (layout in hand_table.py).

Point values are counted by hand; intervals are checked against `hand_table.reference_interval`, the
cluster bootstrap written out from its definition, with the per-cluster counts given by hand.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.workers.scoring.hand_table import CLUSTERS, COLUMNS, hand_table, reference_interval, row
from tests.workers.scoring.synth import rows_of
from workers.scoring.metrics import KIND_ORDER, PredictionTable, compare_models, model_metrics
from workers.scoring.stats import resampling_weights

approx = pytest.approx


def assert_stat(stat, k, n, per_cluster=None, endpoint=1, clusters=None, seed=0, n_resamples=1000):
    """k, n, value; with per_cluster {cluster: (k, n)} also the clusters count and the interval."""
    assert (stat["k"], stat["n"]) == (k, n)
    if n == 0:
        assert stat["value"] is None and stat["lo"] is None and stat["hi"] is None
        return
    assert stat["value"] == approx(k / n)
    if per_cluster is not None:
        assert sum(v[0] for v in per_cluster.values()) == k and sum(v[1] for v in per_cluster.values()) == n
        assert stat["clusters"] == sum(1 for v in per_cluster.values() if v[1])
        lo, hi = reference_interval(per_cluster, clusters or CLUSTERS[endpoint], seed=seed, n_resamples=n_resamples)
        assert (stat["lo"], stat["hi"]) == (approx(lo), approx(hi))
    elif stat["lo"] is not None:
        assert stat["lo"] <= stat["value"] <= stat["hi"]


def assert_diff(d, value, per_cluster=None, endpoint=1, n=None):
    assert d["value"] == approx(value)
    if n is not None:
        assert d["n"] == n
    if per_cluster is not None:
        lo, hi = reference_interval(per_cluster, CLUSTERS[endpoint], proportion=False)
        assert (d["lo"], d["hi"]) == (approx(lo), approx(hi))


@pytest.fixture(scope="module")
def metrics():
    return model_metrics(hand_table())


def test_endpoints_and_json(metrics):
    assert sorted(metrics) == [1, 2]
    json.dumps(metrics)  # plain ints, floats, None only
    assert metrics[1]["n_predictions"] == 23  # 12 clean + 3 + 3 + 4 + 1
    assert metrics[2]["n_predictions"] == 12


def test_kind_order_is_the_generators():
    from annotation.variants.generator import KINDS

    assert KIND_ORDER == KINDS


def test_step_and_stage_accuracy_endpoint1(metrics):
    m = metrics[1]
    # clean correct: chain 10: 4, chain 20: 3, chain 30: 1 -> 8 / 12
    assert_stat(m["step_accuracy"], 8, 12, {10: (4, 4), 20: (3, 4), 30: (1, 4)})
    # 301 abstained: 8 right of 11 answered
    assert_stat(m["answered_accuracy"], 8, 11, {10: (4, 4), 20: (3, 4), 30: (1, 3)})
    # every stage: two of three chains correct (stage 1 and 3, 4: chain 30 wrong; stage 2: chain 20)
    for s in (1, 3, 4):
        assert_stat(m["by_stage"][s], 2, 3, {10: (1, 1), 20: (1, 1), 30: (0, 1)})
    assert_stat(m["by_stage"][2], 2, 3, {10: (1, 1), 20: (0, 1), 30: (1, 1)})
    # first wrong stage: chain 10 none, chain 20 stage 2, chain 30 stage 1
    cond = {s: m["by_stage"][s]["conditional"] for s in (1, 2, 3, 4)}
    assert_stat(cond[1], 2, 3, {10: (1, 1), 20: (1, 1), 30: (0, 1)})  # all chains qualify at the lowest stage
    assert_stat(cond[2], 1, 2, {10: (1, 1), 20: (0, 1)})  # chains 10 (T) and 20 (F)
    assert_stat(cond[3], 1, 1)  # chain 10 only: one cluster, no interval
    assert cond[3]["lo"] is None and cond[3]["hi"] is None and cond[3]["clusters"] == 1
    assert_stat(cond[4], 1, 1)


def test_stage_degradation_on_full_chains(metrics):
    d1 = metrics[1]["stage_degradation"]
    assert d1["chains"] == 3 and d1["stages"] == [1, 2, 3, 4]  # chains 10, 20, 30 have S1-S4; 40 does not
    assert list(d1["by_kind"]) == ["clean", "misleading_hint", "correct_hint", "wrong_visual_cue", "image_ablation"]
    clean = d1["by_kind"]["clean"]
    for s in (1, 2, 3, 4):
        assert clean[s]["accuracy"]["value"] == approx(2 / 3)
        assert clean[s]["chance"] == 0.0   # no n_options column: chance unknown, 0
        assert clean[s]["chance_corrected"]["value"] == approx(2 / 3)
    assert_stat(d1["by_kind"]["correct_hint"][1]["accuracy"], 2, 2)   # 101, 201
    assert_stat(d1["by_kind"]["correct_hint"][4]["accuracy"], 1, 1)   # 104
    assert sorted(d1["by_kind"]["image_ablation"]) == [3]             # 999 sits on chain 40: not a full chain
    assert_stat(d1["by_kind"]["image_ablation"][3]["accuracy"], 1, 3, {10: (0, 2), 20: (1, 1)})
    assert {s: v["value"] for s, v in d1["drop"].items()} == {1: 0.0, 2: approx(0.0), 3: approx(0.0), 4: approx(0.0)}
    d2 = metrics[2]["stage_degradation"]
    # endpoint 2 clean by stage: 3/3, 2/3, 2/3, 3/3 -> drops 0, 1/3, 1/3, 0 on the same three chains
    assert {s: v["value"] for s, v in d2["drop"].items()} == {1: 0.0, 2: approx(1 / 3), 3: approx(1 / 3), 4: 0.0}
    assert d2["drop"][2]["n"] == 3
    # S1 - S2 per chain: 10: 0, 20: 0, 30: 1 (chain 30: S1 right, S2 abstained); resampled jointly
    assert_diff(d2["drop"][2], 1 / 3, {10: (0, 1), 20: (0, 1), 30: (1, 1)}, endpoint=2)


def test_stage_degradation_uses_only_chains_that_reach_s4():
    # chain 1 has S1-S4 (S1 right, S4 wrong), chain 2 only S1 and S2 (both wrong): S1 accuracy is chain 1's
    rows = rows_of({"variant": [1, 2, 3, 4, 5, 6], "item": [11, 12, 13, 14, 21, 22], "chain": [1, 1, 1, 1, 2, 2],
                    "stage": [1, 2, 3, 4, 1, 2], "correct": [True, True, True, False, False, False]})
    d = model_metrics(rows)[1]["stage_degradation"]
    assert d["chains"] == 1
    assert d["by_kind"]["clean"][1]["accuracy"]["n"] == 1 and d["drop"][4]["value"] == 1.0
    assert model_metrics(rows)[1]["by_stage"][1]["n"] == 2          # by_stage keeps every chain


def test_chain_and_guess_endpoint1(metrics):
    m = metrics[1]
    assert_stat(m["chain_accuracy"], 1, 3, {10: (1, 1), 20: (0, 1), 30: (0, 1)})  # only chain 10 all correct
    # last step correct: chains 10 and 20; chain 20 has a wrong earlier step -> 1 / 2
    assert_stat(m["guess_rate"], 1, 2, {10: (0, 1), 20: (1, 1)})


def test_stage_and_chain_endpoint2(metrics):
    m = metrics[2]
    assert_stat(m["step_accuracy"], 10, 12, {10: (3, 4), 20: (4, 4), 30: (3, 4)}, endpoint=2)
    assert_stat(m["by_stage"][1], 3, 3, {10: (1, 1), 20: (1, 1), 30: (1, 1)}, endpoint=2)  # Wilson(3, 3)
    assert_stat(m["by_stage"][2], 2, 3)
    assert_stat(m["by_stage"][3], 2, 3)
    assert_stat(m["by_stage"][4], 3, 3)
    # first wrong stage: chain 10 -> 3, chain 20 none, chain 30 -> 2
    assert_stat(m["by_stage"][1]["conditional"], 3, 3)
    assert_stat(m["by_stage"][2]["conditional"], 2, 3)  # all three qualify; chain 30 wrong
    assert_stat(m["by_stage"][3]["conditional"], 1, 2)  # chains 10 (F) and 20 (T)
    assert_stat(m["by_stage"][4]["conditional"], 1, 1)  # chain 20
    assert_stat(m["chain_accuracy"], 1, 3)
    # every last step correct; chains 10 and 30 have an earlier wrong step -> 2 / 3
    assert_stat(m["guess_rate"], 2, 3, {10: (1, 1), 20: (0, 1), 30: (1, 1)}, endpoint=2)


def test_all_right_gets_wilson_over_clusters(metrics):
    # endpoint 2 stage 1: 3 of 3 right, no bootstrap spread: Wilson with n = 3 clusters
    s = metrics[2]["by_stage"][1]
    from workers.scoring.stats import wilson_interval

    assert (s["lo"], s["hi"]) == (approx(wilson_interval(3, 3)[0]), 1.0)


def test_grounding(metrics):
    g1 = metrics[1]["grounding"]
    assert g1["n"] == 3
    assert g1["mean_iou"] == approx((0.8 + 0.3 + 0.6) / 3)
    lo, hi = reference_interval({10: (0.8, 1), 20: (0.3, 1), 30: (0.6, 1)}, CLUSTERS[1], proportion=False)
    assert g1["mean_iou_ci"] == {"value": approx(g1["mean_iou"]), "lo": approx(lo), "hi": approx(hi), "n": 3}
    assert_stat(g1["hit_rate"], 2, 3, {10: (1, 1), 20: (0, 1), 30: (1, 1)})
    # chain 10: last T, box .8 -> grounded; chain 20: last T, box .3 -> wrong evidence; chain 30: last F
    assert_stat(g1["grounded_correct"], 1, 3, {10: (1, 1), 20: (0, 1), 30: (0, 1)})
    assert g1["right_answer_wrong_evidence"] == 1
    g2 = metrics[2]["grounding"]
    assert g2["mean_iou"] == approx((0.7 + 0.9 + 0.0) / 3)  # the abstained box counts 0
    assert_stat(g2["hit_rate"], 2, 3)
    assert_stat(g2["grounded_correct"], 2, 3)  # chains 10, 20; chain 30 last T but box 0
    assert g2["right_answer_wrong_evidence"] == 1


def test_robustness_endpoint1(metrics):
    r = metrics[1]["robustness"]
    assert list(r) == ["misleading_hint", "correct_hint", "wrong_visual_cue", "image_ablation"]  # KIND_ORDER
    # misleading_hint pairs (clean, adv): 101 (T, F), 201 (T, T), 301 (F, T)
    mh = r["misleading_hint"]
    assert mh["n_pairs"] == 3 and mh["effect"] == "harmful"
    assert_stat(mh["clean_accuracy"], 2, 3, {10: (1, 1), 20: (1, 1), 30: (0, 1)})
    assert_stat(mh["adversarial_accuracy"], 2, 3, {10: (0, 1), 20: (1, 1), 30: (1, 1)})
    assert_diff(mh["drop"], 0.0, {10: (1, 1), 20: (0, 1), 30: (-1, 1)}, n=3)
    assert_stat(mh["flip_rate"], 2, 3, {10: (1, 1), 20: (0, 1), 30: (1, 1)})
    assert_stat(mh["harmful_flip_rate"], 1, 2, {10: (1, 1), 20: (0, 1)})  # of clean-correct 101, 201: 101 flips
    assert_stat(mh["helpful_flip_rate"], 1, 1)  # 301
    assert_stat(mh["cue_adoption_rate"], 1, 3, {10: (1, 1), 20: (0, 1), 30: (0, 1)})
    # no cue / answer keys in this table: adoption by the clean answer is not decidable
    assert mh["cue_adoption_corrected"] == {"value": None, "lo": None, "hi": None, "n": 0}
    assert mh["by_stage"] == {1: {"n_pairs": 3, "drop": mh["drop"]}} and mh["subkinds"] == {}
    # correct_hint pairs: 101, 201, 104 all (T, T)
    ch = r["correct_hint"]
    assert ch["n_pairs"] == 3 and ch["drop"]["value"] == approx(0.0) and ch["effect"] == "helpful"
    assert (ch["drop"]["lo"], ch["drop"]["hi"]) == (0.0, 0.0)
    assert_stat(ch["flip_rate"], 0, 3)
    assert_stat(ch["harmful_flip_rate"], 0, 3)
    assert_stat(ch["helpful_flip_rate"], 0, 0)  # no clean-wrong pairs -> None
    assert_stat(ch["cue_adoption_rate"], 0, 0)
    assert sorted(ch["by_stage"]) == [1, 4]
    # image_ablation pairs: 103 (T, F), 103 (T, F), 203 (T, T); item 999 has no clean prediction
    ia = r["image_ablation"]
    assert ia["n_pairs"] == 3 and ia["effect"] == "diagnostic"
    assert_stat(ia["clean_accuracy"], 3, 3)
    assert_stat(ia["adversarial_accuracy"], 1, 3, {10: (0, 2), 20: (1, 1)})
    assert_diff(ia["drop"], 2 / 3, {10: (2, 2), 20: (0, 1)}, n=3)
    assert_stat(ia["flip_rate"], 2, 3)
    assert_stat(ia["harmful_flip_rate"], 2, 3)
    assert_stat(ia["helpful_flip_rate"], 0, 0)
    # wrong_visual_cue: 102 (T, F), cue adopted
    wv = r["wrong_visual_cue"]
    assert wv["n_pairs"] == 1 and wv["drop"]["value"] == approx(1.0)
    assert wv["drop"]["lo"] is None   # one cluster
    assert_stat(wv["harmful_flip_rate"], 1, 1)
    assert_stat(wv["cue_adoption_rate"], 1, 1)
    assert metrics[2]["robustness"] == {}
    assert metrics[1]["robustness_summary"] == {"harmful": ["misleading_hint", "wrong_visual_cue"],
                                                "helpful": ["correct_hint"], "diagnostic": ["image_ablation"]}
    assert metrics[2]["robustness_summary"] == {"harmful": [], "helpful": [], "diagnostic": []}


def test_no_mean_robustness_drop_anywhere(metrics):
    text = json.dumps(metrics)
    assert "mean_drop" not in text and "mean_robustness" not in text


def test_reliance(metrics):
    h = metrics[1]["hint_reliance"]
    # items with both hints: 101, 201. correct_hint 2/2, misleading_hint 1/2 -> 0.5
    assert h["n"] == 2 and h["value"] == approx(0.5)
    assert_stat(h["correct_hint"], 2, 2)
    assert_stat(h["misleading_hint"], 1, 2, {10: (0, 1), 20: (1, 1)})
    # resampled jointly: per resample, (ch 10 + ch 20)/(w10 + w20) - (mh)/...: chain 10 gives 1 - 0, 20 gives 0
    w = resampling_weights(4, 1000, 0).astype(float)   # endpoint 1's clusters 10, 20, 30, 40
    drawn = w[:, 0] + w[:, 1]
    ref = np.quantile(w[drawn > 0, 0] / drawn[drawn > 0], [0.025, 0.975])
    assert (h["lo"], h["hi"]) == (approx(ref[0]), approx(ref[1]))
    v = metrics[1]["visual_reliance"]
    assert v == {**metrics[1]["robustness"]["image_ablation"]["drop"], "n": 3}
    assert v["value"] == approx(2 / 3)  # 3/3 - 1/3
    assert metrics[2]["hint_reliance"]["value"] is None and metrics[2]["hint_reliance"]["n"] == 0
    assert metrics[2]["visual_reliance"] == {"value": None, "lo": None, "hi": None, "n": 0}


def test_outcome_rates(metrics):
    m1, m2 = metrics[1], metrics[2]
    # predictions per chain (endpoint 1): 10: 4 clean + mh + 2 ch + 2 ia + wvc = 10; 20: 7; 30: 5; 40: 1
    assert_stat(m1["abstention_rate"], 1, 23, {10: (0, 10), 20: (0, 7), 30: (1, 5), 40: (0, 1)})   # clean 301
    assert_stat(m1["unparseable_rate"], 1, 23, {10: (1, 10), 20: (0, 7), 30: (0, 5), 40: (0, 1)})  # 1032
    assert_stat(m1["error_rate"], 1, 23, {10: (0, 10), 20: (0, 7), 30: (0, 5), 40: (1, 1)})        # 9991
    assert_stat(m2["abstention_rate"], 1, 12)   # clean 302
    assert_stat(m2["error_rate"], 0, 12, {10: (0, 4), 20: (0, 4), 30: (0, 4)}, endpoint=2)  # Wilson(0, 3)
    assert m1["parse_families"] == {} and m1["circular_eval"]["n"] == 0 and m1["dose_response"] == {}


def test_rows_select_like_take():
    t = hand_table()
    mask = t.chain != 30
    assert model_metrics(t, rows=mask) == model_metrics(t.take(mask))
    assert model_metrics(t, rows=np.zeros(len(t), bool)) == {}


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


# ----------------------------------------------------------------------- cue adoption, by hand
def _cue_table():
    """Clusters 1..4, one item each, a clean prediction and a misleading hint (cue = "C").

    item  clean answer  hint: answer  adopted   adopted_by_clean
    1     B (right)      C            1         0
    2     C (wrong)      C            1         1
    3     B (right)      B            0         0
    4     D (wrong)      C            1         0
    plus on item 3 a wrong_visual_cue (wrong_region on a box: no keys) with cue_clean 1, adopted 1,
    and on item 4 one with cue_clean nan (not decidable) and adopted 1.
    """
    return rows_of({
        "variant": [10, 20, 30, 40, 11, 21, 31, 41, 32, 42],
        "item": [1, 2, 3, 4, 1, 2, 3, 4, 3, 4],
        "cluster": [1, 2, 3, 4, 1, 2, 3, 4, 3, 4],
        "kind": ["clean"] * 4 + ["misleading_hint"] * 4 + ["wrong_visual_cue"] * 2,
        "subkind": [""] * 8 + ["wrong_region", "wrong_region"],
        "answer": ["B", "C", "B", "D", "C", "C", "B", "C", "", ""],
        "cue": [""] * 4 + ["C"] * 4 + ["", ""],
        "cue_clean": [math.nan] * 8 + [1.0, math.nan],
        "cue_adopted": [math.nan] * 4 + [1.0, 1.0, 0.0, 1.0, 1.0, 1.0],
        "correct": [True, False, True, False, False, False, True, False, False, False],
        "n_options": 4,
    })


def test_cue_adoption_chance_corrected_by_hand():
    r = model_metrics(_cue_table())[1]["robustness"]
    mh = r["misleading_hint"]
    assert_stat(mh["cue_adoption_rate"], 3, 4)
    # mean over pairs of adopted - adopted_by_clean: (1 - 0) + (1 - 1) + (0 - 0) + (1 - 0) = 2 over 4
    c = mh["cue_adoption_corrected"]
    assert c["value"] == approx(0.5) and c["n"] == 4
    ref = reference_interval({1: (1, 1), 2: (0, 1), 3: (0, 1), 4: (1, 1)}, (1, 2, 3, 4), proportion=False)
    assert (c["lo"], c["hi"]) == (approx(ref[0]), approx(ref[1]))
    # normalised: 2 / (4 - 1 clean adoption)
    nm = mh["cue_adoption_normalised"]
    assert nm["value"] == approx(2 / 3) and nm["n"] == 4
    ref = reference_interval({1: (1, 1), 2: (0, 0), 3: (0, 1), 4: (1, 1)}, (1, 2, 3, 4), proportion=False)
    assert (nm["lo"], nm["hi"]) == (approx(ref[0]), approx(ref[1]))
    wv = r["wrong_visual_cue"]
    # only item 3's pair is decidable (cue_clean 1): 1 - 1 = 0; item 4's cue_clean is nan
    assert wv["cue_adoption_corrected"]["value"] == 0.0 and wv["cue_adoption_corrected"]["n"] == 1
    assert wv["cue_adoption_normalised"]["value"] is None   # 1 - P(clean adopts) = 0
    assert_stat(wv["cue_adoption_rate"], 2, 2)
    sub = wv["subkinds"]["wrong_region"]
    assert sub["n_pairs"] == 2 and sub["cue_adoption_corrected"]["value"] == 0.0
    assert sub["drop"]["value"] == approx(0.5)   # item 3: T -> F, item 4: F -> F


def test_chance_and_chance_corrected_accuracy():
    # 4 chains S1-S4; stage s items: single choice with 4 options (chance 1/4), yes/no (1/2),
    # multi choice of 3 options (1/7), box (0)
    types = ["single_choice", "yes_no", "multi_choice", "box"]
    n_opt = [4, 2, 3, 0]
    chains = np.repeat(np.arange(4), 4)
    stage = np.tile(np.arange(1, 5), 4)
    correct = np.array([1, 1, 0, 1,  1, 0, 1, 1,  0, 1, 1, 1,  1, 1, 0, 0], dtype=bool)
    t = rows_of({"variant": np.arange(16), "item": chains * 10 + stage, "chain": chains, "cluster": chains,
                 "stage": stage, "answer_type": np.array(types)[stage - 1], "n_options": np.array(n_opt)[stage - 1],
                 "correct": correct})
    d = model_metrics(t)[1]["stage_degradation"]["by_kind"]["clean"]
    for s, ch in zip((1, 2, 3, 4), (1 / 4, 1 / 2, 1 / 7, 0.0)):
        acc = correct[stage == s].mean()
        assert d[s]["chance"] == approx(ch)
        assert d[s]["chance_corrected"]["value"] == approx((acc - ch) / (1 - ch))
    from workers.scoring.table import cell_table

    cells = {c["stage"]: c for c in cell_table(t, ["stage"])}
    assert cells[3]["chance"] == approx(1 / 7) and cells[4]["chance"] == 0.0


def test_circular_eval_by_hand():
    # 3 single-choice items with 3 options; rotations 1 and 2 each
    # item 1: clean T, rotations T T -> right; item 2: clean T, rotations T F -> wrong;
    # item 3: clean T, only one rotation -> not counted; item 4: yes/no (2 options), clean F, rotation T
    t = rows_of({"variant": [10, 11, 12, 20, 21, 22, 30, 31, 40, 41],
                 "item": [1, 1, 1, 2, 2, 2, 3, 3, 4, 4], "cluster": [1, 1, 1, 2, 2, 2, 3, 3, 4, 4],
                 "kind": ["clean", "option_permutation", "option_permutation"] * 2
                 + ["clean", "option_permutation", "clean", "option_permutation"],
                 "n_options": [3] * 8 + [2, 2], "answer_type": ["single_choice"] * 8 + ["yes_no"] * 2,
                 "correct": [True, True, True, True, True, False, True, True, False, True]})
    c = model_metrics(t)[1]["circular_eval"]
    assert c["n"] == 3
    assert_stat(c["accuracy"], 1, 3, {1: (1, 1), 2: (0, 1), 4: (0, 1)}, clusters=(1, 2, 3, 4))
    assert_stat(c["clean_accuracy"], 2, 3, {1: (1, 1), 2: (1, 1), 4: (0, 1)}, clusters=(1, 2, 3, 4))
    assert c["chance"] == approx(((1 / 3) ** 3 * 2 + (1 / 2) ** 2) / 3)


def test_dose_response_by_hand():
    # two box items (clusters 1, 2): clean IoU .9 / .8, dose levels with IoU (.7, .45), (.5, .6), (.2, .3)
    t = rows_of({"variant": np.arange(8), "item": [1, 1, 1, 1, 2, 2, 2, 2], "cluster": [1, 1, 1, 1, 2, 2, 2, 2],
                 "kind": ["clean"] + ["box_dose_response"] * 3 + ["clean"] + ["box_dose_response"] * 3,
                 "subkind": ["", "0.7", "0.5", "0.3"] * 2, "level": [math.nan, 0.7, 0.5, 0.3] * 2,
                 "answer_type": "box", "iou": [0.9, 0.7, 0.5, 0.2, 0.8, 0.45, 0.6, 0.3],
                 "correct": [True, True, True, False, True, False, True, False], "n_options": 0})
    d = model_metrics(t)[1]["dose_response"]
    assert list(d) == ["0.7", "0.5", "0.3", "clean"]
    assert d["0.7"]["n"] == 2 and d["0.7"]["mean_iou"]["value"] == approx(0.575)
    assert_stat(d["0.7"]["hit_rate"], 1, 2, {1: (1, 1), 2: (0, 1)}, clusters=(1, 2))
    assert_stat(d["0.5"]["accuracy"], 2, 2, {1: (1, 1), 2: (1, 1)}, clusters=(1, 2))
    assert d["0.3"]["mean_iou"]["value"] == approx(0.25)
    assert d["clean"]["mean_iou"]["value"] == approx(0.85) and d["clean"]["n"] == 2
    # levels come from `level` when the subkind is missing (columns are replaced, never edited in place)
    t.subkind = np.full(len(t), "")
    assert list(model_metrics(t)[1]["dose_response"]) == ["0.7", "0.5", "0.3", "clean"]


def test_parse_families_and_robustness_strata():
    t = rows_of({"variant": np.arange(6), "item": [1, 2, 3, 1, 2, 3], "cluster": [1, 2, 3, 1, 2, 3],
                 "stage": [1, 2, 2, 1, 2, 2],
                 "kind": ["clean"] * 3 + ["image_ablation"] * 3, "subkind": ["", "", "", "blank", "noise", "noise"],
                 "family": ["letter", "json", "letter", "abstained", "letter", ""],
                 "correct": [True, True, True, False, True, False]})
    m = model_metrics(t)[1]
    assert sorted(m["parse_families"]) == ["abstained", "json", "letter"]
    assert_stat(m["parse_families"]["letter"], 3, 6)
    ia = m["robustness"]["image_ablation"]
    assert {s: (v["n_pairs"], v["drop"]["value"]) for s, v in ia["by_stage"].items()} == {1: (1, 1.0), 2: (2, 0.5)}
    assert {s: (v["n_pairs"], v["drop"]["value"]) for s, v in ia["subkinds"].items()} == {
        "blank": (1, 1.0), "noise": (2, 0.5)}


# ----------------------------------------------------------------------- comparisons
def test_compare_models():
    t = hand_table()
    # both answered: 12 clean items minus 301 (endpoint 1 abstained) and 302 (endpoint 2 abstained)
    # the 10 items: 101 102 103 104 201 202 203 204 303 304
    # endpoint 1:     T   T   T   T   T   F   T   T   F   F  -> 7
    # endpoint 2:     T   T   F   T   T   T   T   T   T   T  -> 9
    c = compare_models(t, 1, 2, n_resamples=500, seed=3)
    assert (c["endpoint_a"], c["endpoint_b"], c["n"]) == (1, 2, 10)
    three = (10, 20, 30)
    assert_stat(c["acc_a"], 7, 10, {10: (4, 4), 20: (3, 4), 30: (0, 2)}, clusters=three, seed=3, n_resamples=500)
    assert_stat(c["acc_b"], 9, 10, {10: (3, 4), 20: (4, 4), 30: (2, 2)}, clusters=three, seed=3, n_resamples=500)
    # b (1 right, 2 wrong): 103; c (1 wrong, 2 right): 202, 303, 304. Exact: 2 * (1 + 4) / 16 = 0.625
    assert c["mcnemar"] == {"b": 1, "c": 3, "statistic": 1.0, "p_value": approx(0.625), "method": "exact"}
    boot = c["bootstrap"]
    assert boot["diff"] == approx(-0.2) and boot["n"] == 10
    ref = reference_interval({10: (1, 4), 20: (-1, 4), 30: (-2, 2)}, three, proportion=False, seed=3, n_resamples=500)
    assert (boot["lo"], boot["hi"]) == (approx(ref[0]), approx(ref[1]))
    assert 0 < boot["p_value"] <= 1
    assert compare_models(t, 1, 2, n_resamples=500, seed=3) == c
    json.dumps(c)
    # every outcome: 12 items; b: 103, 302; c: 202, 301, 303, 304 -> 2 * (1 + 6 + 15) / 64
    c_all = compare_models(t, 1, 2, n_resamples=200, answered_only=False)
    assert c_all["n"] == 12
    assert_stat(c_all["acc_a"], 8, 12)
    assert_stat(c_all["acc_b"], 10, 12)
    assert c_all["mcnemar"]["p_value"] == approx(44 / 64)


def test_compare_models_pairs_items_not_predictions():
    # item 1 has three clean predictions per endpoint (e.g. repeated samples): one item-level pair
    t = rows_of({"variant": [1, 2, 3, 1, 2, 3, 4, 4], "item": [1, 1, 1, 1, 1, 1, 2, 2],
                 "endpoint": [1, 1, 1, 2, 2, 2, 1, 2], "cluster": [1, 1, 1, 1, 1, 1, 2, 2],
                 "correct": [True, True, True, True, False, True, False, True]})
    c = compare_models(t, 1, 2)
    assert c["n"] == 2
    assert (c["mcnemar"]["b"], c["mcnemar"]["c"]) == (1, 1)   # item 1: a right, b wrong; item 2: the reverse
    assert c["acc_a"]["value"] == 0.5 and c["bootstrap"]["diff"] == 0.0


def test_empty_inputs():
    empty = PredictionTable.from_rows([], COLUMNS)
    assert model_metrics(empty) == {}
    c = compare_models(empty, 1, 2)
    assert c["n"] == 0 and c["acc_a"]["value"] is None and c["bootstrap"]["diff"] is None
    assert c["mcnemar"]["p_value"] == 1.0
    # an endpoint with adversarial predictions only
    m = model_metrics(PredictionTable.from_rows([row(1, 1011, 101, "misleading_hint", cue=0.0)], COLUMNS))[1]
    assert m["step_accuracy"]["n"] == 0 and m["by_stage"] == {}
    assert m["stage_degradation"] == {"chains": 0, "stages": [1, 2, 3, 4], "by_kind": {}, "drop": {}}
    assert m["grounding"]["mean_iou"] is None
    assert m["robustness"]["misleading_hint"]["n_pairs"] == 0
    assert_stat(m["robustness"]["misleading_hint"]["cue_adoption_rate"], 0, 1)
    assert m["circular_eval"] == {"n": 0, "accuracy": m["circular_eval"]["accuracy"],
                                  "clean_accuracy": m["circular_eval"]["clean_accuracy"], "chance": None}
    assert math.isfinite(m["n_predictions"])
    json.dumps(m)
