"""Small, dependency-free statistics (math + numpy): Wilson intervals, McNemar, paired bootstrap.

wilson_interval(k, n, z)
    Wilson score interval for a binomial proportion p = k / n::

        centre = (p + z²/2n) / (1 + z²/n)
        half   = z·sqrt(p(1 − p)/n + z²/4n²) / (1 + z²/n)
        (lo, hi) = (centre − half, centre + half), clipped to [0, 1]

    lo is exactly 0 when k == 0 and hi exactly 1 when k == n; n == 0 gives (nan, nan).
mcnemar(b, c)
    Paired test of two classifiers on the same items; b = first right / second wrong,
    c = first wrong / second right. With b + c < 25 the exact two-sided binomial test
    (p = min(1, 2·P[X ≤ min(b, c)]), X ~ Binomial(b + c, 1/2); statistic = min(b, c); method "exact"),
    otherwise the chi-square test with continuity correction (statistic = (max(|b − c| − 1, 0))² / (b + c),
    p = erfc(sqrt(statistic / 2)), the chi²(1) survival function; method "chi2_cc"). b + c == 0 → p 1.0.
paired_bootstrap(a, b, clusters=None)
    Non-parametric bootstrap of diff = mean(a) − mean(b) over aligned pairs. Resampling units are
    the pairs, or whole clusters (e.g. chains) when `clusters` is given; a resample draws as many
    units as there are, with replacement, and its diff is Σ(a − b) / (number of pairs drawn).
    CI: percentiles (1 − confidence)/2 and (1 + confidence)/2 of the resampled diffs.
    p-value (two-sided): if diff > 0, 2·(fraction of resampled diffs ≤ 0); if diff < 0,
    2·(fraction ≥ 0); if diff == 0, 1.0; capped at 1. A p-value of 0 means "< 1 / n_resamples".
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

Z95 = 1.959963984540054
EXACT_BELOW = 25
# Resampling units with at most this many distinct (Σ(a − b), size) pairs are resampled through a
# multinomial over those distinct pairs (exactly the same distribution as drawing units, O(R·u)).
_MAX_DISTINCT = 4096
_CHUNK_ELEMENTS = 1 << 22  # draws per chunk when resampling unit indices directly


def wilson_interval(k, n, z: float = Z95):
    """Wilson score interval (lo, hi) for k successes in n trials; scalars or numpy arrays.

    Scalar inputs give a pair of floats, array inputs a pair of float arrays (broadcast).
    n == 0 gives nan.
    """
    scalar = np.ndim(k) == 0 and np.ndim(n) == 0
    k_arr = np.asarray(k, dtype=float)
    n_arr = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k_arr / n_arr
        z2 = z * z
        denom = 1.0 + z2 / n_arr
        centre = (p + z2 / (2.0 * n_arr)) / denom
        half = z * np.sqrt(p * (1.0 - p) / n_arr + z2 / (4.0 * n_arr * n_arr)) / denom
        lo = np.clip(centre - half, 0.0, 1.0)
        hi = np.clip(centre + half, 0.0, 1.0)
    lo = np.where(k_arr <= 0, 0.0, lo)
    hi = np.where(k_arr >= n_arr, 1.0, hi)
    empty = n_arr <= 0
    lo = np.where(empty, np.nan, lo)
    hi = np.where(empty, np.nan, hi)
    if scalar:
        return float(lo), float(hi)
    return lo, hi


def mcnemar(b: int, c: int) -> dict[str, Any]:
    """McNemar's test for paired binary outcomes (definition in the module docstring)."""
    b, c = int(b), int(c)
    if b < 0 or c < 0:
        raise ValueError("b and c must be non-negative counts")
    n = b + c
    if n == 0:
        return {"b": b, "c": c, "statistic": 0.0, "p_value": 1.0, "method": "exact"}
    if n < EXACT_BELOW:
        m = min(b, c)
        tail = sum(math.comb(n, i) for i in range(m + 1)) / 2.0 ** n
        return {"b": b, "c": c, "statistic": float(m), "p_value": min(1.0, 2.0 * tail), "method": "exact"}
    stat = max(abs(b - c) - 1, 0) ** 2 / n
    return {"b": b, "c": c, "statistic": float(stat), "p_value": float(math.erfc(math.sqrt(stat / 2.0))),
            "method": "chi2_cc"}


def _resample_diffs(s: np.ndarray, m: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap diffs Σs* / Σm* for units with paired-difference sums `s` and sizes `m`."""
    units = len(s)
    pairs = np.stack([s, m], axis=1)
    distinct, first, counts = np.unique(pairs, axis=0, return_index=True, return_counts=True)
    order = np.argsort(first)  # categories in order of first appearance: swapping a and b negates
    distinct, counts = distinct[order], counts[order]  # every resampled diff (same seed)
    out = np.empty(n_resamples, dtype=float)
    if len(distinct) <= _MAX_DISTINCT:
        probs = counts / counts.sum()
        per = max(1, _CHUNK_ELEMENTS // len(distinct))
        for start in range(0, n_resamples, per):
            stop = min(n_resamples, start + per)
            draws = rng.multinomial(units, probs, size=stop - start).astype(float)
            out[start:stop] = (draws @ distinct[:, 0]) / (draws @ distinct[:, 1])
        return out
    per = max(1, _CHUNK_ELEMENTS // units)
    for start in range(0, n_resamples, per):
        stop = min(n_resamples, start + per)
        idx = rng.integers(0, units, size=(stop - start, units))
        out[start:stop] = s[idx].sum(axis=1) / m[idx].sum(axis=1)
    return out


def paired_bootstrap(a, b, *, n_resamples: int = 2000, seed: int = 0, clusters=None,
                     confidence: float = 0.95) -> dict[str, Any]:
    """Paired (optionally cluster) bootstrap of mean(a) − mean(b); see the module docstring.

    Returns {"diff", "lo", "hi", "p_value", "n"} (n = number of pairs); with no pairs every value
    but n is nan. Deterministic for a given seed.
    """
    a_arr = np.asarray(a, dtype=float).ravel()
    b_arr = np.asarray(b, dtype=float).ravel()
    if a_arr.shape != b_arr.shape:
        raise ValueError("a and b must have the same length")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    if n_resamples < 1:
        raise ValueError("n_resamples must be positive")
    n = len(a_arr)
    if n == 0:
        nan = float("nan")
        return {"diff": nan, "lo": nan, "hi": nan, "p_value": nan, "n": 0}
    d = a_arr - b_arr
    if clusters is None:
        s, m = d, np.ones(n)
    else:
        cl = np.asarray(clusters).ravel()
        if cl.shape != d.shape:
            raise ValueError("clusters must have the same length as a and b")
        _, inv = np.unique(cl, return_inverse=True)
        s = np.bincount(inv, weights=d)
        m = np.bincount(inv).astype(float)
    diff = float(a_arr.mean() - b_arr.mean())
    rng = np.random.default_rng(seed)
    diffs = _resample_diffs(s, m, int(n_resamples), rng)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(diffs, [alpha / 2.0, 1.0 - alpha / 2.0])
    if diff > 0:
        p = 2.0 * float(np.mean(diffs <= 0))
    elif diff < 0:
        p = 2.0 * float(np.mean(diffs >= 0))
    else:
        p = 1.0
    return {"diff": diff, "lo": float(lo), "hi": float(hi), "p_value": min(1.0, p), "n": n}
