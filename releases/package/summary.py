"""The counts a release's card and Croissant metadata print, from one pass over its rows.

`summarise(rows)` reads every row once and keeps only aggregates: sets of item, chain, image and patient
keys (bounded by the number of items and images, never by the number of variants), so it runs over a
`RowStore` of ~1M variants in bounded memory. `Snapshot.summary` computes it once per snapshot.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from releases.package.snapshot import SPLITS, Row
from releases.package.vlmevalkit import CHOICE_TYPES, group_key

DIMENSIONS = ("stage", "category", "modality", "body_region", "variant_kind")


@dataclass
class Tally:
    """Variants and distinct items (and images, patients, chains where asked) of one group of rows."""

    variants: int = 0
    items: set = field(default_factory=set)
    images: set = field(default_factory=set)
    chains: set = field(default_factory=set)
    patients: set = field(default_factory=set)
    licenses: set = field(default_factory=set)

    def add(self, r: Row, *, images: bool = False, chains: bool = False, patients: bool = False,
            licenses: bool = False) -> None:
        self.variants += 1
        self.items.add(r.item_id)
        if images:
            self.images.add(r.image)
        if chains:
            self.chains.add(r.chain_id)
        if patients:
            self.patients.add(r.group)
        if licenses:
            self.licenses.add(r.license)


@dataclass
class Summary:
    rows: int = 0
    items: set = field(default_factory=set)
    chains: set = field(default_factory=set)                 # (split, chain_id)
    splits: dict = field(default_factory=dict)               # split -> Tally (items, chains, images, patients)
    by: dict = field(default_factory=lambda: {d: defaultdict(Tally) for d in DIMENSIONS})
    modality_images: dict = field(default_factory=lambda: defaultdict(set))
    sources: dict = field(default_factory=lambda: defaultdict(Tally))   # source_dataset -> Tally (images, licenses)
    stage_names: dict = field(default_factory=dict)          # stage -> its name (the first row's)
    categories: dict = field(default_factory=dict)           # category -> {category_name, stage, answer_type}
    images: set = field(default_factory=set)                 # every image a row shows
    option_width: dict = field(default_factory=dict)         # answer_type -> most options a row of it has
    rotation_groups: int = 0      # VLMEvalKit groups of the choice rows (see vlmevalkit.group_key), item by item

    def counts(self, dimension: str, order: list | None = None) -> list[tuple]:
        """(value, variants, items) per value of the dimension, in `order` first, then sorted."""
        tallies = self.by[dimension]
        first = [k for k in dict.fromkeys(order or []) if k in tallies]
        ordered = first + sorted(k for k in tallies if k not in first)
        return [(k, tallies[k].variants, len(tallies[k].items)) for k in ordered]

    def modality_variants(self) -> Counter:
        return Counter({k: t.variants for k, t in self.by["modality"].items()})


def summarise(rows: Iterable[Row]) -> Summary:
    s = Summary()
    item, keys = None, set()
    for r in rows:
        if r.answer_type in CHOICE_TYPES:
            if r.item_id != item:
                s.rotation_groups += len(keys)
                item, keys = r.item_id, set()
            keys.add(group_key(r))
        s.rows += 1
        s.items.add(r.item_id)
        s.chains.add((r.split, r.chain_id))
        split = s.splits.get(r.split)
        if split is None:
            split = s.splits[r.split] = Tally()
        split.add(r, images=True, chains=True, patients=True)
        for d in DIMENSIONS:
            s.by[d][getattr(r, d)].add(r)
        s.modality_images[r.modality].add(r.image)
        s.sources[r.source_dataset].add(r, images=True, licenses=True)
        s.stage_names.setdefault(r.stage, r.stage_name)
        s.categories.setdefault(r.category, {"category_name": r.category_name, "stage": r.stage,
                                             "answer_type": r.answer_type})
        s.images.add(r.image)
        if len(r.options) > s.option_width.get(r.answer_type, 0):
            s.option_width[r.answer_type] = len(r.options)
    s.rotation_groups += len(keys)
    s.splits = {k: s.splits[k] for k in SPLITS if k in s.splits}
    return s
