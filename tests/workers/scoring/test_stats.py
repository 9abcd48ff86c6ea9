"""Wilson, McNemar and the paired bootstrap against known values."""
from __future__ import annotations

import math

import numpy as np
import pytest

from workers.scoring import stats
from workers.scoring.stats import mcnemar, paired_bootstrap, wilson_interval


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
    diffs = stats._resample_diffs(d, np.ones(len(d)), 1000, np.random.default_rng(1))
    assert r["diff"] > 0
    assert r["p_value"] == pytest.approx(min(1.0, 2 * np.mean(diffs <= 0)))
    assert (r["lo"], r["hi"]) == (pytest.approx(np.quantile(diffs, 0.025)), pytest.approx(np.quantile(diffs, 0.975)))
    swapped = paired_bootstrap(B, A, seed=1, n_resamples=1000)
    assert swapped["diff"] == pytest.approx(-r["diff"]) and swapped["p_value"] == pytest.approx(r["p_value"])
    assert (swapped["lo"], swapped["hi"]) == (pytest.approx(-r["hi"]), pytest.approx(-r["lo"]))


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
    diffs = stats._resample_diffs(np.repeat([5., 0, 5, 0, 0, 5, -5, 5], 1), np.full(8, 5.),
                                  500, np.random.default_rng(0))
    assert np.allclose(diffs * 8, np.round(diffs * 8))
    # one cluster: every resample is the whole sample
    one = paired_bootstrap(a, b, clusters=np.zeros(40))
    assert one["lo"] == one["hi"] == pytest.approx(3 / 8)


def test_bootstrap_multinomial_path_matches_index_resampling(monkeypatch):
    rng = np.random.default_rng(42)
    a, b = rng.random(300) < 0.7, rng.random(300) < 0.6
    clusters = rng.integers(0, 60, 300)
    fast = paired_bootstrap(a, b, n_resamples=4000, seed=5, clusters=clusters)
    monkeypatch.setattr(stats, "_MAX_DISTINCT", 0)  # force drawing cluster indices
    slow = paired_bootstrap(a, b, n_resamples=4000, seed=5, clusters=clusters)
    assert fast["diff"] == slow["diff"]
    assert fast["lo"] == pytest.approx(slow["lo"], abs=0.02)
    assert fast["hi"] == pytest.approx(slow["hi"], abs=0.02)
    # and a plain Python loop over resamples agrees with both
    ids = np.unique(clusters)
    loop = []
    for _ in range(2000):
        pick = rng.choice(ids, size=len(ids))
        rows = np.concatenate([np.flatnonzero(clusters == c) for c in pick])
        loop.append(a[rows].mean() - b[rows].mean())
    assert np.quantile(loop, 0.025) == pytest.approx(fast["lo"], abs=0.025)
    assert np.quantile(loop, 0.975) == pytest.approx(fast["hi"], abs=0.025)
