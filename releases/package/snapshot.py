"""What a release freezes, as plain data: the contract between the database side (releases.services)
and the writers (one module per format). Everything a writer needs is here; writers never query.

Determinism: rows are sorted (split, chain_id, step, kind, variant_id), dicts are emitted with sorted
keys, and nothing depends on the clock except `created`, a fixed date string stored on the release.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class ImageFile:
    """One PNG shipped once under `images/`: `path` inside the release ("images/<sha256>.png"),
    `source` the file on disk to copy, and what the PHI check reads (`deid`: the de-identification
    record of the source image; {} for a rendered variant image, which inherits its source's)."""

    path: str
    source: Path
    width: int
    height: int
    deid: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float
    label: str

    def as_list(self) -> list:
        return [self.x0, self.y0, self.x1, self.y1, self.label]


@dataclass(frozen=True)
class Row:
    """One item variant as a model sees it (clean or perturbed), with its item's frozen version."""

    id: str                      # stable across builds: "<item_key>:v<item_version>:<variant_id>"
    split: str                   # train / val / test (patient-level)
    group: str                   # the patient/study key the split is drawn on (a hash; no PHI)
    chain_id: int
    step: int                    # 1.. in the chain's reading order
    stage: str                   # S1..S4
    stage_name: str
    category: str                # task category code
    category_name: str
    answer_type: str             # single_choice / yes_no / box / multi_choice / short_text
    item_id: int                 # the QAItem version frozen
    item_key: str                # stable identity across versions
    item_version: int
    question: str                # the item's question
    prompt: str                  # the variant's prompt as shown to a model (may carry a cue)
    options: list                # option texts, in the order shown (letters A, B, ... by position)
    answer: object               # expected answer of this variant (option text(s), yes/no, or a box)
    answer_letters: list         # letters of `answer` among `options` ([] when not a choice)
    evidence_boxes: list[Box]    # pixels on the item's image
    image: str                   # release path of the image this variant shows
    width: int
    height: int
    modality: str
    body_region: str
    source_dataset: str
    license: str
    variant_id: int
    variant_kind: str            # clean or a perturbation kind
    parent_variant_id: int | None
    variant_params: dict
    cue_letter: str | None = None  # the option a cue points to (wrong for misleading kinds)


@dataclass(frozen=True)
class Change:
    """One changelog line against the previous release."""

    kind: str                    # added / removed / changed
    item_key: str
    from_version: int | None
    to_version: int | None
    reason: str                  # from the item version's change reason or the adjudication verdict


@dataclass(frozen=True)
class Snapshot:
    name: str                    # e.g. "med-r2"
    version: str                 # semver, e.g. "1.2.0"
    title: str
    description: str
    license: str                 # SPDX id of the release (the sources' licenses are per row)
    created: str                 # ISO date, fixed when the release was created
    homepage: str
    rows: list[Row]
    images: dict[str, ImageFile]   # by release path
    taxonomy: list[dict]           # [{"stage", "stage_name", "category", "category_name", "answer_type"}]
    taxonomy_version: str          # SHA-256 of the canonical taxonomy
    reference_standard: dict       # annotators/adjudicators by role (counts), agreement, adjudication outcomes
    shortcut_audit: dict | None    # the latest shortcut audit summary on these items, when there is one
    excluded: dict                 # {"rejected": n, "ambiguous": n, "open_case": n, "included_anyway": {...}}
    changes: list[Change]
    previous_version: str | None
    audit_head: str                # the audit chain's head hash at release time
    deidentification: dict         # profile name/revision, method summary

    def rows_in(self, split: str) -> list[Row]:
        return [r for r in self.rows if r.split == split]

    @property
    def splits(self) -> list[str]:
        return [s for s in SPLITS if any(r.split == s for r in self.rows)]
