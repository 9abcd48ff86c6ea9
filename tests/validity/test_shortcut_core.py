"""The pure core, each statistic against a hand computation on a tiny table."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from annotation.splits import split_for_group
from validity.shortcuts import AuditInputError, AuditParams, ItemTable, run_audit
from validity.shortcuts.baselines import BIT, Features, fit_predict
from validity.shortcuts.stats import Tells, cluster_bootstrap, gold_distribution, interval, never_always_gold
from validity.shortcuts.table import chance, segment_correct


def row(i, gold, options, *, cat="c", stage="S2", at="single_choice", q="q?", split="test", cluster=None):
    return dict(item_id=i, category=cat, stage=stage, answer_type=at, question=q, options=options, gold=gold,
                split=split, cluster=cluster or f"p{i}")


def groups_in(split, n, prefix="g"):
    """n split-group keys that annotation.splits puts in `split`."""
    out, k = [], 0
    while len(out) < n:
        key = f"{prefix}{k}"
        if split_for_group(key) == split:
            out.append(key)
        k += 1
    return out


TINY = [  # gold a,a,a,b over options a/b/c; "c" shown 4 times never gold
    row(1, "a", ["a", "b", "c"]), row(2, "a", ["b", "a", "c"]), row(3, "a", ["c", "b", "a"]),
    row(4, "b", ["a", "b", "c"]),
]


def test_gold_distribution_majority_share_and_entropy_by_hand():
    t = ItemTable.from_rows(TINY)
    g = gold_distribution(t, np.ones(t.n_choice, bool), n_boot=50, seed=0)
    assert g["majority"] == "a" and g["majority_share"] == pytest.approx(3 / 4)
    assert g["k"] == 3  # answer space: a, b, c
    p = np.array([3 / 4, 1 / 4])
    assert g["entropy"] == pytest.approx(-(p * np.log(p)).sum() / math.log(3))
    assert g["counts"] == [["a", 3], ["b", 1]]


def test_never_and_always_gold_options_respect_min_shown():
    t = ItemTable.from_rows(TINY)
    out = never_always_gold(t, np.ones(t.n_choice, bool), min_shown=4)
    assert out["never_gold"] == [["c", 4]] and out["always_gold"] == []
    rows = [row(i, "x", ["x", f"d{i}"]) for i in range(5)]
    out = never_always_gold(ItemTable.from_rows(rows), np.ones(5, bool), min_shown=5)
    assert out["always_gold"] == [["x", 5]]           # every distractor is shown once: below min_shown
    assert out["never_gold"] == []


def test_length_rank_chi_square_by_hand():
    from scipy.stats import chi2

    # 3-option items; gold longest in 6, middle in 2, shortest in 1 -> ranks 1,1,1,1,1,1,2,2,3
    rows = [row(i, "long answer", ["long answer", "mid", "s"]) for i in range(6)]
    rows += [row(10 + i, "mid", ["long answer", "mid", "s"]) for i in range(2)]
    rows += [row(20, "s", ["s", "mid", "long answer"])]
    t = ItemTable.from_rows(rows)
    lr = Tells(t).summary(np.ones(t.n_choice, bool))["length_rank"]
    assert lr["counts_by_n_options"] == {3: [6, 2, 1]}
    expected = 3.0
    stat = sum((o - expected) ** 2 / expected for o in (6, 2, 1))
    assert lr["chi2"] == pytest.approx(stat) and lr["df"] == 2
    assert lr["p"] == pytest.approx(chi2.sf(stat, 2))
    assert lr["gold_longest_share"] == pytest.approx(6 / 9) and lr["gold_longest_chance"] == pytest.approx(1 / 3)


def test_length_rank_ties_are_broken_by_shown_position():
    t = ItemTable.from_rows([row(1, "bb", ["aa", "bb"]), row(2, "aa", ["aa", "bb"])])
    tells = Tells(t)
    assert tells.rank.tolist() == [2, 1]


def test_handwritten_gold_is_counted_when_it_is_the_only_unique_option():
    rows = [row(i, f"unique phrase {i}", ["templated one", f"unique phrase {i}", "templated two"]) for i in range(4)]
    rows.append(row(9, "templated one", ["templated one", "templated two", "other unique"]))
    t = ItemTable.from_rows(rows)
    h = Tells(t).summary(np.ones(t.n_choice, bool))["handwritten"]
    assert h["items_with_one_handwritten"] == 5 and h["gold_only_handwritten"] == 4
    assert h["share_of_items"] == pytest.approx(4 / 5)


def test_chance_uses_each_items_option_count():
    rows = [row(1, "yes", ["yes", "no"], at="yes_no"), row(2, "a", ["a", "b", "c", "d"]),
            row(3, ["a", "c"], ["a", "b", "c"], at="multi_choice")]
    t = ItemTable.from_rows(rows)
    assert chance(t).tolist() == pytest.approx([1 / 2, 1 / 4, 1 / 7])
    assert t.gold_keys[2] == "a + c"


def test_prior_picks_the_most_frequent_train_gold_among_the_shown_options():
    train = [row(i, "a", ["a", "b", "c"], split="train") for i in range(3)] + [row(3, "b", ["a", "b"], split="train")]
    test = [row(10, "a", ["c", "b", "a"]), row(11, "b", ["b", "a"]), row(12, "b", ["b", "c"]), row(13, "c", ["c", "a"])]
    t = ItemTable.from_rows(train + test)
    feats = Features(t)
    is_train = t.split[t.choice] == 0
    pred, ok = fit_predict(feats, is_train, ~is_train, min_train=1)["prior"]
    right = segment_correct(pred, t)[~is_train]
    # item 10: same option set seen (gold a) -> a, right; 11: set {a,b} seen with gold b -> b, right;
    # 12: {b,c} unseen, back-off: b was gold once, c never -> b, right; 13: back-off a (3) over c (0) -> a, wrong
    assert right.tolist() == [True, True, True, False]
    assert ok.all()


def test_cluster_bootstrap_contains_the_estimate_and_is_wider_than_naive_for_clustered_duplicates():
    rng = np.random.default_rng(1)
    per_patient = rng.random(40) < 0.6
    values = np.repeat(per_patient, 10).astype(float)          # each patient's item duplicated 10 times
    clusters = np.repeat(np.arange(40), 10)
    point = values.mean()
    clustered = interval(cluster_bootstrap(values, np.ones_like(values), clusters, n_boot=2000, seed=0))
    naive = interval(cluster_bootstrap(values, np.ones_like(values), np.arange(400), n_boot=2000, seed=0))
    assert clustered[0] <= point <= clustered[1]
    assert (clustered[1] - clustered[0]) > 2 * (naive[1] - naive[0])
    se = math.sqrt(point * (1 - point) / 40)  # the honest unit is the patient: n = 40
    assert (clustered[1] - clustered[0]) == pytest.approx(2 * 1.96 * se, rel=0.25)
    assert cluster_bootstrap(values[:3], np.ones(3), np.zeros(3), n_boot=10) is None  # one cluster: no interval


def _planted_rows(n_patients=300, seed=0):
    rng = random.Random(seed)
    rows, i = [], 0
    for p in range(n_patients):
        g = f"pat{p}"
        split = split_for_group(g)
        opts = ["cyst", "mass", "nodule", "a well circumscribed lesion"]
        rng.shuffle(opts)
        i += 1
        rows.append(row(i, "a well circumscribed lesion", opts, cat="planted-longest", stage="S3", split=split,
                        cluster=g))
        gold = rng.choice(["red", "blue", "green"])
        word = {"red": "alpha", "blue": "beta", "green": "gamma"}[gold]
        opts = ["red", "blue", "green"]
        rng.shuffle(opts)
        i += 1
        rows.append(row(i, gold, opts, cat="planted-word", q=f"Given the {word} sign, which colour fits?", split=split,
                        cluster=g))
        gold = rng.choice(["lobulated", "round", "oval"])
        opts = ["lobulated", "round", "oval"]
        rng.shuffle(opts)
        i += 1
        rows.append(row(i, gold, opts, cat="fair", q="What is the shape?", split=split, cluster=g))
        i += 1
        rows.append(row(i, [1, 2, 3, 4], [], cat="grounding", at="box", q="Box the lesion", split=split, cluster=g))
    return rows


@pytest.fixture(scope="module")
def planted():
    rows = _planted_rows()
    return rows, run_audit(rows, params=AuditParams(n_boot=300, seed=0))


def test_planted_longest_option_shortcut_is_flagged(planted):
    rows, result = planted
    cell = next(c for c in result.results["categories"] if c["key"] == "planted-longest")
    assert cell["baselines"]["longest"]["accuracy"] == 1.0
    assert cell["baselines"]["shortest"]["accuracy"] == 0.0
    assert cell["chance"] == pytest.approx(0.25)
    assert cell["flag"] == "red"
    assert cell["tells"]["length_rank"]["p"] < 1e-6
    assert "longest" in cell["effective_baselines"]["codes"]
    flags = {r["item_id"]: v for r, v in zip(rows, result.image_necessary)}
    assert all(flags[r["item_id"]] is False for r in rows if r["category"] == "planted-longest")
    masks = dict(zip(result.item_id.tolist(), result.mask.tolist()))
    assert all(masks[r["item_id"]] & BIT["longest"] for r in rows if r["category"] == "planted-longest")


def test_text_classifier_learns_a_planted_word_to_gold_association(planted):
    _, result = planted
    cell = next(c for c in result.results["categories"] if c["key"] == "planted-word")
    text = cell["baselines"]["text"]
    assert text["accuracy"] > 0.9 and text["minus_chance_ci"][0] > 0.4
    assert cell["baselines"]["prior"]["accuracy"] < 0.6          # no prior shortcut: golds are balanced
    assert cell["best"]["code"] == "text"


def test_a_fair_category_is_near_chance_and_its_items_need_the_image(planted):
    rows, result = planted
    cell = next(c for c in result.results["categories"] if c["key"] == "fair")
    assert cell["best"]["ci"][0] <= 1 / 3 + 0.05
    assert cell["effective_baselines"]["codes"] == []
    flags = [v for r, v in zip(rows, result.image_necessary) if r["category"] == "fair"]
    assert all(flags)


def test_box_items_are_listed_but_not_scored(planted):
    rows, result = planted
    assert result.results["counts"]["not_scored_by_type"] == {"box": sum(r["answer_type"] == "box" for r in rows)}
    assert all(v is None for r, v in zip(rows, result.image_necessary) if r["answer_type"] == "box")
    cell = next(c for c in result.results["categories"] if c["key"] == "grounding")
    assert cell["flag"] == "grey" and cell["baselines"] == {}


def test_train_items_get_flags_from_grouped_cross_fitting(planted):
    rows, result = planted
    assert result.results["counts"]["cross_fit_folds"] == 5
    train_longest = [v for r, v in zip(rows, result.image_necessary)
                     if r["split"] == "train" and r["category"] != "grounding"]
    assert train_longest and all(v is not None for v in train_longest)


def test_scored_split_counts_only_that_split(planted):
    rows, result = planted
    n_test = sum(1 for r in rows if r["split"] == "test" and r["answer_type"] != "box")
    assert result.results["counts"]["scored"] == n_test
    assert result.results["overall"]["n_scored"] == n_test


def test_a_single_item_category_is_reported_as_too_small():
    rows = _planted_rows(60) + [row(99999, "a", ["a", "b"], cat="lonely", split="test", cluster="solo")]
    result = run_audit(rows, params=AuditParams(n_boot=50))
    cell = next(c for c in result.results["categories"] if c["key"] == "lonely")
    assert cell["flag"] == "grey" and "too small" in cell["flag_reasons"][0]
    assert cell["baselines"]["prior"]["applicable"] is False       # fitted baselines need train items
    assert cell["baselines"]["longest"]["ci"] is None              # one patient: no interval
    assert result.image_necessary[-1] in (True, False)


def test_bad_input_raises_clear_errors():
    with pytest.raises(AuditInputError, match="empty"):
        run_audit([])
    with pytest.raises(AuditInputError, match="unknown split 'holdout'"):
        run_audit(TINY, params=AuditParams(split="holdout"))
    with pytest.raises(AuditInputError, match="training data"):
        run_audit(TINY, params=AuditParams(split="train"))
    with pytest.raises(AuditInputError, match="unknown split 'dev'"):
        ItemTable.from_rows([row(1, "a", ["a", "b"], split="dev")])


def test_only_test_items_and_no_train_still_produce_heuristic_results():
    result = run_audit(TINY, params=AuditParams(n_boot=20))
    assert result.results["overall"]["baselines"]["prior"]["applicable"] is False
    assert result.results["overall"]["baselines"]["longest"]["n"] == 4


def test_many_items_from_few_patients_are_too_small_for_a_verdict():
    """A planted shortcut (gold always the longest) in 24 test items from 2 patients: clearly above
    chance, but a patient-level interval over 2 patients means nothing, so the cell stays grey."""
    train = groups_in("train", 12, "tr")
    test = groups_in("test", 2, "te")
    rows = [row(i, "a much longer answer", ["a much longer answer", "b", "c"], cat="few", split="train",
                cluster=train[i % 12]) for i in range(36)]
    rows += [row(100 + i, "a much longer answer", ["b", "a much longer answer", "c"], cat="few", split="test",
                 cluster=test[i % 2]) for i in range(24)]
    cell = next(c for c in run_audit(rows, params=AuditParams(n_boot=50)).results["categories"] if c["key"] == "few")
    assert cell["best"]["minus_chance"] > 0.5 and cell["patients_scored"] == 2
    assert cell["flag"] == "grey" and "2 patient(s)" in cell["flag_reasons"][0]
    wide = run_audit(rows, params=AuditParams(n_boot=50, min_patients=2)).results["categories"]
    assert next(c for c in wide if c["key"] == "few")["flag"] == "red"
