"""Column store of scored predictions and vectorised group-by (`cell_table`).

Re-exported by `workers.scoring.metrics`, whose module docstring defines the metrics; the intervals
are the cluster bootstrap of `workers.scoring.stats`.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from itertools import islice
from operator import itemgetter
from typing import Any

import numpy as np
import scipy.sparse as sp

from workers.scoring.stats import CONFIDENCE, N_RESAMPLES, ratio_intervals, resample_sums

INT_COLUMNS = ("endpoint", "variant", "item", "chain", "stage", "step", "cluster", "n_options")
STR_COLUMNS = ("category", "modality", "kind", "answer_type", "outcome", "split", "answer", "cue", "subkind",
               "family")
FLOAT_COLUMNS = ("iou", "cue_adopted", "cue_clean", "level")
GROUP_COLUMNS = ("endpoint", "split", "stage", "category", "modality", "kind", "answer_type")
# Columns `from_rows` (and the constructor) fill in when absent: strings "", iou / cue_adopted /
# cue_clean / level nan, n_options 0, cluster = chain.
OPTIONAL_COLUMNS = ("category", "modality", "iou", "cue_adopted", "split", "cluster", "n_options", "answer", "cue",
                    "cue_clean", "level", "subkind", "family")
CHOICE_ANSWER_TYPES = ("single_choice", "yes_no", "multi_choice")
HIT = 0.5
FROM_ROWS_CHUNK = 1 << 16
_COLUMN_NAMES = frozenset((*INT_COLUMNS, *STR_COLUMNS, *FLOAT_COLUMNS, "correct"))
_DENSE_CODES = 1 << 22   # integer columns whose values lie in [0, this) are factorised by counting


def joint_rows(t: PredictionTable) -> np.ndarray:
    """Joint answer + box predictions: a choice item with an IoU (only those carry one; see
    workers/scoring/item.py)."""
    return t.isin("answer_type", CHOICE_ANSWER_TYPES) & ~np.isnan(t.iou)


def chance(t: PredictionTable) -> np.ndarray:
    """Per row, the probability that a uniform guess is right: 1 / n_options for single_choice and
    yes_no, 1 / (2^n_options − 1) for multi_choice (any non-empty subset), 0 for box and short_text
    answers and wherever n_options is unknown (0)."""
    n = t.n_options.astype(float)
    out = np.zeros(len(t))
    known = n > 0
    single = known & t.isin("answer_type", ("single_choice", "yes_no"))
    multi = known & t.isin("answer_type", ("multi_choice",))
    out[single] = 1.0 / n[single]
    out[multi] = 1.0 / (np.exp2(np.minimum(n[multi], 60)) - 1.0)
    return out


def _str_array(v: Any) -> np.ndarray:
    arr = np.asarray(v)
    if arr.dtype.kind == "U":
        return arr
    if arr.dtype == object:
        arr = arr.copy()
        arr[np.equal(arr, None)] = ""
    return arr.astype(str) if arr.size else np.zeros(0, dtype="U1")


def _float_array(v: Any) -> np.ndarray:
    arr = np.asarray(v)
    if arr.dtype.kind == "f":
        return arr.astype(float, copy=False)
    return np.array(arr, dtype=float)  # None -> nan, True/False -> 1.0/0.0


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, code of each row) — np.unique(return_inverse=True), by counting for
    small non-negative integers and by hashing for strings."""
    if values.dtype.kind == "U" and values.size:
        return _factorize_str(values)
    if values.dtype.kind in "iu" and values.size:
        lo, hi = int(values.min()), int(values.max())
        if lo >= 0 and hi < max(_DENSE_CODES, 4 * values.size):
            present = np.bincount(values, minlength=hi + 1) > 0
            uniq = np.flatnonzero(present).astype(values.dtype)
            lookup = np.cumsum(present) - 1
            return uniq, lookup[values]
    uniq, inv = np.unique(values, return_inverse=True)
    return uniq, inv.ravel()


def _factorize_str(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """factorize() of a unicode array: a 64-bit polynomial hash of its code points, checked."""
    n, width = len(values), values.dtype.itemsize // 4
    if width == 0:
        return np.array([""]), np.zeros(n, dtype=np.int64)
    word = np.uint64 if values.dtype.itemsize % 8 == 0 else np.uint32
    points = np.ascontiguousarray(values).view(word).reshape(n, -1)
    width = points.shape[1]
    h = np.zeros(n, dtype=np.uint64)
    for j in range(width):
        h *= np.uint64(1000003)
        h += points[:, j]
    inv = _peel(h)
    distinct = values[_a_row(inv, int(inv.max()) + 1)]
    if not np.array_equal(distinct[inv], values):   # a hash collision: sort the strings instead
        uniq, inv = np.unique(values, return_inverse=True)
        return uniq, inv.ravel()
    order = np.argsort(distinct)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return distinct[order], rank[inv]


def _peel(h: np.ndarray, passes: int = 32) -> np.ndarray:
    """Dense codes (in no particular order) of `h`: few distinct values are peeled off one by one
    (a pass each, over what is left), the rest sorted."""
    inv = np.empty(len(h), dtype=np.int64)
    left = np.arange(len(h))
    code = 0
    while left.size and code < passes:
        hit = h[left] == h[left[0]]
        inv[left[hit]] = code
        left = left[~hit]
        code += 1
    if left.size:
        _, rest = np.unique(h[left], return_inverse=True)
        inv[left] = code + rest.ravel()
    return inv


def _cluster_codes(values: np.ndarray) -> np.ndarray:
    """Cluster ids as int64: integers as they are, anything else (e.g. split-group strings) as the
    codes of its sorted distinct values (only equality and order matter)."""
    if values.dtype.kind in "iub" or not values.size:
        return values.astype(np.int64, copy=False)
    return factorize(values.astype(str))[1].astype(np.int64)


def _first_seen() -> defaultdict:
    """A dict that gives each new key the next code (0, 1, ...) on lookup."""
    codes: defaultdict[Any, int] = defaultdict()
    codes.default_factory = codes.__len__
    return codes


@dataclass
class PredictionTable:
    """One row per scored prediction; all columns are numpy arrays of equal length.

    Integer columns: endpoint, variant, item, chain, stage (1..4), step; optional cluster (the
    resampling unit of every interval, e.g. the patient; default: the chain; string ids such as a
    split group are stored as the codes of their sorted distinct values) and n_options (options
    shown; 0 for box / short_text or unknown). String columns (unicode arrays after construction;
    object arrays are converted, None → ""): category, modality, kind, answer_type, outcome; optional
    split (the patient-level split of the item's image; "" when unknown), answer (opaque key of the
    parsed choice answer, "" when not answered / not a choice; equal keys = same answer), cue (key of
    the answer that adopts this row's cue, "" when none or not decidable from keys), subkind
    (wrong_visual_cue: wrong_region / mislabeled; image_ablation: blank / noise / swap;
    box_dose_response: 0.7 / 0.5 / 0.3) and family (parse-method family of the prediction). correct is
    bool; float columns with nan for "none": iou, cue_adopted (0.0 / 1.0 when decided), cue_clean
    (whether the paired clean prediction adopts this row's cue, where keys cannot say) and level
    (box_dose_response target IoU).
    """

    endpoint: np.ndarray
    variant: np.ndarray
    item: np.ndarray
    chain: np.ndarray
    stage: np.ndarray
    step: np.ndarray
    category: np.ndarray
    modality: np.ndarray
    kind: np.ndarray
    answer_type: np.ndarray
    outcome: np.ndarray
    correct: np.ndarray
    iou: np.ndarray
    cue_adopted: np.ndarray
    split: np.ndarray | None = None
    cluster: np.ndarray | None = None
    n_options: np.ndarray | None = None
    answer: np.ndarray | None = None
    cue: np.ndarray | None = None
    cue_clean: np.ndarray | None = None
    level: np.ndarray | None = None
    subkind: np.ndarray | None = None
    family: np.ndarray | None = None
    # factorised columns: name -> (the column array they were computed from, distinct values, codes)
    _codes: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = len(np.asarray(self.endpoint).ravel())
        for name in STR_COLUMNS:
            if getattr(self, name) is None:
                setattr(self, name, np.full(n, "", dtype="U1"))
        for name in FLOAT_COLUMNS:
            if getattr(self, name) is None:
                setattr(self, name, np.full(n, math.nan))
        if self.n_options is None:
            self.n_options = np.zeros(n, dtype=np.int64)
        if self.cluster is None:
            self.cluster = self.chain
        self.cluster = _cluster_codes(np.asarray(self.cluster).ravel())
        for name in INT_COLUMNS:
            setattr(self, name, np.asarray(getattr(self, name), dtype=np.int64).ravel())
        for name in STR_COLUMNS:
            setattr(self, name, _str_array(getattr(self, name)).ravel())
        self.correct = np.asarray(self.correct, dtype=bool).ravel()
        for name in FLOAT_COLUMNS:
            setattr(self, name, _float_array(getattr(self, name)).ravel())
        lengths = {f.name: len(getattr(self, f.name)) for f in fields(self) if f.init}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"columns differ in length: {lengths}")

    @classmethod
    def from_rows(cls, rows: Iterable[tuple], columns: Sequence[str]) -> PredictionTable:
        """Build from tuples in `columns` order (e.g. Django ``values_list(...)``).

        `columns` must name every field except those in OPTIONAL_COLUMNS; None floats become nan,
        None strings "". Rows are read FROM_ROWS_CHUNK at a time, so an iterator (``.iterator()``)
        never has more than one chunk of tuples alive; string columns come with their codes.
        """
        columns = list(columns)
        known = {f.name for f in fields(cls) if f.init}
        unknown = [c for c in columns if c not in known]
        missing = [c for c in known if c not in columns and c not in OPTIONAL_COLUMNS]
        if unknown or missing or len(set(columns)) != len(columns):
            raise ValueError(f"bad columns: unknown {unknown}, missing {sorted(missing)}")
        parts: dict[str, list[np.ndarray]] = {name: [] for name in columns}
        seen: dict[str, defaultdict] = {name: _first_seen() for name in columns if name in STR_COLUMNS}
        it = iter(rows)
        while chunk := list(islice(it, FROM_ROWS_CHUNK)):
            n = len(chunk)
            if set(map(len, chunk)) != {len(columns)}:
                raise ValueError(f"rows must be tuples of {len(columns)} scalars")
            if "cluster" in columns and "cluster" not in seen and isinstance(chunk[0][columns.index("cluster")], str):
                seen["cluster"] = _first_seen()   # string cluster ids (e.g. a split group): coded below
            for j, name in enumerate(columns):   # column by column, straight from the tuples
                get = itemgetter(j)
                if name in seen:           # codes in order of first appearance, shared by the chunks
                    parts[name].append(np.fromiter(map(seen[name].__getitem__, map(get, chunk)), np.int64, n))
                elif name in FLOAT_COLUMNS:
                    parts[name].append(np.array(list(map(get, chunk)), dtype=float).reshape(n))  # None -> nan
                else:
                    parts[name].append(np.fromiter(map(get, chunk), bool if name == "correct" else np.int64, n))
        data: dict[str, Any] = {}
        codes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in columns:
            col = np.concatenate(parts.pop(name)) if parts[name] else np.zeros(0, np.int64)
            if name == "cluster" and name in seen:
                data[name] = _cluster_codes(np.array(list(seen[name]), dtype=object)[col] if len(col) else col)
            elif name in STR_COLUMNS:
                labels = ["" if v is None else str(v) for v in seen[name]]
                uniq, remap = np.unique(np.array(labels or [""], dtype=str), return_inverse=True)  # None, "" merge
                inv = remap.ravel()[col]
                data[name], codes[name] = uniq[inv], (uniq, inv)
            elif name in FLOAT_COLUMNS:
                data[name] = col.astype(float, copy=False)
            else:
                data[name] = col.astype(bool if name == "correct" else np.int64, copy=False)
        for name in OPTIONAL_COLUMNS:
            data.setdefault(name, None)   # filled in by __post_init__
        table = cls(**data)
        for name, (uniq, inv) in codes.items():
            table._codes[name] = (getattr(table, name), uniq, inv)
        return table

    def __len__(self) -> int:
        return len(self.endpoint)

    def codes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(sorted distinct values, per-row code) of a column, computed once per column array."""
        col = getattr(self, name)
        hit = self._codes.get(name)
        if hit is not None and hit[0] is col:
            return hit[1], hit[2]
        uniq, inv = factorize(col)
        self._codes[name] = (col, uniq, inv)
        return uniq, inv

    def isin(self, name: str, values: Sequence[Any]) -> np.ndarray:
        """Row mask: the column's value is one of `values` (through its codes)."""
        uniq, inv = self.codes(name)
        return np.isin(uniq, list(values))[inv]

    def is_(self, name: str, value: Any) -> np.ndarray:
        """Row mask: the column equals `value` (through its codes)."""
        return self.isin(name, (value,))

    def view(self, index: np.ndarray) -> TableView:
        """The rows `index` without copying: columns are taken on first use (see `TableView`)."""
        return TableView(self, index)

    def take(self, index: np.ndarray | slice) -> PredictionTable:
        """The rows selected by a boolean mask, an integer index array or a slice."""
        out = PredictionTable(**{f.name: getattr(self, f.name)[index] for f in fields(self) if f.init})
        for name, (col, uniq, inv) in self._codes.items():
            if col is getattr(self, name):
                out._codes[name] = (getattr(out, name), uniq, inv[index])
        return out


class TableView:
    """Rows `index` of a PredictionTable, read-only: a column is taken (copied) on first use, codes
    come from the table's. `model_metrics` reads one endpoint's rows through a view, so the wide
    string columns it compares through codes are never copied."""

    def __init__(self, table: PredictionTable, index: np.ndarray) -> None:
        self._table, self._index = table, np.asarray(index)
        self._codes: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self._index)

    def __getattr__(self, name: str) -> np.ndarray:   # only for attributes not set yet: the columns
        if name.startswith("_") or name not in _COLUMN_NAMES:
            raise AttributeError(name)
        col = getattr(self._table, name)[self._index]
        setattr(self, name, col)
        return col

    def codes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        if name not in self._codes:
            uniq, inv = self._table.codes(name)
            self._codes[name] = (uniq, inv[self._index])
        return self._codes[name]

    def isin(self, name: str, values: Sequence[Any]) -> np.ndarray:
        uniq, inv = self.codes(name)
        return np.isin(uniq, list(values))[inv]

    def is_(self, name: str, value: Any) -> np.ndarray:
        """Row mask: the column equals `value` (through its codes)."""
        return self.isin(name, (value,))


def group_codes(columns: Sequence[np.ndarray | None],
                codes: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
                ) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Dense group ids for the row-wise combination of `columns`, ordered lexicographically.

    Returns (inverse, keys, first): inverse[i] is row i's group (0..G-1, groups sorted by the
    columns in order), keys[j][g] is the value of column j for group g, first[g] a row of group g.
    `codes` may give each column's (distinct values, codes) already (`PredictionTable.codes`); the
    columns are then not read (they may be None) and the keys come from the codes.
    """
    codes = list(codes) if codes is not None else [factorize(col) for col in columns]
    n = len(codes[0][1]) if codes else 0
    combined, size = np.zeros(n, dtype=np.int64), 1
    for uniq, inv in codes:
        if size * len(uniq) >= 2**62:  # re-densify before the mixed-radix code could overflow
            _, combined = factorize(combined)
            size = int(combined.max()) + 1 if n else 1
        combined = combined * len(uniq) + inv
        size *= len(uniq)
    uniq, inverse = factorize(combined)
    first = _a_row(inverse, len(uniq))
    keys = [uniq[inv[first]] for uniq, inv in codes]
    return inverse, keys, first


def _a_row(inverse: np.ndarray, groups: int) -> np.ndarray:
    """A row of each group (which one is unspecified)."""
    first = np.zeros(groups, dtype=np.int64)
    first[inverse] = np.arange(len(inverse))
    return first


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _rate(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, k / np.maximum(n, 1), np.nan)


def _none(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _cell_intervals(t: PredictionTable, inv: np.ndarray, groups: int, per_endpoint: bool, n_resamples: int,
                    seed: int, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Cluster-bootstrap interval of each group's accuracy: per endpoint (its clusters, numbered in id
    order, and the weights `model_metrics` uses for it) when the groups split endpoints, else over
    every cluster of `t`."""
    lo, hi = np.full(groups, np.nan), np.full(groups, np.nan)
    if per_endpoint:
        _, ep = t.codes("endpoint")
        order = np.argsort(ep, kind="stable")
        bounds = np.searchsorted(ep[order], np.arange(int(ep.max()) + 2))
        parts = [order[bounds[e]:bounds[e + 1]] for e in range(len(bounds) - 1)]
    else:
        parts = [np.arange(len(t))]
    for rows in parts:
        if not rows.size:
            continue
        _, cl = factorize(t.cluster[rows])
        gs, g = factorize(inv[rows])
        n_cl, width = int(cl.max()) + 1, len(gs)
        # (cluster, group) pairs with their rows and correct rows: K = [correct | n], C × 2G, sparse
        pairs, pair = factorize(cl * width + g)
        n_sum = np.bincount(pair, minlength=len(pairs)).astype(float)
        k_sum = np.bincount(pair, weights=t.correct[rows], minlength=len(pairs))
        p_cl, p_g = np.divmod(pairs, width)
        k_mat = sp.csc_matrix((np.concatenate([k_sum, n_sum]), (np.concatenate([p_cl, p_cl]),
                                                                 np.concatenate([p_g, p_g + width]))),
                              shape=(n_cl, 2 * width))
        b = resample_sums(k_mat, n_resamples=n_resamples, seed=seed)   # by blocks of disjoint clusters
        g_lo, g_hi = ratio_intervals(b[:, :width], b[:, width:], np.bincount(p_g, k_sum, width),
                                     np.bincount(p_g, n_sum, width), np.bincount(p_g, minlength=width),
                                     proportion=True, confidence=confidence)
        lo[gs], hi[gs] = g_lo, g_hi
    return lo, hi


def cell_table(t: PredictionTable, by: Sequence[str], *, n_resamples: int = N_RESAMPLES, seed: int = 0,
               confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
    """Per-group counts and rates, one dict per group sorted by the group keys (in `by` order).

    Each dict holds the keys in `by`, then: n; correct (k) with accuracy = k / n and its interval
    acc_lo, acc_hi (cluster bootstrap, `workers.scoring.stats`; per endpoint with that endpoint's
    weights when `by` holds "endpoint", else over every cluster of `t`; None with fewer than 2
    clusters); answered (outcome "answered") and answered_accuracy = k / answered (None when 0);
    chance (mean over the rows of `chance`); abstained / abstention_rate, unparseable /
    unparseable_rate, errors / error_rate (counts of that outcome and their share of n); mean_iou over
    the rows whose iou is not nan (None when there are none) and iou_n, the number of such rows.
    Joint answer + box rows (`joint_rows`): grounded_n (how many), grounded_correct (choice right and
    IoU >= 0.5) with grounded_correct_rate = grounded_correct / grounded_n, box_hits (IoU >= 0.5)
    with box_hit_rate (rates None when grounded_n == 0). Empty `by` gives one group of all rows; an
    empty table gives [].
    """
    by = list(by)
    bad = [b for b in by if b not in GROUP_COLUMNS]
    if bad or len(set(by)) != len(by):
        raise ValueError(f"cannot group by {bad or by}; choose from {GROUP_COLUMNS}")
    n_rows = len(t)
    if n_rows == 0:
        return []
    if by:
        inv, keys, _ = group_codes([None] * len(by), [t.codes(b) for b in by])
        groups = len(keys[0])
    else:
        inv, keys, groups = np.zeros(n_rows, dtype=np.int64), [], 1
    outcomes, outcome_code = t.codes("outcome")
    outcomes = outcomes.tolist()

    def outcome_count(name: str) -> np.ndarray:
        if name not in outcomes:
            return np.zeros(groups)
        return np.bincount(inv, weights=outcome_code == outcomes.index(name), minlength=groups)

    n = np.bincount(inv, minlength=groups)
    k = np.bincount(inv, weights=t.correct, minlength=groups)
    answered, abst = outcome_count("answered"), outcome_count("abstained")
    unp, err = outcome_count("unparseable"), outcome_count("error")
    chance_sum = np.bincount(inv, weights=chance(t), minlength=groups)
    has_iou = ~np.isnan(t.iou)
    iou_n = np.bincount(inv, weights=has_iou, minlength=groups)
    iou_sum = np.bincount(inv, weights=np.where(has_iou, t.iou, 0.0), minlength=groups)
    joint = joint_rows(t)
    hit = joint & (np.where(has_iou, t.iou, 0.0) >= HIT)
    g_n = np.bincount(inv, weights=joint, minlength=groups)
    g_k = np.bincount(inv, weights=hit & t.correct, minlength=groups)
    g_hit = np.bincount(inv, weights=hit, minlength=groups)
    g_rate, hit_rate = _rate(g_k, g_n), _rate(g_hit, g_n)
    lo, hi = _cell_intervals(t, inv, groups, "endpoint" in by, n_resamples, seed, confidence)
    acc, mean_iou, ans_acc = _rate(k, n), _rate(iou_sum, iou_n), _rate(k, answered)
    ab_r, un_r, er_r, ch = _rate(abst, n), _rate(unp, n), _rate(err, n), _rate(chance_sum, n)
    out = []
    for g in range(groups):
        row: dict[str, Any] = {b: _py(keys[j][g]) for j, b in enumerate(by)}
        row.update(n=int(n[g]), correct=int(k[g]), accuracy=float(acc[g]), acc_lo=_none(lo[g]),
                   acc_hi=_none(hi[g]), answered=int(answered[g]), answered_accuracy=_none(ans_acc[g]),
                   chance=float(ch[g]), abstained=int(abst[g]), abstention_rate=float(ab_r[g]),
                   unparseable=int(unp[g]), unparseable_rate=float(un_r[g]), errors=int(err[g]),
                   error_rate=float(er_r[g]), mean_iou=_none(mean_iou[g]), iou_n=int(iou_n[g]),
                   grounded_n=int(g_n[g]), grounded_correct=int(g_k[g]), grounded_correct_rate=_none(g_rate[g]),
                   box_hits=int(g_hit[g]), box_hit_rate=_none(hit_rate[g]))
        out.append(row)
    return out
