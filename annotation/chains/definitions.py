"""Validated category definitions: what TaskCategory rows hold and curators edit (no Django).

``parse_category(dict) -> CategoryDef`` checks a definition once (pydantic v2): code, name, stage,
answer type, non-empty templates whose ``{placeholders}`` the rule kind provides, and ``rule``, a
union discriminated on ``rule["kind"]`` over the kinds registered with ``@rule_kind``. The returned
``CategoryDef.rule`` is the normalised rule (defaults filled in), JSON-ready for the DB.

``DEFAULT_RULES`` gives a rule for each of the 31 seeded categories. Data-dependent categories
(never generated from the non-contrast phantoms, generated once the data exists):
image-quality (needs boxes of kind 'artifact'), sequence-phase-window on MR (no sequence recorded),
enhancement-relation (lesion attribute 'relation'), severity ('severity'), grade-stage ('grade').
"""
from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from annotation.phantoms.catalogue import CATALOGUE
from annotation.taxonomy_seed import CATEGORIES

from . import rules_detection, rules_lesion  # noqa: F401  (registers the built-in kinds)
from .rules import _VERSION, COMMON_PLACEHOLDERS, RULE_KINDS, RuleBase
from .types import CategoryDef

STAGE_CODES = ("S1", "S2", "S3", "S4")
AnswerType = Literal["single_choice", "yes_no", "multi_choice", "box", "short_text"]


def template_fields(template: str) -> list[str]:
    """Placeholder names of a template; refuses positional, indexed and formatted fields."""
    out = []
    for _, name, spec, conv in string.Formatter().parse(template):
        if name is None:
            continue
        if not name.isidentifier() or spec or conv:
            raise ValueError(f"placeholders must be plain {{name}} fields, got {{{name}{'!' + conv if conv else ''}"
                             f"{':' + spec if spec else ''}}}")
        out.append(name)
    return out


class _CategoryBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=64)
    name: str = Field(min_length=1, max_length=120)
    stage: Literal["S1", "S2", "S3", "S4"]
    answer_type: AnswerType
    templates: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)

    @model_validator(mode="after")
    def _rule_fits(self):
        rule: RuleBase = self.rule  # type: ignore[attr-defined]
        if self.answer_type not in rule.answer_types:
            raise ValueError(f"rule kind {rule.kind!r} answers {sorted(rule.answer_types)}, "
                             f"not answer_type {self.answer_type!r}")
        allowed = rule.placeholders | COMMON_PLACEHOLDERS
        for i, t in enumerate(self.templates, 1):
            if not t.strip():
                raise ValueError(f"template {i} is blank")
            unknown = [f for f in template_fields(t) if f not in allowed]
            if unknown and not rule.any_placeholder:
                raise ValueError(f"template {i} uses unknown placeholder(s) {', '.join(f'{{{u}}}' for u in unknown)};"
                                 f" rule kind {rule.kind!r} provides: {', '.join(sorted(allowed))}")
        return self


_MODEL: list = [None, -1]


def category_model() -> type[BaseModel]:
    """The pydantic model of a category definition over the currently registered rule kinds."""
    if _MODEL[1] != _VERSION[0]:
        kinds = tuple(RULE_KINDS.values())
        rule_t = Annotated[Union[kinds], Field(discriminator="kind")] if len(kinds) > 1 else kinds[0]  # noqa: UP007
        _MODEL[0] = create_model("CategoryDefinition", __base__=_CategoryBase, rule=(rule_t, ...))
        _MODEL[1] = _VERSION[0]
    return _MODEL[0]


def _normalise(data: Mapping[str, Any]) -> dict:
    data = dict(data)
    if "templates" not in data and "prompt_template" in data:
        data["templates"] = [data.pop("prompt_template")]
    if isinstance(data.get("templates"), str):
        data["templates"] = [data["templates"]]
    return data


def validate_category(data: Mapping[str, Any]):
    """The validated pydantic model (raises pydantic.ValidationError)."""
    return category_model().model_validate(_normalise(data))


def parse_category(data: Mapping[str, Any]) -> CategoryDef:
    """Validate a definition ({code, name, stage, answer_type, templates | prompt_template, rule})."""
    m = validate_category(data)
    return CategoryDef(code=m.code, name=m.name, stage=m.stage, answer_type=m.answer_type,
                       templates=tuple(m.templates), rule=m.rule.model_dump(mode="json"))


def category_errors(data: Mapping[str, Any]) -> list[str]:
    """Human-readable problems of a definition (empty when valid), e.g. for an admin form."""
    try:
        validate_category(data)
    except ValidationError as e:
        return [f"{'.'.join(str(p) for p in err['loc']) or 'definition'}: {err['msg']}" for err in e.errors()]
    return []


def default_category_defs() -> list[CategoryDef]:
    """The 31 seeded categories with DEFAULT_RULES, validated."""
    return [parse_category({"code": c, "name": n, "stage": s, "answer_type": a, "templates": [t],
                            "rule": DEFAULT_RULES[c]}) for c, n, s, a, t in CATEGORIES]


# ---------------------------------------------------------------------------------------------
# default vocabularies (phantom catalogue + common clinical terms); curators edit the copies in the DB

ORGANS_BY_REGION = {
    "HEAD": ["brain", "cerebellum", "orbit", "pituitary gland"],
    "NECK": ["thyroid gland", "larynx", "trachea"],
    "CHEST": ["lung", "heart", "esophagus", "breast"],
    "ABDOMEN": ["liver", "spleen", "kidney", "pancreas", "gallbladder", "stomach"],
    "PELVIS": ["urinary bladder", "uterus", "prostate", "rectum"],
}
FINDINGS_BY_ORGAN = {
    "liver": ["cyst", "nodule", "mass", "abscess", "calcification"], "spleen": ["cyst", "nodule", "mass", "infarct"],
    "kidney": ["cyst", "nodule", "mass", "calculus"], "lung": ["nodule", "mass", "consolidation", "calcification"],
    "brain": ["hemorrhage", "infarct", "mass", "nodule", "calcification"],
    "cerebellum": ["hemorrhage", "infarct", "mass"], "pancreas": ["cyst", "mass"],
}
DIAGNOSES = {
    "CT:liver": ["simple cyst", "hemangioma", "hepatocellular carcinoma", "metastasis", "abscess",
                 "calcified granuloma"],
    "CT:kidney": ["simple cyst", "renal cell carcinoma", "angiomyolipoma", "renal calculus"],
    "CT:spleen": ["splenic cyst", "lymphoma", "splenic infarct"],
    "CT:lung": ["adenocarcinoma", "squamous cell carcinoma", "metastasis", "calcified granuloma", "hamartoma",
                "pneumonia"],
    "CT:brain": ["intraparenchymal hemorrhage", "ischemic infarct", "meningioma", "glioblastoma", "metastasis",
                 "calcification"],
    "MR:liver": ["simple cyst", "hemangioma", "hepatocellular carcinoma", "metastasis", "regenerative nodule",
                 "abscess"],
    "MR:kidney": ["simple cyst", "clear cell renal cell carcinoma", "papillary renal cell carcinoma",
                  "hemorrhagic cyst"],
    "MR:spleen": ["splenic cyst", "lymphoma", "hemangioma"],
    "MR:brain": ["glioblastoma", "low-grade glioma", "metastasis", "demyelinating plaque", "cavernoma",
                 "chronic hemorrhage"],
}
EXCLUSIVE = [["renal cell carcinoma", "clear cell renal cell carcinoma", "papillary renal cell carcinoma"],
             ["calcification", "calcified granuloma"],
             ["intraparenchymal hemorrhage", "chronic hemorrhage"]]
NON_NEOPLASTIC = ["abscess", "pneumonia", "intraparenchymal hemorrhage", "chronic hemorrhage", "ischemic infarct",
                  "splenic infarct", "renal calculus", "demyelinating plaque"]
MALIGNANT = ["hepatocellular carcinoma", "metastasis", "renal cell carcinoma", "clear cell renal cell carcinoma",
             "papillary renal cell carcinoma", "lymphoma", "adenocarcinoma", "squamous cell carcinoma",
             "glioblastoma", "low-grade glioma"]
BENIGN = ["simple cyst", "splenic cyst", "hemorrhagic cyst", "hemangioma", "calcified granuloma", "calcification",
          "angiomyolipoma", "hamartoma", "meningioma", "regenerative nodule", "cavernoma"]
SHAPES, MARGINS = ["round", "oval", "lobulated", "irregular"], ["well-defined", "ill-defined", "spiculated"]
DENSITY = {"CT": ["hypodense", "isodense", "hyperdense"], "MR": ["hypointense", "isointense", "hyperintense"]}
PHRASES = {
    "shape": {"round": "round shape", "oval": "oval shape", "lobulated": "lobulated contour",
              "irregular": "irregular shape"},
    "margin": {"well-defined": "well-defined margin", "ill-defined": "ill-defined margin",
               "spiculated": "spiculated margin"},
    "composition": {"cystic": "fluid-filled (cystic) content", "solid": "homogeneous solid content",
                    "mixed": "mixed solid and non-solid content", "calcified": "calcified content"},
    "CT:density": {"hypodense": "hypodense to the surrounding tissue", "isodense": "isodense to the surrounding tissue",
                   "hyperdense": "hyperdense to the surrounding tissue"},
    "MR:density": {"hypointense": "low signal intensity", "isointense": "intermediate signal intensity",
                   "hyperintense": "high signal intensity"},
}


def _s(attribute, value, phrase=None):
    return {"attribute": attribute, "value": value, **({"phrase": phrase} if phrase else {})}


SUPPORTS = {
    "simple cyst": [_s("composition", "cystic")], "splenic cyst": [_s("composition", "cystic")],
    "hemorrhagic cyst": [_s("density", "hypointense", "low T2 signal of blood products")],
    "hemangioma": [_s("density", "hyperintense", "marked T2 hyperintensity"), _s("margin", "well-defined")],
    "hepatocellular carcinoma": [_s("composition", "mixed", "heterogeneous content with necrosis")],
    "metastasis": [_s("shape", "round")],
    "abscess": [_s("composition", "mixed", "central fluid with a thick wall")],
    "calcified granuloma": [_s("composition", "calcified")], "calcification": [_s("composition", "calcified")],
    "renal calculus": [_s("composition", "calcified")],
    "renal cell carcinoma": [_s("composition", "mixed", "heterogeneous content with necrosis")],
    "clear cell renal cell carcinoma": [_s("composition", "mixed", "heterogeneous content with necrosis")],
    "papillary renal cell carcinoma": [_s("density", "hypointense", "homogeneous low T2 signal")],
    "angiomyolipoma": [_s("composition", "mixed", "macroscopic fat")],
    "hamartoma": [_s("composition", "mixed", "intralesional fat")],
    "adenocarcinoma": [_s("margin", "spiculated")],
    "squamous cell carcinoma": [_s("composition", "mixed", "central cavitation"), _s("margin", "spiculated")],
    "pneumonia": [_s("margin", "ill-defined", "ill-defined airspace consolidation")],
    "intraparenchymal hemorrhage": [_s("density", "hyperdense", "hyperdense to brain parenchyma")],
    "ischemic infarct": [_s("density", "hypodense", "hypodense to brain parenchyma")],
    "meningioma": [_s("density", "hyperdense"), _s("margin", "well-defined")],
    "glioblastoma": [_s("composition", "mixed", "central necrosis")],
    "low-grade glioma": [_s("margin", "ill-defined")],
    "demyelinating plaque": [_s("shape", "oval", "ovoid shape")],
    "cavernoma": [_s("composition", "mixed", "mixed signal core with a dark rim")],
    "chronic hemorrhage": [_s("density", "hypointense", "low T2 signal of hemosiderin")],
    "regenerative nodule": [_s("density", "hypointense", "low T2 signal")],
    "splenic infarct": [_s("shape", "irregular", "irregular, wedge-like shape")],
}
NEXT_STEPS = ["no further work-up", "follow-up imaging", "biopsy", "surgical / oncology referral",
              "urgent clinical management", "antibiotic treatment", "drainage and antibiotics", "neurology referral"]
NEXT_BY_DIAGNOSIS = {
    **dict.fromkeys(["simple cyst", "splenic cyst", "calcified granuloma", "calcification", "hemangioma"],
                    "no further work-up"),
    **dict.fromkeys(["hamartoma", "angiomyolipoma", "meningioma", "regenerative nodule", "cavernoma",
                     "hemorrhagic cyst", "chronic hemorrhage", "renal calculus", "splenic infarct"],
                    "follow-up imaging"),
    **dict.fromkeys(["adenocarcinoma", "squamous cell carcinoma", "lymphoma", "metastasis"], "biopsy"),
    **dict.fromkeys(["hepatocellular carcinoma", "renal cell carcinoma", "clear cell renal cell carcinoma",
                     "papillary renal cell carcinoma", "glioblastoma", "low-grade glioma"],
                    "surgical / oncology referral"),
    **dict.fromkeys(["intraparenchymal hemorrhage", "ischemic infarct"], "urgent clinical management"),
    "pneumonia": "antibiotic treatment", "abscess": "drainage and antibiotics",
    "demyelinating plaque": "neurology referral",
}
def _catalogue_profiles() -> dict[str, list[dict]]:
    """Lesion types per 'MOD:organ group' from the phantom catalogue (labels, shapes, margins,
    density, weight): what a plausible lesion report looks like there."""
    out: dict[str, list[dict]] = {}
    for (mod, organ_group), types in CATALOGUE.items():
        out[f"{mod}:{organ_group}"] = [
            {"labels": ["nodule", "mass"] if t.label == "auto" else [t.label], "shapes": list(t.shapes),
             "margins": list(t.margins), "densities": [t.density], "weight": float(t.weight)} for t in types]
    return out


PROFILES = _catalogue_profiles()
_CHOICE = {"findings_by_organ": FINDINGS_BY_ORGAN}
CONTRAST_PHASES = {"CT": ["non-contrast", "arterial phase", "portal venous phase"],
                   "MR": ["T1-weighted", "T2-weighted"]}
IMAGE_QUALITY = ["no limiting artifact", "motion artifact", "excessive image noise"]
ENHANCEMENT = ["non-enhancing", "homogeneous enhancement", "rim enhancement", "heterogeneous enhancement"]
_BOX = {"answer_with_box": True}
_SIZE = [{"label": "< 10 mm", "max": 10}, {"label": "10–20 mm", "min": 10, "max": 20},
         {"label": "20–30 mm", "min": 20, "max": 30}, {"label": "30–50 mm", "min": 30, "max": 50},
         {"label": "> 50 mm", "min": 50}]
_WINDOWS = [{"label": "lung window", "center": [-900, -300], "width": [1000, 2200]},
            {"label": "soft-tissue window", "center": [0, 100], "width": [250, 600]},
            {"label": "brain window", "center": [0, 80], "width": [50, 150]},
            {"label": "bone window", "center": [250, 1000], "width": [1000, 4000]}]

DEFAULT_RULES: dict[str, dict] = {
    # S1 perception
    "modality": {"kind": "image_attribute", "attribute": "modality",
                 "label_map": {"CT": "CT", "MR": "MRI", "CR": "Radiograph", "DX": "Radiograph", "XR": "Radiograph",
                               "US": "Ultrasound", "PT": "PET", "MG": "Mammography"},
                 "pool": ["CT", "MRI", "Radiograph", "Ultrasound", "PET"]},
    "sequence-phase-window": {"kind": "image_attribute", "attribute": "contrast_phase",
                              "label_map": {v: v for vs in CONTRAST_PHASES.values() for v in vs},
                              "pools_by_modality": CONTRAST_PHASES},
    "plane-view": {"kind": "image_attribute", "attribute": "plane",
                   "label_map": {"axial": "axial", "coronal": "coronal", "sagittal": "sagittal"}},
    "body-region": {"kind": "image_attribute", "attribute": "body_region",
                    "label_map": {"HEAD": "head", "NECK": "neck", "CHEST": "chest", "ABDOMEN": "abdomen",
                                  "PELVIS": "pelvis"}},
    "organ-identification": {"kind": "organ_identification", "organs_by_region": ORGANS_BY_REGION},
    "anatomy-box": {"kind": "anatomy_box"},
    "laterality-orientation": {"kind": "laterality"},
    "image-quality": {"kind": "image_attribute", "attribute": "image_quality",
                      "label_map": {v: v for v in IMAGE_QUALITY}, "pool": IMAGE_QUALITY},
    # S2 detection & localization
    "normal-vs-abnormal": {"kind": "abnormality"},
    "finding-presence": {"kind": "finding_presence", **_CHOICE},
    "lesion-count": {"kind": "lesion_count", **_CHOICE},
    "lesion-location": {"kind": "lesion_location", "organs_by_region": ORGANS_BY_REGION},
    "lesion-grounding": {"kind": "lesion_box"},
    "finding-in-box": {"kind": "finding_in_box", **_CHOICE},
    "box-text-match": {"kind": "box_text_match"},
    "list-findings": {"kind": "list_findings", "n_options": 5, "organs_by_region": ORGANS_BY_REGION, **_CHOICE},
    # S3 characterization
    "size": {"kind": "size_bin", "bins": _SIZE, **_BOX},
    "shape": {"kind": "lesion_attribute", "attribute": "shape", "pool": SHAPES, **_BOX},
    "margin": {"kind": "lesion_attribute", "attribute": "margin", "pool": MARGINS, **_BOX},
    "density-intensity": {"kind": "density", "pools": DENSITY, "terms": {"CT": "density", "MR": "signal intensity"},
                          **_BOX},
    "internal-composition": {"kind": "lesion_attribute", "attribute": "composition",
                             "pool": ["solid", "cystic", "mixed", "calcified", "fat-containing"], **_BOX},
    "enhancement-relation": {"kind": "lesion_attribute", "attribute": "enhancement", "pool": ENHANCEMENT, **_BOX},
    "distribution": {"kind": "distribution"},
    "severity": {"kind": "lesion_attribute", "attribute": "severity", "pool": ["mild", "moderate", "severe"], **_BOX},
    # S4 diagnosis & decision
    "diagnosis": {"kind": "diagnosis", "pools": DIAGNOSES, "exclusive": EXCLUSIVE, **_BOX},
    "rule-out-differential": {"kind": "rule_out", "pools": DIAGNOSES, "exclusive": EXCLUSIVE, "supports": SUPPORTS,
                              **_BOX},
    "benign-vs-malignant": {"kind": "lesion_class", "exclude_diagnoses": NON_NEOPLASTIC,
                            "by_diagnosis": {**dict.fromkeys(BENIGN, "benign"),
                                             **dict.fromkeys(MALIGNANT, "malignant")}, **_BOX},
    "grade-stage": {"kind": "lesion_attribute", "attribute": "grade", "pool": ["grade 1", "grade 2", "grade 3"],
                    **_BOX},
    "supporting-finding": {"kind": "supporting_finding", "supports": SUPPORTS, "phrases": PHRASES,
                           "pools": DIAGNOSES, **_BOX},
    "report-verification": {"kind": "report_statement", "profiles": PROFILES,
                            "pools": {"margin": MARGINS, "shape": SHAPES,
                                      **{f"{m}:density": v for m, v in DENSITY.items()}}, **_BOX},
    "next-step": {"kind": "next_step", "by_diagnosis": NEXT_BY_DIAGNOSIS, "pool": NEXT_STEPS, **_BOX},
}
