"""Where a pulled box came from: drawn by the reader, a pre-annotation accepted unchanged, or one they
modified.  Pure Python: no Django, no database.

Label Studio keeps a pre-filled region's id when the annotator submits it, and its editor marks the
region's `origin` ("prediction" while untouched, "prediction-changed" once edited, "manual" when drawn).
Both are used, and the geometry and labels are compared with the prediction's, so an API client that
copies a prediction without `origin` is caught too:

* the region's id is a prediction's region id: ``modified`` when its origin says it changed or its
  rectangle or labels differ from the prediction's, else ``accepted``;
* no such prediction, origin "prediction" / "prediction-changed": ``accepted`` / ``modified``;
* otherwise ``drawn``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ACCEPTED", "DRAWN", "MODIFIED", "region_provenance"]

DRAWN, ACCEPTED, MODIFIED = "drawn", "accepted", "modified"
_GEOMETRY = ("x", "y", "width", "height")
_EPS_PERCENT = 1e-6


def _same_rectangle(a: Mapping, b: Mapping) -> bool:
    va, vb = a.get("value") or {}, b.get("value") or {}
    if a.get("from_name") != b.get("from_name"):
        return False
    for key in _GEOMETRY:
        x, y = va.get(key), vb.get(key)
        if not isinstance(x, int | float) or not isinstance(y, int | float) or abs(x - y) > _EPS_PERCENT:
            return False
    if abs(float(va.get("rotation") or 0) - float(vb.get("rotation") or 0)) > _EPS_PERCENT:
        return False
    return sorted(map(str, va.get("rectanglelabels") or [])) == sorted(map(str, vb.get("rectanglelabels") or []))


def region_provenance(result: Any, predictions: Any) -> dict[str, str]:
    """Result id -> provenance for every rectangle of an annotation `result`, given the task's
    `predictions` (Label Studio's list of ``{"result": [...]}``). Malformed entries are skipped."""
    predicted: dict[str, Mapping] = {}
    for prediction in predictions if isinstance(predictions, list) else []:
        items: Iterable = prediction.get("result") or [] if isinstance(prediction, Mapping) else []
        for item in items:
            if isinstance(item, Mapping) and item.get("type") == "rectanglelabels" and isinstance(item.get("id"), str):
                predicted.setdefault(item["id"], item)
    out: dict[str, str] = {}
    for item in result if isinstance(result, list) else []:
        if not isinstance(item, Mapping) or item.get("type") != "rectanglelabels":
            continue
        if not isinstance(item.get("id"), str):
            continue
        origin = item.get("origin")
        source = predicted.get(item["id"])
        if source is not None:
            changed = origin == "prediction-changed" or not _same_rectangle(item, source)
            out[item["id"]] = MODIFIED if changed else ACCEPTED
        elif origin == "prediction":
            out[item["id"]] = ACCEPTED
        elif origin == "prediction-changed":
            out[item["id"]] = MODIFIED
        else:
            out[item["id"]] = DRAWN
    return out
