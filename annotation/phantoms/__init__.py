"""Deterministic synthetic CT/MR phantoms with lesions of known ground truth.

Pure Python (numpy, Pillow, pydicom); no Django. Everything is a function of (seed, index):

    from annotation.phantoms import generate_phantom, write_phantoms
    ph = generate_phantom(7, seed=0)
    ph.pixels, ph.lesions, ph.organs, ph.to_dicom_bytes(), ph.ground_truth()
"""
from .catalogue import CATALOGUE, TISSUES
from .core import (
    IMAGES_PER_PATIENT, Lesion, Phantom, generate_phantom, generate_phantoms, mask_box, render_preview,
    write_phantoms,
)

__all__ = [
    "CATALOGUE", "IMAGES_PER_PATIENT", "Lesion", "Phantom", "TISSUES", "generate_phantom",
    "generate_phantoms", "mask_box", "render_preview", "write_phantoms",
]
