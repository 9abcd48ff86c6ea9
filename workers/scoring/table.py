"""Column store of scored predictions and vectorised group-by (`cell_table`).

Re-exported by `workers.scoring.metrics`, whose module docstring defines the metrics.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from workers.scoring.stats import wilson_interval

INT_COLUMNS = ("endpoint", "variant", "item", "chain", "stage", "step")
STR_COLUMNS = ("category", "modality", "kind", "answer_type", "outcome", "split")
GROUP_COLUMNS = ("endpoint", "split", "stage", "category", "modality", "kind", "answer_type")
# Columns `from_rows` fills in when absent: category/modality/split "", iou/cue_adopted nan.
OPTIONAL_COLUMNS = ("category", "modality", "iou", "cue_adopted", "split")
CHOICE_ANSWER_TYPES = ("single_choice", "yes_no", "multi_choice")
HIT = 0.5


def joint_rows(t: PredictionTable) -> np.ndarray:
    """Joint answer + box predictions: a choice item with an IoU (only those carry one; see
    workers/scoring/item.py)."""
    return np.isin(t.answer_type, CHOICE_ANSWER_TYPES) & ~np.isnan(t.iou)


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


@dataclass
class PredictionTable:
    """One row per scored prediction; all columns are numpy arrays of equal length.

    Integer columns: endpoint, variant, item, chain, stage (1..4), step. String columns (unicode
    arrays after construction; object arrays are converted, None → ""): category, modality, kind,
    answer_type, outcome, split (the patient-level split of the item's image; "" when unknown,
    optional). correct is bool; iou is float with nan for "no IoU"; cue_adopted is float
    (nan = undecided / no cue, 0.0, 1.0).
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

    def __post_init__(self) -> None:
        if self.split is None:
            self.split = np.full(len(np.asarray(self.endpoint).ravel()), "", dtype="U1")
        for name in INT_COLUMNS:
            setattr(self, name, np.asarray(getattr(self, name), dtype=np.int64).ravel())
        for name in STR_COLUMNS:
            setattr(self, name, _str_array(getattr(self, name)).ravel())
        self.correct = np.asarray(self.correct, dtype=bool).ravel()
        self.iou = _float_array(self.iou).ravel()
        self.cue_adopted = _float_array(self.cue_adopted).ravel()
        lengths = {f.name: len(getattr(self, f.name)) for f in fields(self)}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"columns differ in length: {lengths}")

    @classmethod
    def from_rows(cls, rows: Iterable[tuple], columns: Sequence[str]) -> PredictionTable:
        """Build from tuples in `columns` order (e.g. Django ``values_list(...)``).

        `columns` must name every field except those in OPTIONAL_COLUMNS; None iou / cue_adopted
        become nan, None strings "".
        """
        columns = list(columns)
        known = {f.name for f in fields(cls)}
        unknown = [c for c in columns if c not in known]
        missing = [c for c in known if c not in columns and c not in OPTIONAL_COLUMNS]
        if unknown or missing or len(set(columns)) != len(columns):
            raise ValueError(f"bad columns: unknown {unknown}, missing {sorted(missing)}")
        rows = list(rows)
        n = len(rows)
        grid = np.array(rows, dtype=object) if n else np.zeros((0, len(columns)), dtype=object)
        if grid.shape != (n, len(columns)):
            raise ValueError(f"rows must be tuples of {len(columns)} scalars")
        data: dict[str, Any] = {}
        for j, name in enumerate(columns):
            values = grid[:, j]
            if name in STR_COLUMNS:
                data[name] = _str_array(values)
            elif name in ("iou", "cue_adopted"):
                data[name] = values.astype(float)  # None -> nan
            else:
                data[name] = values.astype(bool if name == "correct" else np.int64)
        for name in OPTIONAL_COLUMNS:
            if name not in data:
                data[name] = np.full(n, "", dtype=str) if name in STR_COLUMNS else np.full(n, math.nan)
        return cls(**data)

    def __len__(self) -> int:
        return len(self.endpoint)

    def take(self, index: np.ndarray) -> PredictionTable:
        """The rows selected by a boolean mask or an integer index array."""
        return PredictionTable(**{f.name: getattr(self, f.name)[index] for f in fields(self)})


def group_codes(columns: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Dense group ids for the row-wise combination of `columns`, ordered lexicographically.

    Returns (inverse, keys, first): inverse[i] is row i's group (0..G-1, groups sorted by the
    columns in order), keys[j][g] is the value of column j for group g, first[g] a row of group g.
    """
    n = len(columns[0]) if columns else 0
    combined, size = np.zeros(n, dtype=np.int64), 1
    for col in columns:
        uniq, inv = np.unique(col, return_inverse=True)
        if size * len(uniq) >= 2**62:  # re-densify before the mixed-radix code could overflow
            uniq_c, combined = np.unique(combined, return_inverse=True)
            combined, size = combined.ravel().astype(np.int64), len(uniq_c)
        combined = combined * len(uniq) + inv.ravel()
        size *= len(uniq)
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    keys = [col[first] for col in columns]
    return inverse.ravel(), keys, first


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _rate(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, k / np.maximum(n, 1), np.nan)


def _none(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def cell_table(t: PredictionTable, by: Sequence[str]) -> list[dict[str, Any]]:
    """Per-group counts and rates, one dict per group sorted by the group keys (in `by` order).

    Each dict holds the keys in `by`, then: n; correct (k) with accuracy = k / n and its Wilson
    interval acc_lo, acc_hi; abstained / abstention_rate, unparseable / unparseable_rate, errors /
    error_rate (counts of that outcome and their share of n); mean_iou over the rows whose iou is not
    nan (None when there are none) and iou_n, the number of such rows. Joint answer + box rows
    (`joint_rows`): grounded_n (how many), grounded_correct (choice right and IoU >= 0.5) with
    grounded_correct_rate = grounded_correct / grounded_n, box_hits (IoU >= 0.5) with box_hit_rate
    (rates None when grounded_n == 0). Empty `by` gives one group of all rows; an empty table gives [].
    """
    by = list(by)
    bad = [b for b in by if b not in GROUP_COLUMNS]
    if bad or len(set(by)) != len(by):
        raise ValueError(f"cannot group by {bad or by}; choose from {GROUP_COLUMNS}")
    n_rows = len(t)
    if n_rows == 0:
        return []
    if by:
        inv, keys, _ = group_codes([getattr(t, b) for b in by])
        groups = len(keys[0])
    else:
        inv, keys, groups = np.zeros(n_rows, dtype=np.int64), [], 1
    n = np.bincount(inv, minlength=groups)
    k = np.bincount(inv, weights=t.correct, minlength=groups)
    abst = np.bincount(inv, weights=t.outcome == "abstained", minlength=groups)
    unp = np.bincount(inv, weights=t.outcome == "unparseable", minlength=groups)
    err = np.bincount(inv, weights=t.outcome == "error", minlength=groups)
    has_iou = ~np.isnan(t.iou)
    iou_n = np.bincount(inv, weights=has_iou, minlength=groups)
    iou_sum = np.bincount(inv, weights=np.where(has_iou, t.iou, 0.0), minlength=groups)
    joint = joint_rows(t)
    hit = joint & (np.where(np.isnan(t.iou), 0.0, t.iou) >= HIT)
    g_n = np.bincount(inv, weights=joint, minlength=groups)
    g_k = np.bincount(inv, weights=hit & t.correct, minlength=groups)
    g_hit = np.bincount(inv, weights=hit, minlength=groups)
    g_rate, hit_rate = _rate(g_k, g_n), _rate(g_hit, g_n)
    lo, hi = wilson_interval(k, n)
    acc, mean_iou = _rate(k, n), _rate(iou_sum, iou_n)
    ab_r, un_r, er_r = _rate(abst, n), _rate(unp, n), _rate(err, n)
    out = []
    for g in range(groups):
        row: dict[str, Any] = {b: _py(keys[j][g]) for j, b in enumerate(by)}
        row.update(n=int(n[g]), correct=int(k[g]), accuracy=float(acc[g]), acc_lo=float(lo[g]),
                   acc_hi=float(hi[g]), abstained=int(abst[g]), abstention_rate=float(ab_r[g]),
                   unparseable=int(unp[g]), unparseable_rate=float(un_r[g]), errors=int(err[g]),
                   error_rate=float(er_r[g]), mean_iou=_none(mean_iou[g]), iou_n=int(iou_n[g]),
                   grounded_n=int(g_n[g]), grounded_correct=int(g_k[g]), grounded_correct_rate=_none(g_rate[g]),
                   box_hits=int(g_hit[g]), box_hit_rate=_none(hit_rate[g]))
        out.append(row)
    return out
