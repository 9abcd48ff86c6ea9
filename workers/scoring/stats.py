"""Statistics (math + numpy + scipy.sparse): the cluster bootstrap behind every interval, Wilson, McNemar.

Cluster bootstrap (every interval of `metrics` and `table.cell_table`)
    Predictions of one item, chain or patient are not independent (a table cell pools 10–16 variants
    of one item), so intervals resample *clusters*: the ``cluster`` column of the table (the patient:
    the split group of the item's image; the chain when unknown). For one population (one endpoint's
    predictions) with C distinct clusters, sorted by id:

    1. Weights. R resamples (``N_RESAMPLES`` = 1000) each draw C clusters with replacement;
       ``W[r, c]`` is how often resample r drew cluster c (multinomial counts, Σ_c W[r, c] = C).
       Row r is ``bincount(Generator(PCG64(seed)).integers(0, C, C))``, drawn row after row from one
       stream, so W depends on (seed, C, R) only: not on the number, order or duplication of the rows.
       The same W serves every statistic of the population (every metric of one endpoint, and its
       cells in `cell_table`), so differences between statistics are resampled jointly.
    2. Per-cluster sums. A statistic is a ratio of sums over its units (rows, pairs, items or
       chains, each belonging to one cluster): value = Σ num / Σ den. Proportions have num = the
       successes (0/1 per unit) and den = the units; paired differences num = Σ (a − b) over the
       pairs, den = the pairs; chance-corrected accuracy num = Σ (correct − chance), den =
       Σ (1 − chance); a difference of two ratios is resampled as the difference of the two.
       The per-cluster sums of every numerator and denominator form the columns of K (C × S).
    3. Resampled sums ``B = W @ K`` (R × S, float32; one BLAS thread), and per resample the ratio
       B_num / B_den. Resamples that drew none of the statistic's clusters (B_den = 0) are left out.
       W is kept for reuse while R × C ≤ 2^24 (64 MB), otherwise drawn again block by block, so
       memory stays bounded whatever C; a sparse K whose statistics fall into groups over disjoint
       clusters (the cells of one split) is multiplied group by group.
    4. Interval: the (1 − confidence)/2 and (1 + confidence)/2 percentiles (linear interpolation,
       numpy's default) of the resampled ratios. Proportions with k == 0 or k == n (no bootstrap
       spread) get Wilson's interval with n = the number of clusters that hold the statistic's units
       instead (k = 0 or n). With fewer than 2 such clusters lo and hi are None (nothing to resample).

    Duplicating every row k times multiplies every per-cluster sum by k and leaves C, W and the ratios
    unchanged (up to float32 rounding), so it never narrows an interval.

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
    The cluster bootstrap above of diff = mean(a) − mean(b) over aligned pairs (each pair its own
    cluster when `clusters` is None), with a two-sided p-value: if diff > 0, 2·(fraction of
    resampled diffs ≤ 0); if diff < 0, 2·(fraction ≥ 0); if diff == 0, 1.0; capped at 1. A p-value of 0
    means "< 1 / n_resamples".
"""
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from threadpoolctl import ThreadpoolController

Z95 = 1.959963984540054
EXACT_BELOW = 25
N_RESAMPLES = 1000
CONFIDENCE = 0.95
_CHUNK_ELEMENTS = 1 << 22      # entries of W per matmul chunk (16 MB in float32)
_CACHE_ELEMENTS = 1 << 24      # weight matrices kept for reuse, in all (64 MB in float32)
_SPARSE_BELOW = 0.05           # K with a smaller share of non-zero entries is multiplied as a sparse matrix
_WEIGHTS: OrderedDict[tuple[int, int, int], np.ndarray] = OrderedDict()
# Products run on one BLAS thread: a scoring worker shares its cores, and a multi-threaded BLAS on a
# busy machine is 10x slower than one thread, not faster.
_BLAS = ThreadpoolController()


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


# ----------------------------------------------------------------------------- the cluster bootstrap
def _weight_rows(n_clusters: int, n_resamples: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, block of rows of W) in order; every row drawn from one stream (module docstring)."""
    rng = np.random.default_rng(seed)
    per = max(1, min(n_resamples, _CHUNK_ELEMENTS // max(n_clusters, 1)))
    for start in range(0, n_resamples, per):
        stop = min(n_resamples, start + per)
        block = np.empty((stop - start, n_clusters), dtype=np.float32)
        for r in range(stop - start):
            block[r] = np.bincount(rng.integers(0, n_clusters, n_clusters), minlength=n_clusters)
        yield start, block


def _weights_t(n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    """Wᵀ (C × R, float32, read-only), kept for reuse (least recently used first out)."""
    key = (int(n_clusters), int(n_resamples), int(seed))
    wt = _WEIGHTS.get(key)
    if wt is None:
        wt = np.empty((key[0], key[1]), dtype=np.float32)
        for start, block in _weight_rows(*key):
            wt[:, start:start + len(block)] = block.T
        wt.flags.writeable = False
        _WEIGHTS[key] = wt
        while sum(v.size for v in _WEIGHTS.values()) > _CACHE_ELEMENTS and len(_WEIGHTS) > 1:
            _WEIGHTS.popitem(last=False)
    else:
        _WEIGHTS.move_to_end(key)
    return wt


def resampling_weights(n_clusters: int, n_resamples: int = N_RESAMPLES, seed: int = 0) -> np.ndarray:
    """The weight matrix W (R × C, float32) of the module docstring."""
    if n_clusters * n_resamples <= _CACHE_ELEMENTS:
        return _weights_t(n_clusters, n_resamples, seed).T
    return np.concatenate([block for _, block in _weight_rows(n_clusters, n_resamples, seed)])


def resample_sums(k: np.ndarray | sp.spmatrix, *, n_resamples: int = N_RESAMPLES, seed: int = 0) -> np.ndarray:
    """``W @ K`` for per-cluster sums K (C × S, dense or scipy.sparse): R × S float32."""
    kt = sp.csr_matrix(k.T, dtype=np.float32) if sp.issparse(k) else np.ascontiguousarray(k.T, dtype=np.float32)
    return _resample_t(kt, k.shape[0], n_resamples, seed)


def _resample_t(kt: np.ndarray | sp.csr_matrix, n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    """``(Kᵀ @ Wᵀ)ᵀ`` for Kᵀ (S × C, float32). Wᵀ is kept while R × C is small; otherwise it is drawn
    again in blocks of rows, so memory stays bounded by the block size whatever the number of clusters."""
    width = kt.shape[0]
    if width == 0 or n_clusters == 0:
        return np.zeros((n_resamples, width), dtype=np.float32)
    with _BLAS.limit(limits=1, user_api="blas"):
        if n_clusters * n_resamples <= _CACHE_ELEMENTS:
            wt = _weights_t(n_clusters, n_resamples, seed)
            if sp.issparse(kt):
                return _sparse_by_blocks(kt, wt)
            return np.asarray(kt @ wt).T
        out = np.empty((n_resamples, width), dtype=np.float32)
        for start, block in _weight_rows(n_clusters, n_resamples, seed):
            out[start:start + len(block)] = np.asarray(kt @ np.ascontiguousarray(block.T)).T
    return out


def _sparse_by_blocks(kt: sp.csr_matrix, wt: np.ndarray) -> np.ndarray:
    """Kᵀ @ Wᵀ for a sparse Kᵀ. Where the statistics fall into groups over disjoint sets of clusters
    (cells of one split or modality), each group is one dense product over its own clusters, which is
    several times faster than the sparse product when the groups are few."""
    width, n_clusters = kt.shape
    graph = sp.bmat([[None, kt], [kt.T, None]], format="csr")   # statistics and clusters as nodes
    n_blocks, label = connected_components(graph, directed=False)
    col_label, cluster_label = label[:width], label[width:]
    cols_of = np.argsort(col_label, kind="stable")
    cl_of = np.argsort(cluster_label, kind="stable")
    col_bounds = np.searchsorted(col_label[cols_of], np.arange(n_blocks + 1))
    cl_bounds = np.searchsorted(cluster_label[cl_of], np.arange(n_blocks + 1))
    dense_cost = int(np.sum(np.diff(col_bounds) * np.diff(cl_bounds)))
    if n_blocks > 256 or dense_cost > 8 * kt.nnz:
        return np.asarray(kt @ wt).T
    if n_blocks == 1:
        return (kt.toarray() @ wt).T
    out = np.zeros((width, wt.shape[1]), dtype=np.float32)
    for b in range(n_blocks):
        cols, cls = cols_of[col_bounds[b]:col_bounds[b + 1]], cl_of[cl_bounds[b]:cl_bounds[b + 1]]
        if cols.size and cls.size:
            out[cols] = kt[cols][:, cls].toarray() @ wt[cls]
    return out.T


def percentiles(samples: np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Per column of `samples` (R × S), the two-sided percentile interval of its non-nan entries
    (numpy's linear interpolation); nan where a column has none."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    qs = ((1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0)
    r, width = samples.shape
    lo, hi = np.full(width, np.nan), np.full(width, np.nan)
    valid = ~np.isnan(samples)
    full = valid.all(axis=0)
    if full.any() and r:   # no nan: two order statistics and their neighbours by partitioning
        pos = [q * (r - 1) for q in qs]
        kth = sorted({int(np.floor(p)) for p in pos} | {min(int(np.floor(p)) + 1, r - 1) for p in pos})
        part = np.partition(samples[:, full], kth, axis=0)
        for out, p in zip((lo, hi), pos):
            below = int(np.floor(p))
            a, b = part[below].astype(float), part[min(below + 1, r - 1)].astype(float)
            out[full] = a + (p - below) * (b - a)
    rest = np.flatnonzero(~full)
    if rest.size:            # some nan: sort (nan last) and interpolate among the m valid entries
        s = np.sort(samples[:, rest], axis=0)
        m = valid[:, rest].sum(axis=0)
        for out, q in zip((lo, hi), qs):
            pos = q * np.maximum(m - 1, 0)
            below = np.floor(pos).astype(np.int64)
            above = np.minimum(below + 1, np.maximum(m - 1, 0))
            a = np.take_along_axis(s, below[None, :], axis=0)[0].astype(float)
            b = np.take_along_axis(s, above[None, :], axis=0)[0].astype(float)
            out[rest] = np.where(m > 0, a + (pos - below) * (b - a), np.nan)
    return lo, hi


def ratio_intervals(num_samples: np.ndarray, den_samples: np.ndarray, num: np.ndarray, den: np.ndarray,
                    clusters: np.ndarray, *, proportion: bool | np.ndarray,
                    confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of ratios Σnum / Σden from their resampled sums (R × S each) and totals (S each).

    `clusters`: how many clusters hold each statistic's units; `proportion` (one flag, or one per
    statistic): proportions whose k is 0 or n get Wilson's interval with n = clusters instead.
    Fewer than 2 clusters (or den == 0) give nan.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(den_samples != 0, np.asarray(num_samples, dtype=float) / den_samples, np.nan)
    lo, hi = percentiles(ratios, confidence)
    num, den, clusters = (np.asarray(x, dtype=float) for x in (num, den, clusters))
    k, n = np.rint(num), np.rint(den)
    edge = np.asarray(proportion, dtype=bool) & ((k <= 0) | (k >= n))
    if edge.any():
        w_lo, w_hi = wilson_interval(np.where(k <= 0, 0.0, clusters), clusters, _z(confidence))
        lo, hi = np.where(edge, w_lo, lo), np.where(edge, w_hi, hi)
    none = (clusters < 2) | (den == 0)
    return np.where(none, np.nan, lo), np.where(none, np.nan, hi)


def _z(confidence: float) -> float:
    if confidence == CONFIDENCE:
        return Z95
    from scipy.stats import norm

    return float(norm.ppf((1.0 + confidence) / 2.0))


def _none(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _count(x: float) -> int | float:
    r = round(x)
    return int(r) if abs(x - r) < 1e-6 else float(x)


Term = int | np.ndarray | Sequence[tuple[Any, float]]


class Pending:
    """One statistic of a `StatBatch`; `result` (a dict) is set by `StatBatch.run`."""

    __slots__ = ("kind", "num", "den", "parts", "n", "result", "samples", "clusters")

    def __init__(self, kind: str, num=None, den=None, parts=None, n=None) -> None:
        self.kind, self.num, self.den, self.parts, self.n = kind, num, den, parts, n
        self.result, self.samples, self.clusters = None, None, 0


class StatBatch:
    """Many ratio statistics of one population, resampled together with the same weights W.

    `codes[i]` is the cluster (0 .. n_clusters − 1) of row i. Statistics are declared with per-cluster
    sums (`sums`, `grouped`, or any length-C vector): `proportion(k, n)` → {"k", "n", "value", "lo",
    "hi", "clusters"}; `mean(num, den)` (a mean of differences, a mean IoU, a chance-corrected
    accuracy) → {"value", "lo", "hi", "n"}; `difference(a, b)` of two declared ratios, resampled
    jointly → {"value", "lo", "hi", "n"}. A numerator or denominator is a vector, or a list of
    (vector, coefficient) terms (a linear combination of resampled sums). `run()` computes all of
    them with one product ``W @ K``; each `Pending.result` then holds its dict (`resolve` swaps them
    into a nested output).
    """

    def __init__(self, codes: np.ndarray, n_clusters: int, *, n_resamples: int = N_RESAMPLES, seed: int = 0,
                 confidence: float = CONFIDENCE) -> None:
        self.codes = np.asarray(codes, dtype=np.int64)
        self.n_clusters = int(n_clusters)
        self.n_resamples, self.seed, self.confidence = int(n_resamples), int(seed), float(confidence)
        self._columns: list[np.ndarray] = []
        self._seen: dict[tuple[float, float], list[int]] = {}
        self._by_id: dict[int, tuple[np.ndarray, int]] = {}   # the same array object again: no work
        self._stats: list[Pending] = []
        # a fixed probe vector: (Σ vec, vec · probe) finds equal columns without hashing their bytes
        self._probe = np.random.default_rng(12345).random(self.n_clusters)

    @classmethod
    def over(cls, clusters: np.ndarray, **kwargs: Any) -> StatBatch:
        """A batch whose clusters are the distinct values of `clusters` (one per row)."""
        ids, codes = np.unique(np.asarray(clusters), return_inverse=True)
        return cls(codes.ravel(), len(ids), **kwargs)

    # -------------------------------------------------------------- per-cluster sums
    def sums(self, values: Any = None, mask: np.ndarray | None = None, codes: np.ndarray | None = None) -> np.ndarray:
        """Σ values (1 per row when None) per cluster over the rows where `mask`; `codes` overrides the
        row clusters (for units that are not rows: pairs, items, chains)."""
        codes = self.codes if codes is None else codes
        w = None if values is None else np.asarray(values, dtype=float)
        if mask is not None:
            codes = codes[mask]
            w = None if w is None else w[mask]
        return np.bincount(codes, weights=w, minlength=self.n_clusters).astype(float)

    def grouped(self, groups: np.ndarray, n_groups: int, values: Any = None, mask: np.ndarray | None = None,
                codes: np.ndarray | None = None) -> np.ndarray:
        """C × n_groups per-cluster sums of `values` by `groups` (0 .. n_groups − 1 per row)."""
        codes = self.codes if codes is None else codes
        w = None if values is None else np.asarray(values, dtype=float)
        g = np.asarray(groups, dtype=np.int64)
        if mask is not None:
            codes, g = codes[mask], g[mask]
            w = None if w is None else w[mask]
        flat = np.bincount(g * self.n_clusters + codes, weights=w, minlength=self.n_clusters * n_groups)
        return flat.astype(float).reshape(n_groups, self.n_clusters).T   # [:, j] is contiguous

    # -------------------------------------------------------------- declarations
    def _column(self, vec: np.ndarray) -> int:
        """Index of the column holding `vec` (equal vectors share one column)."""
        hit = self._by_id.get(id(vec))
        if hit is not None and hit[0] is vec:
            return hit[1]
        obj = vec
        j = self._new_column(np.asarray(vec, dtype=float))
        self._by_id[id(obj)] = (obj, j)
        return j

    def _new_column(self, vec: np.ndarray) -> int:
        if vec.shape != (self.n_clusters,):
            raise ValueError(f"per-cluster sums must have length {self.n_clusters}")
        key = (float(vec.sum()), float(vec @ self._probe)) if vec.any() else (0.0, 0.0)
        for j in self._seen.get(key, ()):
            if (self._columns[j] == vec).all():
                return j
        self._columns.append(vec)
        self._seen.setdefault(key, []).append(len(self._columns) - 1)
        return len(self._columns) - 1

    def _terms(self, x: Term) -> list[tuple[int, float]]:
        if isinstance(x, np.ndarray):
            return [(self._column(x), 1.0)]
        return [(self._column(v), float(c)) for v, c in x]

    def _add(self, p: Pending) -> Pending:
        self._stats.append(p)
        return p

    def proportion(self, k: Term, n: Term) -> Pending:
        return self._add(Pending("proportion", self._terms(k), self._terms(n)))

    def mean(self, num: Term, den: Term, n: float | None = None) -> Pending:
        return self._add(Pending("mean", self._terms(num), self._terms(den), n=n))

    def difference(self, a: Pending, b: Pending, n: float | None = None) -> Pending:
        return self._add(Pending("difference", parts=(a, b), n=n))

    # -------------------------------------------------------------- computation
    def run(self) -> None:
        ratios = [p for p in self._stats if p.kind != "difference"]
        if not ratios:
            return
        kt = np.stack(self._columns).astype(np.float32)             # Kᵀ: S × C
        totals = kt.sum(axis=1, dtype=float)
        sparse = np.count_nonzero(kt) < _SPARSE_BELOW * kt.size
        b = _resample_t(sp.csr_matrix(kt) if sparse else kt, self.n_clusters, self.n_resamples, self.seed)
        # numerators and denominators as linear combinations of columns: sparse S × P coefficients
        shape = (len(self._columns), len(ratios))
        coef_num, coef_den = (_coefficients([getattr(p, side) for p in ratios], shape) for side in ("num", "den"))
        num_s, den_s = b @ coef_num, b @ coef_den                 # R × P
        num, den = totals @ coef_num, totals @ coef_den
        clusters = np.count_nonzero(np.asarray(coef_den.T @ kt), axis=1)
        prop = np.array([p.kind == "proportion" for p in ratios], dtype=bool)
        lo, hi = ratio_intervals(num_s, den_s, num, den, clusters, proportion=prop, confidence=self.confidence)
        with np.errstate(divide="ignore", invalid="ignore"):
            samples = np.where(den_s != 0, num_s / den_s, np.nan)
        for i, p in enumerate(ratios):
            p.samples, p.clusters = samples[:, i], int(clusters[i])
            if p.kind == "proportion":
                kk, nn = int(round(num[i])), int(round(den[i]))
                p.result = ({"k": 0, "n": 0, "value": None, "lo": None, "hi": None, "clusters": 0} if nn <= 0 else
                            {"k": kk, "n": nn, "value": kk / nn, "lo": _none(lo[i]), "hi": _none(hi[i]),
                             "clusters": p.clusters})
            else:
                value = num[i] / den[i] if den[i] != 0 else math.nan
                p.result = {"value": _none(value), "lo": _none(lo[i]), "hi": _none(hi[i]),
                            "n": _count(den[i] if p.n is None else p.n)}
        diffs = [p for p in self._stats if p.kind == "difference"]
        if diffs:
            d = np.stack([p.parts[0].samples - p.parts[1].samples for p in diffs], axis=1)
            d_lo, d_hi = percentiles(d, self.confidence)
            for i, p in enumerate(diffs):
                a, c = p.parts[0].result, p.parts[1].result
                value = None if a["value"] is None or c["value"] is None else float(a["value"] - c["value"])
                p.clusters = min(p.parts[0].clusters, p.parts[1].clusters)
                ok = value is not None and p.clusters >= 2
                p.samples = d[:, i]
                p.result = {"value": value, "lo": _none(d_lo[i]) if ok else None,
                            "hi": _none(d_hi[i]) if ok else None, "n": None if p.n is None else _count(p.n)}


def _coefficients(terms: list[list[tuple[int, float]]], shape: tuple[int, int]) -> sp.csc_matrix:
    rows = [j for t in terms for j, _ in t]
    cols = [i for i, t in enumerate(terms) for _ in t]
    vals = [c for t in terms for _, c in t]
    return sp.csc_matrix((vals, (rows, cols)), shape=shape)


def resolve(obj: Any) -> Any:
    """`obj` with every `Pending` replaced by its result (after `StatBatch.run`)."""
    if isinstance(obj, Pending):
        return obj.result
    if isinstance(obj, dict):
        return {k: resolve(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [resolve(v) for v in obj]
    return obj


def bootstrap_p_value(diff: float, samples: np.ndarray) -> float:
    """Two-sided p-value of a difference from its resampled values (module docstring)."""
    samples = samples[~np.isnan(samples)]
    if diff == 0 or not samples.size:
        return 1.0
    side = samples <= 0 if diff > 0 else samples >= 0
    return min(1.0, 2.0 * float(np.mean(side)))


def paired_bootstrap(a, b, *, n_resamples: int = N_RESAMPLES, seed: int = 0, clusters=None,
                     confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Cluster bootstrap of mean(a) − mean(b) over aligned pairs; see the module docstring.

    Returns {"diff", "lo", "hi", "p_value", "n"} (n = number of pairs); with no pairs every value
    but n is nan; with one cluster lo = hi = diff. Deterministic for a given seed. Costs
    O(n_resamples × clusters): pass `clusters` for large samples.
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
    cl = np.arange(n) if clusters is None else np.asarray(clusters).ravel()
    if cl.shape != a_arr.shape:
        raise ValueError("clusters must have the same length as a and b")
    batch = StatBatch.over(cl, n_resamples=n_resamples, seed=seed, confidence=confidence)
    d = batch.mean(batch.sums(a_arr - b_arr), batch.sums())
    batch.run()
    diff = float(a_arr.mean() - b_arr.mean())
    if batch.n_clusters < 2:   # one cluster: every resample is the whole sample
        lo = hi = diff
    else:
        lo, hi = d.result["lo"], d.result["hi"]
    return {"diff": diff, "lo": float(lo), "hi": float(hi), "p_value": bootstrap_p_value(diff, d.samples), "n": n}
