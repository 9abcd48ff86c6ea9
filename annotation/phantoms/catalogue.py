"""Tissue values, acquisitions, display windows and the lesion catalogue of the phantom generator.

CT values are Hounsfield units; ``TISSUES["CT"]`` is the non-contrast scan and ``CT_PHASE_TISSUES``
overrides what enhances in the arterial and portal venous phases (iodine in arteries, veins and
perfused organs; brain parenchyma behind the blood-brain barrier barely changes). MR values are
arbitrary units: ``TISSUES["MR"]`` is a T2-weighted fast spin echo (fat bright, fluid brighter, flowing
blood and cortical bone dark), ``MR_T1_TISSUES`` a T1-weighted scan (fat bright, fluid dark, white
matter brighter than grey matter).
"""
from __future__ import annotations

from dataclasses import dataclass

TISSUES: dict[str, dict[str, float]] = {
    "CT": dict(
        air=-1000, gas=-900, lung=-860, fat=-100, visceral_fat=-90, renal_sinus=-70, fluid=5,
        bile=8, csf=6, bowel=35, muscle=50, stomach_wall=42, liver=60, spleen=48, kidney=32,
        blood=42, artery=42, vein=40, heart=40, vessel=40, wm=28, gm=38, scalp=30, falx=62,
        bone_cortex=700, bone_marrow=220, skull=1000, diploe=450, table=120,
    ),
    "MR": dict(
        air=0, gas=0, lung=40, fat=2100, visceral_fat=1900, renal_sinus=1700, fluid=3300,
        bile=3100, csf=3000, bowel=800, muscle=420, stomach_wall=600, liver=600, spleen=1150,
        kidney=1350, blood=120, artery=110, vein=160, heart=500, vessel=150, wm=1100, gm=1500,
        scalp=1900, falx=250, bone_cortex=90, bone_marrow=1400, skull=90, diploe=1300, table=0,
    ),
}
MR_T1_TISSUES: dict[str, float] = dict(
    TISSUES["MR"], lung=30, fat=2300, visceral_fat=2150, renal_sinus=1900, fluid=280, bile=420, csf=250,
    bowel=750, muscle=800, stomach_wall=850, liver=1300, spleen=900, kidney=950, blood=150, artery=120,
    vein=180, heart=800, vessel=200, wm=1450, gm=1000, scalp=2000, falx=300, bone_marrow=1900, diploe=1800,
)
CT_PHASE_TISSUES: dict[str, dict[str, float]] = {
    "non-contrast": dict(TISSUES["CT"]),
    "arterial phase": dict(TISSUES["CT"], artery=320, blood=320, vein=70, vessel=95, heart=230, kidney=165,
                           spleen=105, liver=75, muscle=55, stomach_wall=95, bowel=70, gm=41, wm=29, falx=95,
                           scalp=36),
    "portal venous phase": dict(TISSUES["CT"], artery=170, blood=170, vein=160, vessel=175, heart=150,
                                kidney=170, spleen=120, liver=115, muscle=62, stomach_wall=85, bowel=68, gm=42,
                                wm=30, falx=110, scalp=38),
}

# --- acquisition vocabularies (ground truth values, used verbatim by the chain generator) ---------
PLANES = ("axial", "coronal", "sagittal")
IMAGE_QUALITIES = ("no limiting artifact", "motion artifact", "excessive image noise")
CT_PHASES = ("non-contrast", "arterial phase", "portal venous phase")
MR_SEQUENCES = ("T1-weighted", "T2-weighted")
# (phase, weight) per (modality, region). Head CT is non-contrast or arterial (CT angiography): a
# "portal venous" head CT is not a thing; body CT leans to portal venous so that CT overall is ~1/3 each.
CONTRAST_PHASES = {
    ("CT", "ABDOMEN"): (("non-contrast", 0.29), ("arterial phase", 0.29), ("portal venous phase", 0.42)),
    ("CT", "CHEST"): (("non-contrast", 0.29), ("arterial phase", 0.29), ("portal venous phase", 0.42)),
    ("CT", "HEAD"): (("non-contrast", 0.5), ("arterial phase", 0.5)),
    ("MR", "HEAD"): (("T1-weighted", 0.5), ("T2-weighted", 0.5)),
    ("MR", "ABDOMEN"): (("T1-weighted", 0.5), ("T2-weighted", 0.5)),
}
ENHANCED_PHASES = ("arterial phase", "portal venous phase")
ENHANCEMENTS = ("non-enhancing", "homogeneous enhancement", "rim enhancement", "heterogeneous enhancement")
SEVERITIES = ("mild", "moderate", "severe")
GRADES = ("grade 1", "grade 2", "grade 3")


def tissues(modality: str, phase: str) -> dict[str, float]:
    """Tissue table of one acquisition ('CT' + a CT phase, or 'MR' + a sequence)."""
    if modality == "CT":
        return CT_PHASE_TISSUES[phase]
    return MR_T1_TISSUES if phase == "T1-weighted" else TISSUES["MR"]


# Fixed display windows (center, width); MR windows are derived from the image itself.
CT_WINDOWS = {"ABDOMEN": (40.0, 400.0), "CHEST": (-600.0, 1500.0), "HEAD": (40.0, 80.0)}

# (modality, body region, weight) of the deterministic mix.
REGIONS = (
    ("CT", "ABDOMEN", 0.30), ("CT", "CHEST", 0.25), ("CT", "HEAD", 0.15),
    ("MR", "HEAD", 0.15), ("MR", "ABDOMEN", 0.15),
)
# organs that can carry lesions, with weights (a plane shows a subset: see anatomy_planes.py)
LESION_ORGANS = {
    "ABDOMEN": (("liver", 0.55), ("spleen", 0.13), ("right kidney", 0.16), ("left kidney", 0.16)),
    "CHEST": (("right lung", 0.5), ("left lung", 0.5)),
    "HEAD": (("brain", 1.0),),
}
LESION_COUNT_P = (0.45, 0.20, 0.20, 0.15)  # P(0 lesions) ... P(3 lesions) drawn (placement may drop some)

_PLANE_ABBR = {"axial": "AX", "coronal": "COR", "sagittal": "SAG"}
_CT_SERIES = {"ABDOMEN": "ABD 5mm STANDARD", "CHEST": "CHEST 5mm LUNG", "HEAD": "HEAD 5mm BRAIN"}
_CT_PHASE_ABBR = {"non-contrast": "NC", "arterial phase": "ART", "portal venous phase": "PV"}
_MR_SERIES = {("HEAD", "T1-weighted"): "T1 SE", ("HEAD", "T2-weighted"): "T2 TSE",
              ("ABDOMEN", "T1-weighted"): "T1 GRE", ("ABDOMEN", "T2-weighted"): "T2 HASTE"}


def series_description(modality: str, region: str, plane: str, phase: str) -> str:
    """'COR ABD 5mm STANDARD PV', 'SAG T1 SE', ..."""
    if modality == "CT":
        return f"{_PLANE_ABBR[plane]} {_CT_SERIES[region]} {_CT_PHASE_ABBR[phase]}"
    return f"{_PLANE_ABBR[plane]} {_MR_SERIES[(region, phase)]}"


@dataclass(frozen=True)
class LesionType:
    diagnosis: str
    label: str            # 'auto' -> 'nodule' below 30 mm, 'mass' from 30 mm
    lesion_class: str
    composition: str
    density: str          # CT: any phase; MR: on T2
    shapes: tuple[str, ...]
    margins: tuple[str, ...]
    d_min: float          # diameter range in mm
    d_max: float
    value: float          # CT HU (non-contrast) / MR T2 intensity of the lesion
    core: float | None    # value of a central component (necrosis, fat, cavity) or None
    weight: float = 1.0
    enhancement: tuple[str, ...] = ()   # CT: what it may look like on a contrast-enhanced scan
    t1: tuple[float, float | None, str] | None = None   # MR: (value, core, density) on T1
    grades: tuple[str, ...] = ()        # malignant: histological grades it may carry


_ENH = {"N": "non-enhancing", "H": "homogeneous enhancement", "R": "rim enhancement",
        "X": "heterogeneous enhancement"}


def _t(diag, label, cls, comp, dens, shapes, margins, dmin, dmax, value, core=None, w=1.0, enh="", t1=None,
       grades=None):
    if grades is None:
        grades = GRADES if cls == "malignant" else ()
    return LesionType(diag, label, cls, comp, dens, tuple(shapes.split()), tuple(margins.split()),
                      dmin, dmax, value, core, w, tuple(_ENH[e] for e in enh), t1, tuple(grades))


W, I, S = "well-defined", "ill-defined", "spiculated"
HYPO, HYPER = "hypointense", "hyperintense"
CATALOGUE: dict[tuple[str, str], tuple[LesionType, ...]] = {
    ("CT", "liver"): (
        _t("simple cyst", "cyst", "benign", "cystic", "hypodense", "round oval", W, 6, 40, 5, w=3, enh="N"),
        _t("hemangioma", "auto", "benign", "solid", "hypodense", "oval lobulated", W, 8, 45, 38, w=2, enh="HX"),
        _t("hepatocellular carcinoma", "auto", "malignant", "mixed", "hypodense", "lobulated irregular",
           I, 20, 70, 44, 22, w=2, enh="X"),
        _t("metastasis", "auto", "malignant", "solid", "hypodense", "round oval", f"{I} {W}", 8, 35, 34, w=2,
           enh="R"),
        _t("abscess", "abscess", "benign", "mixed", "hypodense", "irregular oval", I, 20, 55, 40, 12, enh="R"),
        _t("calcified granuloma", "calcification", "benign", "calcified", "hyperdense", "round", W, 3, 8, 450,
           enh="N"),
    ),
    ("CT", "kidney"): (
        _t("simple cyst", "cyst", "benign", "cystic", "hypodense", "round oval", W, 8, 35, 5, w=3, enh="N"),
        _t("renal cell carcinoma", "auto", "malignant", "mixed", "hypodense", "lobulated irregular",
           I, 15, 50, 24, 10, w=2, enh="X"),
        _t("angiomyolipoma", "auto", "benign", "mixed", "hypodense", "oval lobulated", W, 10, 35, -40, -95,
           enh="X"),
        _t("renal calculus", "calculus", "benign", "calcified", "hyperdense", "round oval", W, 3, 10, 700,
           enh="N"),
    ),
    ("CT", "spleen"): (
        _t("splenic cyst", "cyst", "benign", "cystic", "hypodense", "round oval", W, 8, 35, 6, w=2, enh="N"),
        _t("lymphoma", "auto", "malignant", "solid", "hypodense", "round lobulated", I, 10, 40, 30, enh="H"),
        _t("splenic infarct", "infarct", "benign", "solid", "hypodense", "irregular oval", W, 12, 40, 22,
           enh="N"),
    ),
    ("CT", "lung"): (
        _t("adenocarcinoma", "auto", "malignant", "solid", "hyperdense", "irregular lobulated", S,
           12, 45, 35, w=2, enh="HX"),
        _t("squamous cell carcinoma", "mass", "malignant", "mixed", "hyperdense", "irregular",
           f"{I} {S}", 30, 60, 38, -900, enh="R"),
        _t("metastasis", "auto", "malignant", "solid", "hyperdense", "round", W, 5, 25, 30, w=2, enh="HR"),
        _t("calcified granuloma", "calcification", "benign", "calcified", "hyperdense", "round", W, 3, 10, 350,
           enh="N"),
        _t("hamartoma", "auto", "benign", "mixed", "hyperdense", "round lobulated", W, 8, 30, 20, -60, enh="NX"),
        _t("pneumonia", "consolidation", "benign", "solid", "hyperdense", "irregular", I, 15, 50, -40, enh="H"),
    ),
    ("CT", "brain"): (
        _t("intraparenchymal hemorrhage", "hemorrhage", "benign", "solid", "hyperdense", "oval irregular",
           W, 10, 40, 72, w=2, enh="N"),
        _t("ischemic infarct", "infarct", "benign", "solid", "hypodense", "irregular oval", I, 15, 45, 14, w=2,
           enh="N"),
        _t("meningioma", "auto", "benign", "solid", "hyperdense", "round lobulated", W, 10, 40, 55, enh="H"),
        # glioblastoma is WHO CNS grade 4, outside the 1-3 scale: no grade recorded
        _t("glioblastoma", "mass", "malignant", "mixed", "hypodense", "irregular", I, 25, 55, 16, 6, enh="R",
           grades=()),
        _t("metastasis", "auto", "malignant", "solid", "hyperdense", "round", W, 5, 20, 50, enh="R"),
        _t("calcification", "calcification", "benign", "calcified", "hyperdense", "round", W, 3, 8, 300, enh="N"),
    ),
    ("MR", "liver"): (
        _t("simple cyst", "cyst", "benign", "cystic", HYPER, "round oval", W, 6, 40, 3300, w=3,
           t1=(280, None, HYPO)),
        _t("hemangioma", "auto", "benign", "solid", HYPER, "oval lobulated", W, 8, 45, 2500, w=2,
           t1=(600, None, HYPO)),
        _t("hepatocellular carcinoma", "auto", "malignant", "mixed", HYPER, "lobulated irregular",
           I, 20, 70, 950, 1500, w=2, t1=(850, 450, HYPO)),
        _t("metastasis", "auto", "malignant", "solid", HYPER, "round oval", I, 8, 35, 1050, w=2,
           t1=(750, None, HYPO)),
        _t("regenerative nodule", "nodule", "benign", "solid", HYPO, "round", W, 5, 15, 250,
           t1=(1900, None, HYPER)),
        _t("abscess", "abscess", "benign", "mixed", HYPER, "irregular oval", I, 20, 55, 1500, 2900,
           t1=(700, 330, HYPO)),
    ),
    ("MR", "kidney"): (
        _t("simple cyst", "cyst", "benign", "cystic", HYPER, "round oval", W, 8, 35, 3300, w=3,
           t1=(280, None, HYPO)),
        _t("clear cell renal cell carcinoma", "auto", "malignant", "mixed", HYPER,
           "lobulated irregular", I, 15, 50, 1800, 2700, w=2, t1=(650, 380, HYPO)),
        _t("papillary renal cell carcinoma", "auto", "malignant", "solid", HYPO, "round oval",
           W, 10, 35, 600, t1=(600, None, HYPO)),
        _t("hemorrhagic cyst", "cyst", "benign", "cystic", HYPO, "round", W, 8, 30, 500, t1=(1900, None, HYPER)),
    ),
    ("MR", "spleen"): (
        _t("splenic cyst", "cyst", "benign", "cystic", HYPER, "round oval", W, 8, 35, 3300, w=2,
           t1=(280, None, HYPO)),
        _t("lymphoma", "auto", "malignant", "solid", HYPO, "round lobulated", I, 10, 40, 700,
           t1=(650, None, HYPO)),
        _t("hemangioma", "auto", "benign", "solid", HYPER, "oval lobulated", W, 8, 30, 2300,
           t1=(550, None, HYPO)),
    ),
    ("MR", "brain"): (
        _t("glioblastoma", "mass", "malignant", "mixed", HYPER, "irregular", I, 25, 55, 2000, 2900,
           w=2, t1=(650, 350, HYPO), grades=()),
        # low grade = WHO grade 1-2
        _t("low-grade glioma", "auto", "malignant", "solid", HYPER, "oval irregular", I, 15, 45, 1900,
           t1=(700, None, HYPO), grades=GRADES[:2]),
        _t("metastasis", "auto", "malignant", "solid", HYPER, "round", W, 5, 25, 1800, w=2,
           t1=(720, None, HYPO)),
        _t("demyelinating plaque", "plaque", "benign", "solid", HYPER, "oval", W, 4, 15, 2100, w=2,
           t1=(700, None, HYPO)),
        _t("cavernoma", "cavernoma", "benign", "mixed", HYPO, "lobulated", W, 6, 20, 280, 1500,
           t1=(2300, 1500, HYPER)),
        _t("chronic hemorrhage", "hemorrhage", "benign", "solid", HYPO, "oval irregular", W, 8, 30, 260,
           t1=(2000, None, HYPER)),
    ),
}


def organ_group(organ: str) -> str:
    """'right kidney' -> 'kidney', 'left lung' -> 'lung'."""
    return organ.split()[-1]
