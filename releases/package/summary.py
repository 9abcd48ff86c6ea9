"""The counts a release's card and Croissant metadata print, from one pass over its rows.

`summarise(rows)` (or `Summary.add` row by row, then `finish`) reads every row once and keeps only
aggregates: sets of item, chain, image and patient keys (bounded by the number of items and images, never
by the number of variants), so it runs over a `RowStore` of ~1M variants in bounded memory. A RowStore
counts its rows as it spools them (no pass of its own); `Snapshot.summary` is that, or, for a list of
rows, computed once per snapshot.
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
    _item: int | None = None      # the item being counted, and its groups' keys (add/finish)
    _keys: set = field(default_factory=set)

    def counts(self, dimension: str, order: list | None = None) -> list[tuple]:
        """(value, variants, items) per value of the dimension, in `order` first, then sorted."""
        tallies = self.by[dimension]
        first = [k for k in dict.fromkeys(order or []) if k in tallies]
        ordered = first + sorted(k for k in tallies if k not in first)
        return [(k, tallies[k].variants, len(tallies[k].items)) for k in ordered]

    def modality_variants(self) -> Counter:
        return Counter({k: t.variants for k, t in self.by["modality"].items()})

    def add(self, r: Row) -> None:
        """Count one row (rows come in snapshot order: an item's variants are adjacent)."""
        if r.answer_type in CHOICE_TYPES:
            if r.item_id != self._item:
                self.rotation_groups += len(self._keys)
                self._item, self._keys = r.item_id, set()
            self._keys.add(group_key(r))
        self.rows += 1
        self.items.add(r.item_id)
        self.chains.add((r.split, r.chain_id))
        split = self.splits.get(r.split)
        if split is None:
            split = self.splits[r.split] = Tally()
        split.add(r, images=True, chains=True, patients=True)
        for d in DIMENSIONS:
            self.by[d][getattr(r, d)].add(r)
        self.modality_images[r.modality].add(r.image)
        self.sources[r.source_dataset].add(r, images=True, licenses=True)
        self.stage_names.setdefault(r.stage, r.stage_name)
        self.categories.setdefault(r.category, {"category_name": r.category_name, "stage": r.stage,
                                                "answer_type": r.answer_type})
        self.images.add(r.image)
        if len(r.options) > self.option_width.get(r.answer_type, 0):
            self.option_width[r.answer_type] = len(r.options)

    def finish(self) -> Summary:
        self.rotation_groups += len(self._keys)
        self._item, self._keys = None, set()
        self.splits = {k: self.splits[k] for k in SPLITS if k in self.splits}
        return self


def summarise(rows: Iterable[Row]) -> Summary:
    s = Summary()
    for r in rows:
        s.add(r)
    return s.finish()
