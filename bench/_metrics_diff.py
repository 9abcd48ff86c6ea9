"""Two stored metric documents compared (bench/scoring.py): identical, or which values differ beyond
float rounding and the largest relative difference of a float."""
from __future__ import annotations

import json
from pathlib import Path


def _numbers(a, b, path=""):
    """(paths that differ other than by float rounding, largest relative difference of two floats)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out, worst = [], 0.0
        for k in sorted(set(a) | set(b)):
            if k == "scored_at":
                continue
            if k not in a or k not in b:
                out.append(f"{path}/{k}")
                continue
            o, w = _numbers(a[k], b[k], f"{path}/{k}")
            out, worst = out + o, max(worst, w)
        return out, worst
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [path], 0.0
        out, worst = [], 0.0
        for i, (x, y) in enumerate(zip(a, b)):
            o, w = _numbers(x, y, f"{path}[{i}]")
            out, worst = out + o, max(worst, w)
        return out, worst
    if isinstance(a, float) and isinstance(b, float) and a != b:
        rel = abs(a - b) / max(abs(a), abs(b))
        return ([path] if rel > 1e-9 else []), rel
    return ([] if a == b else [path]), 0.0


def compare_metrics(ref: Path, new: Path, what: str = "ref and new") -> None:
    if not (ref.exists() and new.exists()):
        return
    a, b = json.loads(ref.read_text()), json.loads(new.read_text())
    a.pop("scored_at", None)
    b.pop("scored_at", None)
    if a == b:
        print(f"stored metrics, {what}: IDENTICAL")
        return
    differ, worst = _numbers(a, b)
    print(f"stored metrics, {what}: {len(differ)} values differ beyond rounding {differ[:10]}; largest relative "
          f"difference of a float {worst:.1e}")
