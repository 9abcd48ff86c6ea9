"""A compact, read-only table of one model's predictions for the metrics (`CodedTable`).

`PredictionTable` holds every string column as a unicode array (4 bytes per character per row) and
every number as int64 / float64. At the paper's scale (15 M predictions in one run) that is about
0.8 KB per prediction, 12 GiB. The scoring service therefore scores one model at a time and hands the
metrics a `CodedTable`: string columns as (sorted distinct labels, codes), numbers in whatever dtype
they were read in. It answers the same interface as `PredictionTable` and `TableView` (`len`, the
columns as attributes, `codes`, `is_`, `isin`, `view`): a column is widened to the `PredictionTable`
dtype (int64, float64, bool, unicode) on first use and kept, so the metrics compute with exactly the
values and dtypes they would get from a `PredictionTable` of the same rows in the same order, and
columns they only compare through codes (category, modality, kind, split, ...) are never widened.

Also here, pure helpers of the scoring service: `answer_keys` (one comparable key per answer text),
`relabel` / `set_where` / `blank_where` (code arithmetic on (labels, codes) pairs) and `json_safe`.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from workers.scoring.table import FLOAT_COLUMNS, INT_COLUMNS, STR_COLUMNS, TableView, factorize

_COLUMNS = frozenset((*INT_COLUMNS, *STR_COLUMNS, *FLOAT_COLUMNS, "correct"))


class CodedTable:
    """Rows of scored predictions (one model's, in the service) with compact columns; module docstring.

    `numbers`: column name -> array (any integer / float / bool dtype); `labels`: string column name ->
    (sorted distinct labels, code per row). A column in neither gets `PredictionTable`'s default ("",
    nan, n_options 0, cluster = chain)."""

    def __init__(self, n: int, numbers: dict[str, np.ndarray], labels: dict[str, tuple[np.ndarray, np.ndarray]]):
        self._n = int(n)
        self._numbers = numbers
        self._labels = labels
        self._codes: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return self._n

    def __getattr__(self, name: str) -> np.ndarray:   # only for columns not widened yet
        if name.startswith("_") or name not in _COLUMNS:
            raise AttributeError(name)
        if name in self._labels:
            uniq, inv = self._labels[name]
            col = uniq[inv] if self._n else np.zeros(0, dtype="U1")
        elif name in self._numbers:
            raw = self._numbers[name]
            col = (raw.astype(bool, copy=False) if name == "correct" else
                   raw.astype(float, copy=False) if name in FLOAT_COLUMNS else raw.astype(np.int64, copy=False))
        elif name in STR_COLUMNS:
            col = np.full(self._n, "", dtype="U1")
        elif name in FLOAT_COLUMNS:
            col = np.full(self._n, math.nan)
        elif name == "cluster":
            col = self.chain
        else:
            col = np.zeros(self._n, dtype=np.int64)
        setattr(self, name, col)
        return col

    def codes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(sorted distinct values, per-row code) of a column, as `PredictionTable.codes`."""
        hit = self._codes.get(name)
        if hit is None:
            if name in self._labels:
                uniq, inv = self._labels[name]
                hit = (uniq, inv.astype(np.int64, copy=False))
            else:
                hit = factorize(getattr(self, name))
            self._codes[name] = hit
        return hit

    def isin(self, name: str, values: Sequence[Any]) -> np.ndarray:
        uniq, inv = self.codes(name)
        return np.isin(uniq, list(values))[inv]

    def is_(self, name: str, value: Any) -> np.ndarray:
        return self.isin(name, (value,))

    def view(self, index: np.ndarray) -> TableView:
        """The rows `index`, taken column by column on first use (`TableView`)."""
        return TableView(self, index)   # type: ignore[arg-type]


def answer_keys(labels: np.ndarray) -> np.ndarray:
    """One canonical key per distinct answer / cue label, whatever JSON text the database gave ('"B"',
    'B', '["A", "C"]', '["A","C"]'): letters upper-cased, a list sorted and joined by commas."""
    out = []
    for label in labels.tolist():
        try:
            value = json.loads(label) if label else ""
        except ValueError:
            value = label
        if isinstance(value, list):
            out.append(",".join(sorted(str(v).strip().upper() for v in value)) or "[]")
        else:
            out.append(str(value).strip().upper() if value is not None else "")
    return np.array(out or [""], dtype=str)


def relabel(labels: np.ndarray, inv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct labels, codes) after mapping each old label to `labels` (equal ones merge)."""
    uniq, remap = np.unique(labels, return_inverse=True)
    return uniq, remap.ravel().astype(np.int32)[inv]


def set_where(uniq: np.ndarray, inv: np.ndarray, mask: np.ndarray, value: str) -> tuple[np.ndarray, np.ndarray]:
    labels = np.append(uniq, value)
    return relabel(labels, np.where(mask, len(uniq), inv))


def blank_where(uniq: np.ndarray, inv: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return set_where(uniq, inv, mask, "")


def json_safe(value):
    """JSON-safe: numpy scalars to Python, NaN to None, keys to str."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
