"""Builders of PredictionTables straight from numpy columns (planted behaviour, property tests)."""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from workers.scoring.metrics import PredictionTable

DEFAULTS: dict[str, Any] = {"endpoint": 1, "stage": 1, "step": None, "category": "c", "modality": "CT",
                            "kind": "clean", "answer_type": "single_choice", "outcome": "answered", "correct": True,
                            "iou": math.nan, "cue_adopted": math.nan}


def table(**columns: Any) -> PredictionTable:
    """A table from column arrays (scalars broadcast). Required: variant, item; chain defaults to item,
    step to stage; every other column has a default."""
    n = len(np.atleast_1d(columns["variant"]))
    cols = {**DEFAULTS, **columns}
    cols.setdefault("chain", cols["item"])
    if cols["step"] is None:
        cols["step"] = cols["stage"]
    out = {}
    for name, v in cols.items():
        arr = np.asarray(v)
        out[name] = np.full(n, v) if arr.ndim == 0 else arr
    return PredictionTable(**out)


def concat(tables: Iterable[PredictionTable]) -> PredictionTable:
    from dataclasses import fields

    tables = list(tables)
    return PredictionTable(**{f.name: np.concatenate([getattr(t, f.name) for t in tables])
                              for f in fields(PredictionTable) if f.init})


def rows_of(d: dict[str, list]) -> PredictionTable:
    """A table from a dict of equal-length lists."""
    return table(**{k: np.array(v) for k, v in d.items()})
