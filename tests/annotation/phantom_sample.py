"""The shared phantom sample of the phantom tests (seed 0), and how they pick and read phantoms.

Pure numpy/pydicom, no database: the tests only need Django because tests/conftest.py imports it."""
from __future__ import annotations

import io
from functools import cache

import pydicom

from annotation.phantoms import Phantom, generate_phantoms

N = 300  # phantoms of seed 0 shared by the tests


@cache
def sample() -> tuple[Phantom, ...]:
    return tuple(generate_phantoms(N, seed=0))


def lesion_pairs():
    for ph in sample():
        for lesion, mask in zip(ph.lesions, ph.lesion_masks):
            yield ph, lesion, mask


def first(modality: str, region: str, *, with_lesions: bool = False, plane: str | None = None,
          phase: str | None = None, quality: str | None = None) -> Phantom:
    return next(p for p in sample() if (p.modality, p.body_region) == (modality, region)
                and (p.lesions or not with_lesions) and plane in (None, p.plane)
                and phase in (None, p.contrast_phase) and quality in (None, p.image_quality))


def read(ph: Phantom) -> pydicom.Dataset:
    return pydicom.dcmread(io.BytesIO(ph.to_dicom_bytes()))
