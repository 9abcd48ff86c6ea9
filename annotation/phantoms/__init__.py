"""Deterministic synthetic CT/MR phantoms with lesions of known ground truth.

Pure Python (numpy, Pillow, pydicom); no Django. Everything is a function of (seed, index):

    from annotation.phantoms import generate_phantom, write_phantoms
    ph = generate_phantom(7, seed=0)
    ph.pixels, ph.lesions, ph.organs, ph.to_dicom_bytes(), ph.ground_truth()

What varies, and at which level (a patient's series shares the patient-level draws):
- patient: modality and body region, sex, age, body size, pixel spacing; the plane ('axial',
  'coronal', 'sagittal', ~1/3 each) and the contrast phase (CT: 'non-contrast', 'arterial phase',
  'portal venous phase'; MR: 'T1-weighted', 'T2-weighted');
- image: image quality ('no limiting artifact', 'motion artifact', 'excessive image noise', ~1/3
  each), the side of a sagittal section, slice jitter, 0-3 lesions (about half the images normal);
- lesion: type (diagnosis, class, composition), shape, margin, density on this acquisition, size and
  the severity it implies, grade (malignant only), enhancement (contrast-enhanced CT only).
Every label is rendered (see `acquisition.py`): the pixels support what the ground truth says.
Ingest reads the plane back from ImageOrientationPatient; the demo loader stores image quality and
contrast phase in Image.metadata and lesion attributes in Finding.attributes.
"""
from .catalogue import (
    CATALOGUE,
    CT_PHASES,
    ENHANCEMENTS,
    GRADES,
    IMAGE_QUALITIES,
    MR_SEQUENCES,
    PLANES,
    SEVERITIES,
    TISSUES,
)
from .core import (
    IMAGES_PER_PATIENT,
    Lesion,
    Phantom,
    generate_phantom,
    generate_phantoms,
    mask_box,
    render_preview,
    write_phantoms,
)

__all__ = [
    "CATALOGUE", "CT_PHASES", "ENHANCEMENTS", "GRADES", "IMAGES_PER_PATIENT", "IMAGE_QUALITIES", "Lesion",
    "MR_SEQUENCES", "PLANES", "Phantom", "SEVERITIES", "TISSUES", "generate_phantom", "generate_phantoms",
    "mask_box", "render_preview", "write_phantoms",
]
