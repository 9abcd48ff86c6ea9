"""Plain data for chain and variant generation (no Django).

The Django services (`annotation/services/chains.py`, `annotation/services/variants.py`) turn rows
into these facts, call the pure generators, and write the results in bulk.

Answer encoding (used for QAItem.gold_answer and the generators' gold values):
- single_choice: the option text (str); `options` lists option texts in the order shown
- yes_no: "yes" or "no"; options are ["yes", "no"]
- multi_choice: list of option texts that are correct, in option order
- box: [x0, y0, x1, y1] pixel floats (x1/y1 exclusive); options are []
- short_text: str
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class BoxFact:
    """An active grounding box with its finding."""

    id: int                     # GroundingBox id
    finding_id: int
    kind: str                   # "lesion" | "anatomy"
    label: str                  # "nodule", "mass", "cyst", ... or an organ name ("liver", "left kidney")
    xyxy: Box
    attributes: dict = field(default_factory=dict)  # lesion: organ, diameter_mm, shape, margin, density,
                                                    # composition, lesion_class, diagnosis; anatomy: organ


@dataclass(frozen=True)
class ImageFacts:
    image_id: int
    width: int
    height: int
    modality: str               # "CT", "MR", "" ...
    body_region: str            # "ABDOMEN", "CHEST", "HEAD", "" ...
    plane: str = ""             # "axial" | "coronal" | "sagittal" | ""
    window_center: float | None = None
    window_width: float | None = None
    split_group: str = ""
    boxes: tuple[BoxFact, ...] = ()
    attributes: dict = field(default_factory=dict)   # image-level facts from Image.metadata (IMAGE_FACT_KEYS):
                                                     # image_quality, contrast_phase, ...


@dataclass(frozen=True)
class CategoryDef:
    """A task category as the generator sees it (validated in `definitions.py`)."""

    code: str
    name: str
    stage: str                  # "S1".."S4"
    answer_type: str            # single_choice | yes_no | multi_choice | box | short_text
    templates: tuple[str, ...]  # question templates with {placeholders}
    rule: dict                  # how to derive gold and distractors; schema in definitions.py


@dataclass(frozen=True)
class StepSpec:
    """One generated chain step (becomes a QAItem)."""

    step: int                   # 1-based order in the chain
    stage: str
    category: str               # CategoryDef.code
    answer_type: str
    question: str
    options: list
    gold: Any
    evidence_box_ids: tuple[int, ...] = ()
    meta: dict = field(default_factory=dict)   # template index, option-order seed, focus finding id, ...


@dataclass(frozen=True)
class ItemFacts:
    """A QA item version as the variant generator sees it."""

    item_id: int
    stage: str
    category: str
    answer_type: str
    question: str
    options: list
    gold: Any
    image: ImageFacts
    evidence: tuple[BoxFact, ...] = ()
    earlier_steps: tuple[StepSpec, ...] = ()          # the chain's earlier steps, in order
    swap_image_ids: tuple[int, ...] = ()               # same modality+region, another split group (for ablation)
    answer_with_box: bool = False                      # the category asks for the answer and the lesion's box


@dataclass(frozen=True)
class VariantSpec:
    kind: str                   # annotation.models.VariantKind value
    params: dict
    seed: int
    prompt: str                 # exactly what the model sees as text
    options: list               # option texts in the order shown (letters A, B, ... follow this order)
    expected_answer: dict       # {"value": ..., "letter": "B" | ["A","C"] | None, ...}
    image_recipe: dict | None   # None: the item's image unchanged; see annotation/variants/render.py
    parent_kind: str | None = "clean"   # lineage: every perturbation derives from the clean variant
