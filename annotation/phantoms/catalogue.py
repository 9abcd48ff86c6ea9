"""Tissue values, display windows and the lesion catalogue of the phantom generator.

CT values are Hounsfield units of a non-contrast scan; MR values are arbitrary units of a
T2-weighted fast spin echo (fat bright, fluid brighter, flowing blood and cortical bone dark).
"""
from __future__ import annotations

from dataclasses import dataclass

TISSUES: dict[str, dict[str, float]] = {
    "CT": dict(
        air=-1000, gas=-900, lung=-860, fat=-100, visceral_fat=-90, renal_sinus=-70, fluid=5,
        bile=8, csf=6, bowel=35, muscle=50, stomach_wall=42, liver=60, spleen=48, kidney=32,
        blood=42, heart=40, vessel=40, wm=28, gm=38, scalp=30, falx=62, bone_cortex=700,
        bone_marrow=220, skull=1000, diploe=450, table=120,
    ),
    "MR": dict(
        air=0, gas=0, lung=40, fat=2100, visceral_fat=1900, renal_sinus=1700, fluid=3300,
        bile=3100, csf=3000, bowel=800, muscle=420, stomach_wall=600, liver=600, spleen=1150,
        kidney=1350, blood=120, heart=500, vessel=150, wm=1100, gm=1500, scalp=1900, falx=250,
        bone_cortex=90, bone_marrow=1400, skull=90, diploe=1300, table=0,
    ),
}

# Fixed display windows (center, width); MR windows are derived from the image itself.
CT_WINDOWS = {"ABDOMEN": (40.0, 400.0), "CHEST": (-600.0, 1500.0), "HEAD": (40.0, 80.0)}

# (modality, body region, weight) of the deterministic mix.
REGIONS = (
    ("CT", "ABDOMEN", 0.30), ("CT", "CHEST", 0.25), ("CT", "HEAD", 0.15),
    ("MR", "HEAD", 0.15), ("MR", "ABDOMEN", 0.15),
)
# organs that can carry lesions, with weights
LESION_ORGANS = {
    "ABDOMEN": (("liver", 0.55), ("spleen", 0.13), ("right kidney", 0.16), ("left kidney", 0.16)),
    "CHEST": (("right lung", 0.5), ("left lung", 0.5)),
    "HEAD": (("brain", 1.0),),
}
LESION_COUNT_P = (0.25, 0.40, 0.22, 0.13)  # P(0 lesions) ... P(3 lesions)

ACQUISITION = {"CT": "non-contrast", "MR": "T2-weighted"}
SERIES_DESCRIPTION = {
    ("CT", "ABDOMEN"): "ABD 5mm STANDARD", ("CT", "CHEST"): "CHEST 5mm LUNG",
    ("CT", "HEAD"): "HEAD 5mm BRAIN", ("MR", "HEAD"): "AX T2 TSE", ("MR", "ABDOMEN"): "AX T2 HASTE",
}


@dataclass(frozen=True)
class LesionType:
    diagnosis: str
    label: str            # 'auto' -> 'nodule' below 30 mm, 'mass' from 30 mm
    lesion_class: str
    composition: str
    density: str
    shapes: tuple[str, ...]
    margins: tuple[str, ...]
    d_min: float          # diameter range in mm
    d_max: float
    value: float          # CT HU / MR intensity of the lesion
    core: float | None    # value of a central component (necrosis, fat, cavity) or None
    weight: float = 1.0


def _t(diag, label, cls, comp, dens, shapes, margins, dmin, dmax, value, core=None, w=1.0):
    return LesionType(diag, label, cls, comp, dens, tuple(shapes.split()), tuple(margins.split()),
                      dmin, dmax, value, core, w)


W, I, S = "well-defined", "ill-defined", "spiculated"
CATALOGUE: dict[tuple[str, str], tuple[LesionType, ...]] = {
    ("CT", "liver"): (
        _t("simple cyst", "cyst", "benign", "cystic", "hypodense", "round oval", W, 6, 40, 5, w=3),
        _t("hemangioma", "auto", "benign", "solid", "hypodense", "oval lobulated", W, 8, 45, 38, w=2),
        _t("hepatocellular carcinoma", "auto", "malignant", "mixed", "hypodense", "lobulated irregular",
           I, 20, 70, 44, 22, w=2),
        _t("metastasis", "auto", "malignant", "solid", "hypodense", "round oval", f"{I} {W}", 8, 35, 34, w=2),
        _t("abscess", "abscess", "benign", "mixed", "hypodense", "irregular oval", I, 20, 55, 40, 12),
        _t("calcified granuloma", "calcification", "benign", "calcified", "hyperdense", "round", W, 3, 8, 450),
    ),
    ("CT", "kidney"): (
        _t("simple cyst", "cyst", "benign", "cystic", "hypodense", "round oval", W, 8, 35, 5, w=3),
        _t("renal cell carcinoma", "auto", "malignant", "mixed", "hypodense", "lobulated irregular",
           I, 15, 50, 24, 10, w=2),
        _t("angiomyolipoma", "auto", "benign", "mixed", "hypodense", "oval lobulated", W, 10, 35, -40, -95),
        _t("renal calculus", "calculus", "benign", "calcified", "hyperdense", "round oval", W, 3, 10, 700),
    ),
    ("CT", "spleen"): (
        _t("splenic cyst", "cyst", "benign", "cystic", "hypodense", "round oval", W, 8, 35, 6, w=2),
        _t("lymphoma", "auto", "malignant", "solid", "hypodense", "round lobulated", I, 10, 40, 30),
        _t("splenic infarct", "infarct", "benign", "solid", "hypodense", "irregular oval", W, 12, 40, 22),
    ),
    ("CT", "lung"): (
        _t("adenocarcinoma", "auto", "malignant", "solid", "hyperdense", "irregular lobulated", S,
           12, 45, 35, w=2),
        _t("squamous cell carcinoma", "mass", "malignant", "mixed", "hyperdense", "irregular",
           f"{I} {S}", 30, 60, 38, -900),
        _t("metastasis", "auto", "malignant", "solid", "hyperdense", "round", W, 5, 25, 30, w=2),
        _t("calcified granuloma", "calcification", "benign", "calcified", "hyperdense", "round", W, 3, 10, 350),
        _t("hamartoma", "auto", "benign", "mixed", "hyperdense", "round lobulated", W, 8, 30, 20, -60),
        _t("pneumonia", "consolidation", "benign", "solid", "hyperdense", "irregular", I, 15, 50, -40),
    ),
    ("CT", "brain"): (
        _t("intraparenchymal hemorrhage", "hemorrhage", "benign", "solid", "hyperdense", "oval irregular",
           W, 10, 40, 72, w=2),
        _t("ischemic infarct", "infarct", "benign", "solid", "hypodense", "irregular oval", I, 15, 45, 14, w=2),
        _t("meningioma", "auto", "benign", "solid", "hyperdense", "round lobulated", W, 10, 40, 55),
        _t("glioblastoma", "mass", "malignant", "mixed", "hypodense", "irregular", I, 25, 55, 22, 8),
        _t("metastasis", "auto", "malignant", "solid", "hyperdense", "round", W, 5, 20, 50),
        _t("calcification", "calcification", "benign", "calcified", "hyperdense", "round", W, 3, 8, 300),
    ),
    ("MR", "liver"): (
        _t("simple cyst", "cyst", "benign", "cystic", "hyperintense", "round oval", W, 6, 40, 3300, w=3),
        _t("hemangioma", "auto", "benign", "solid", "hyperintense", "oval lobulated", W, 8, 45, 2500, w=2),
        _t("hepatocellular carcinoma", "auto", "malignant", "mixed", "hyperintense", "lobulated irregular",
           I, 20, 70, 950, 1500, w=2),
        _t("metastasis", "auto", "malignant", "solid", "hyperintense", "round oval", I, 8, 35, 1050, w=2),
        _t("regenerative nodule", "nodule", "benign", "solid", "hypointense", "round", W, 5, 15, 250),
        _t("abscess", "abscess", "benign", "mixed", "hyperintense", "irregular oval", I, 20, 55, 1500, 2900),
    ),
    ("MR", "kidney"): (
        _t("simple cyst", "cyst", "benign", "cystic", "hyperintense", "round oval", W, 8, 35, 3300, w=3),
        _t("clear cell renal cell carcinoma", "auto", "malignant", "mixed", "hyperintense",
           "lobulated irregular", I, 15, 50, 1800, 2700, w=2),
        _t("papillary renal cell carcinoma", "auto", "malignant", "solid", "hypointense", "round oval",
           W, 10, 35, 600),
        _t("hemorrhagic cyst", "cyst", "benign", "cystic", "hypointense", "round", W, 8, 30, 500),
    ),
    ("MR", "spleen"): (
        _t("splenic cyst", "cyst", "benign", "cystic", "hyperintense", "round oval", W, 8, 35, 3300, w=2),
        _t("lymphoma", "auto", "malignant", "solid", "hypointense", "round lobulated", I, 10, 40, 700),
        _t("hemangioma", "auto", "benign", "solid", "hyperintense", "oval lobulated", W, 8, 30, 2300),
    ),
    ("MR", "brain"): (
        _t("glioblastoma", "mass", "malignant", "mixed", "hyperintense", "irregular", I, 25, 55, 2000, 2900,
           w=2),
        _t("low-grade glioma", "auto", "malignant", "solid", "hyperintense", "oval irregular", I, 15, 45, 1900),
        _t("metastasis", "auto", "malignant", "solid", "hyperintense", "round", W, 5, 25, 1800, w=2),
        _t("demyelinating plaque", "plaque", "benign", "solid", "hyperintense", "oval", W, 4, 15, 2100, w=2),
        _t("cavernoma", "cavernoma", "benign", "mixed", "hypointense", "lobulated", W, 6, 20, 280, 1500),
        _t("chronic hemorrhage", "hemorrhage", "benign", "solid", "hypointense", "oval irregular", W, 8, 30, 260),
    ),
}


def organ_group(organ: str) -> str:
    """'right kidney' -> 'kidney', 'left lung' -> 'lung'."""
    return organ.split()[-1]
