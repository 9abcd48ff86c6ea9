"""Wilson, McNemar, the cluster bootstrap engine and the paired bootstrap against known values."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from workers.scoring import stats
from workers.scoring.stats import (
    StatBatch,
    bootstrap_p_value,
    mcnemar,
    paired_bootstrap,
    percentiles,
    ratio_intervals,
    resample_sums,
    resampling_weights,
    wilson_interval,
)


@pytest.mark.parametrize("k, n, lo, hi", [
    (8, 10, 0.4902, 0.9433),
    (5, 10, 0.2366, 0.7634),
    (0, 10, 0.0, 0.2775),
    (10, 10, 0.7225, 1.0),
    (3, 3, 0.4385, 1.0),
    (81, 263, 0.2553, 0.3662),
])
def test_wilson_known_values(k, n, lo, hi):
    got = wilson_interval(k, n)
    assert isinstance(got[0], float)
    assert got == (pytest.approx(lo, abs=1e-4), pytest.approx(hi, abs=1e-4))


def test_wilson_edges_and_vectorised():
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    assert wilson_interval(0, 5)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0
    lo, hi = wilson_interval(np.array([8, 0, 3]), np.array([10, 0, 3]))
    assert lo.shape == (3,) and np.isnan(lo[1]) and np.isnan(hi[1])
    assert lo[0] == pytest.approx(0.4902, abs=1e-4) and hi[2] == 1.0
    # z = 1 (68 %) is narrower
    lo1, hi1 = wilson_interval(8, 10, z=1.0)
    assert 0.4902 < lo1 < 0.8 < hi1 < 0.9433


def test_mcnemar_exact():
    r = mcnemar(10, 2)  # 2 * (1 + 12 + 66) / 4096
    assert r["method"] == "exact" and r["p_value"] == pytest.approx(0.0386, abs=1e-4)
    assert r["p_value"] == pytest.approx(2 * 79 / 4096)
    assert (r["b"], r["c"], r["statistic"]) == (10, 2, 2.0)
    assert mcnemar(3, 0)["p_value"] == pytest.approx(0.25)  # 2 / 8
    assert mcnemar(5, 5)["p_value"] == 1.0                  # capped
    assert mcnemar(0, 0) == {"b": 0, "c": 0, "statistic": 0.0, "p_value": 1.0, "method": "exact"}
    assert mcnemar(20, 4)["method"] == "exact"             # b + c = 24


def test_mcnemar_chi2():
    r = mcnemar(30, 12)  # (|30 - 12| - 1)^2 / 42
    assert r["method"] == "chi2_cc"
    assert r["statistic"] == pytest.approx(289 / 42) and r["statistic"] == pytest.approx(6.881, abs=1e-3)
    assert r["p_value"] == pytest.approx(0.00871, abs=1e-5)
    assert mcnemar(20, 5)["method"] == "chi2_cc"           # b + c = 25
    assert mcnemar(13, 12)["statistic"] == 0.0 and mcnemar(13, 12)["p_value"] == 1.0
    # (|60 - 40| - 1)^2 / 100 = 3.61; chi2(1) sf(3.61) = 0.05743
    assert mcnemar(60, 40)["p_value"] == pytest.approx(0.05743, abs=1e-5)
    with pytest.raises(ValueError):
        mcnemar(-1, 3)


A = np.array([1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1], dtype=bool)
B = np.array([0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0], dtype=bool)


# ----------------------------------------------------------------------- resampling weights
def test_weights_are_multinomial_draws_of_every_cluster():
    w = resampling_weights(7, 500, seed=4)
    assert w.shape == (500, 7) and w.dtype == np.float32
    assert (w.sum(axis=1) == 7).all() and (w >= 0).all() and (w == np.round(w)).all()
    # every cluster is drawn with probability 1/C: mean weight 1
    assert w.mean(axis=0) == pytest.approx(np.ones(7), abs=0.15)
    assert (resampling_weights(7, 500, seed=4) == w).all()
    assert not (resampling_weights(7, 500, seed=5) == w).all()
    # the first rows do not depend on how many resamples are drawn
    assert (resampling_weights(7, 100, seed=4) == w[:100]).all()


def test_streamed_weights_equal_kept_weights(monkeypatch):
    kept = resampling_weights(50, 300, seed=1)
    k = np.random.default_rng(0).random((50, 6))
    b_kept = resample_sums(k, n_resamples=300, seed=1)
    monkeypatch.setattr(stats, "_CACHE_ELEMENTS", 0)        # draw again, block by block
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 50 * 7)   # 7 rows per block
    assert (resampling_weights(50, 300, seed=1) == kept).all()
    assert resample_sums(k, n_resamples=300, seed=1) == pytest.approx(b_kept, rel=1e-5)


def test_resample_sums_dense_and_sparse_agree():
    rng = np.random.default_rng(3)
    k = np.where(rng.random((40, 9)) < 0.1, rng.integers(0, 5, (40, 9)), 0).astype(float)
    dense = resample_sums(k, n_resamples=200, seed=2)
    assert dense == pytest.approx(resampling_weights(40, 200, seed=2).astype(float) @ k)
    assert resample_sums(sp.csc_matrix(k), n_resamples=200, seed=2) == pytest.approx(dense)


def test_percentiles_match_numpy_and_skip_nan():
    rng = np.random.default_rng(0)
    s = rng.random((999, 3))
    lo, hi = percentiles(s)
    assert lo == pytest.approx(np.quantile(s, 0.025, axis=0)) and hi == pytest.approx(np.quantile(s, 0.975, axis=0))
    s[::2, 1] = np.nan
    s[:, 2] = np.nan
    lo, hi = percentiles(s)
    assert lo[1] == pytest.approx(np.quantile(s[1::2, 1], 0.025)) and np.isnan(lo[2]) and np.isnan(hi[2])


def test_ratio_intervals_edges():
    num_s = np.array([[1.0, 0.0, 2.0], [2.0, 0.0, 2.0], [3.0, 0.0, 2.0]])
    den_s = np.array([[2.0, 3.0, 2.0], [4.0, 3.0, 2.0], [4.0, 3.0, 2.0]])
    lo, hi = ratio_intervals(num_s, den_s, np.array([2.0, 0.0, 2.0]), np.array([4.0, 3.0, 2.0]),
                             np.array([3, 3, 1]), proportion=True)
    assert (lo[0], hi[0]) == pytest.approx(tuple(np.quantile([0.5, 0.5, 0.75], [0.025, 0.975])))
    assert (lo[1], hi[1]) == pytest.approx(wilson_interval(0, 3))     # k == 0: Wilson over the 3 clusters
    assert np.isnan(lo[2]) and np.isnan(hi[2])                          # one cluster
    # a mean (not a proportion) at 0 keeps its bootstrap interval
    lo, hi = ratio_intervals(num_s[:, 1:2], den_s[:, 1:2], np.array([0.0]), np.array([3.0]), np.array([3]),
                             proportion=False)
    assert (lo[0], hi[0]) == (0.0, 0.0)


def test_stat_batch_matches_a_loop_over_resamples():
    rng = np.random.default_rng(8)
    clusters = rng.integers(100, 130, 400)       # 30 clusters, ids not 0-based
    correct = rng.random(400) < 0.6
    batch = StatBatch.over(clusters, n_resamples=300, seed=9)
    acc = batch.proportion(batch.sums(correct), batch.sums())
    batch.run()
    ids = np.unique(clusters)
    w = resampling_weights(len(ids), 300, seed=9)
    ratios = [sum(w[r, i] * correct[clusters == c].sum() for i, c in enumerate(ids))
              / sum(w[r, i] * (clusters == c).sum() for i, c in enumerate(ids)) for r in range(300)]
    assert acc.result["value"] == pytest.approx(correct.mean())
    assert (acc.result["lo"], acc.result["hi"]) == pytest.approx(tuple(np.quantile(ratios, [0.025, 0.975])))
    assert acc.result["clusters"] == 30


def test_stat_batch_linear_terms_and_differences():
    codes = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    a = np.array([1, 1, 0, 1, 1, 0, 1, 1], dtype=float)
    b_ = np.array([0, 1, 0, 0, 1, 0, 1, 0], dtype=float)
    batch = StatBatch(codes, 4, n_resamples=200, seed=1)
    n = batch.sums()
    drop = batch.mean([(batch.sums(a), 1.0), (batch.sums(b_), -1.0)], n)
    direct = batch.mean(batch.sums(a - b_), n)
    acc_a, acc_b = batch.proportion(batch.sums(a), n), batch.proportion(batch.sums(b_), n)
    diff = batch.difference(acc_a, acc_b, n=8)
    again = batch.proportion(batch.sums(a), n)
    batch.run()
    assert drop.result == direct.result
    assert diff.result["value"] == pytest.approx(a.mean() - b_.mean()) and diff.result["n"] == 8
    # the same clusters, the same denominators: the difference of ratios is the paired mean difference
    assert (diff.result["lo"], diff.result["hi"]) == pytest.approx((drop.result["lo"], drop.result["hi"]))
    assert again.result == acc_a.result
    assert len(batch._columns) == 4   # a, b, n and a − b: equal vectors share one column


# ----------------------------------------------------------------------- paired bootstrap
def test_bootstrap_deterministic_and_contains_diff():
    r = paired_bootstrap(A, B, seed=7)
    assert r["diff"] == pytest.approx(A.mean() - B.mean()) and r["n"] == 16
    assert r["lo"] <= r["diff"] <= r["hi"]
    assert paired_bootstrap(A, B, seed=7) == r
    assert paired_bootstrap(A, B, seed=8) != r
    assert 0 <= r["p_value"] <= 1


def test_bootstrap_p_value_definition():
    r = paired_bootstrap(A, B, seed=1, n_resamples=1000)
    d = A.astype(float) - B.astype(float)
    w = resampling_weights(16, 1000, seed=1).astype(float)
    diffs = (w @ d) / w.sum(axis=1)
    assert r["diff"] > 0
    assert r["p_value"] == pytest.approx(min(1.0, 2 * np.mean(diffs <= 0)))
    assert (r["lo"], r["hi"]) == (pytest.approx(np.quantile(diffs, 0.025)), pytest.approx(np.quantile(diffs, 0.975)))
    swapped = paired_bootstrap(B, A, seed=1, n_resamples=1000)
    assert swapped["diff"] == pytest.approx(-r["diff"]) and swapped["p_value"] == pytest.approx(r["p_value"])
    assert (swapped["lo"], swapped["hi"]) == (pytest.approx(-r["hi"]), pytest.approx(-r["lo"]))
    assert bootstrap_p_value(0.0, diffs) == 1.0


def test_bootstrap_degenerate_cases():
    same = paired_bootstrap(A, A)
    assert (same["diff"], same["lo"], same["hi"], same["p_value"]) == (0.0, 0.0, 0.0, 1.0)
    ones, zeros = np.ones(20), np.zeros(20)
    sure = paired_bootstrap(ones, zeros)
    assert (sure["diff"], sure["lo"], sure["hi"], sure["p_value"]) == (1.0, 1.0, 1.0, 0.0)
    empty = paired_bootstrap([], [])
    assert empty["n"] == 0 and math.isnan(empty["diff"]) and math.isnan(empty["p_value"])
    with pytest.raises(ValueError):
        paired_bootstrap([1, 0], [1])


def test_bootstrap_clusters_resample_whole_clusters():
    # 8 clusters of 5 identical pairs: the effective sample is 8, not 40, so the CI must be wider
    a = np.repeat([1, 1, 1, 0, 1, 1, 0, 1], 5)
    b = np.repeat([0, 1, 0, 0, 1, 0, 1, 0], 5)
    clusters = np.repeat(np.arange(8), 5)
    flat = paired_bootstrap(a, b, seed=0)
    clus = paired_bootstrap(a, b, seed=0, clusters=clusters)
    assert clus["diff"] == flat["diff"] == pytest.approx(3 / 8) and clus["n"] == 40  # d sums to 3 per 8
    assert (clus["hi"] - clus["lo"]) > 1.5 * (flat["hi"] - flat["lo"])
    # cluster resamples only take values k / 8 (each cluster contributes -1, 0 or +1 times 5 of 40)
    w = resampling_weights(8, 500, seed=0).astype(float)
    diffs = (w @ np.array([5., 0, 5, 0, 0, 5, -5, 5])) / (w @ np.full(8, 5.))
    assert np.allclose(diffs * 8, np.round(diffs * 8))
    # one cluster: every resample is the whole sample
    one = paired_bootstrap(a, b, clusters=np.zeros(40))
    assert one["lo"] == one["hi"] == pytest.approx(3 / 8)


def test_bootstrap_agrees_with_resampling_cluster_indices():
    rng = np.random.default_rng(42)
    a, b = rng.random(300) < 0.7, rng.random(300) < 0.6
    clusters = rng.integers(0, 60, 300)
    fast = paired_bootstrap(a, b, n_resamples=4000, seed=5, clusters=clusters)
    # a plain Python loop that draws cluster ids agrees
    ids = np.unique(clusters)
    loop = []
    for _ in range(2000):
        pick = rng.choice(ids, size=len(ids))
        rows = np.concatenate([np.flatnonzero(clusters == c) for c in pick])
        loop.append(a[rows].mean() - b[rows].mean())
    assert np.quantile(loop, 0.025) == pytest.approx(fast["lo"], abs=0.025)
    assert np.quantile(loop, 0.975) == pytest.approx(fast["hi"], abs=0.025)
