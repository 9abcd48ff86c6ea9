"""Deterministic train / val / test splits by split group (patient or study key).

A split is a pure function of the image's `split_group`, so every image of one patient lands in
the same split and the assignment never changes when images are added. Releases freeze it; the
`prior` baseline learns from `train` only, so it never sees the answers it is scored on.
"""
from __future__ import annotations

import hashlib

SPLITS = ("train", "val", "test")
DEFAULT_FRACTIONS = (0.7, 0.1, 0.2)


def split_for_group(split_group: str, fractions: tuple[float, float, float] = DEFAULT_FRACTIONS) -> str:
    """"train", "val" or "test" for a split group, from the first 8 bytes of its SHA-256."""
    if abs(sum(fractions) - 1.0) > 1e-9 or min(fractions) < 0:
        raise ValueError(f"split fractions must be non-negative and sum to 1, got {fractions}")
    u = int.from_bytes(hashlib.sha256(split_group.encode()).digest()[:8], "big") / 2**64
    if u < fractions[0]:
        return "train"
    if u < fractions[0] + fractions[1]:
        return "val"
    return "test"
