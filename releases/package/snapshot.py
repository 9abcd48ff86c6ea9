"""What a release freezes, as plain data: the contract between the database side (releases.services)
and the writers (one module per format). Everything a writer needs is here; writers never query.

Determinism: rows are sorted (split, chain_id, step, kind, variant_id), dicts are emitted with sorted
keys, and nothing depends on the clock except `created`, a fixed date string stored on the release.

Memory: `Snapshot.rows` is a list (tests, small releases) or a `RowStore`, the rows spooled to one file on
disk in pickled chunks and read back one chunk at a time, so a release of ~1M variants never holds its
rows in memory. Writers only iterate (`snapshot.rows`, `snapshot.rows_in(split)`) and count
(`len(snapshot.rows)`, `snapshot.count_in(split)`); each pass over a RowStore holds one chunk.
"""
from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
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


def sort_key(row: Row) -> tuple:
    """The order of a snapshot's rows."""
    return (SPLITS.index(row.split), row.chain_id, row.step, row.variant_kind, row.variant_id)


class RowStore:
    """Rows spooled to `path` as pickled chunks of at most `chunk_rows` rows, split by split in SPLITS order;
    iterating reads one chunk at a time. The clean variants are spooled a second time on their own (about
    1/7 of the rows), so the SFT writer, which reads only them, does not unpickle every row. Build one with
    `RowStore.create(rows, path)`, rows in snapshot order (checked: a row out of order is a ValueError).
    Picklable (it is the path, the chunk indexes and the summary)."""

    CHUNK_ROWS = 5000

    def __init__(self, path: Path, chunks: dict[str, list[tuple[int, int, int]]], summary=None,
                 clean: dict[str, list[tuple[int, int, int]]] | None = None):
        self.path = Path(path)
        self.chunks = chunks         # split -> [(offset, length, rows), ...]
        self.summary = summary       # releases.package.summary.Summary, counted while spooling
        self.clean = clean           # split -> chunks of the clean variants alone

    @classmethod
    def create(cls, rows: Iterable[Row], path: Path, *, chunk_rows: int | None = None) -> RowStore:
        from releases.package.summary import Summary  # it imports this module

        size = chunk_rows or cls.CHUNK_ROWS
        summary = Summary()
        chunks: dict[str, list[tuple[int, int, int]]] = {s: [] for s in SPLITS}
        clean_chunks: dict[str, list[tuple[int, int, int]]] = {s: [] for s in SPLITS}
        every: list[Row] = []
        clean: list[Row] = []
        last = None
        with open(path, "wb") as f:
            def flush(buffer: list[Row], index: dict) -> None:
                if buffer:
                    data = pickle.dumps(buffer, protocol=pickle.HIGHEST_PROTOCOL)
                    index[buffer[0].split].append((f.tell(), len(data), len(buffer)))
                    f.write(data)
                    buffer.clear()

            for row in rows:
                if row.split not in chunks:
                    raise ValueError(f"row {row.id}: unknown split {row.split!r}")
                key = sort_key(row)
                if last is not None and key < last:
                    raise ValueError(f"row {row.id} is out of order (rows go in snapshot order)")
                for buffer, index in ((every, chunks), (clean, clean_chunks)):
                    if buffer and (len(buffer) >= size or buffer[0].split != row.split):
                        flush(buffer, index)
                every.append(row)
                if row.variant_kind == "clean":
                    clean.append(row)
                summary.add(row)
                last = key
            flush(every, chunks)
            flush(clean, clean_chunks)
        return cls(path, chunks, summary.finish(), clean_chunks)

    def in_split(self, split: str, *, clean_only: bool = False) -> Iterator[Row]:
        index = self.clean if clean_only and self.clean is not None else self.chunks
        with open(self.path, "rb") as f:
            for offset, length, _ in index.get(split, []):
                f.seek(offset)
                rows = pickle.loads(f.read(length))
                yield from (r for r in rows if r.variant_kind == "clean") if clean_only else rows

    def count(self, split: str) -> int:
        return sum(n for _, _, n in self.chunks.get(split, []))

    def __iter__(self) -> Iterator[Row]:
        for split in SPLITS:
            yield from self.in_split(split)

    def __len__(self) -> int:
        return sum(self.count(s) for s in SPLITS)


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
    rows: list[Row] | RowStore    # in snapshot order (sort_key)
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

    def rows_in(self, split: str) -> Iterable[Row]:
        if isinstance(self.rows, RowStore):
            return self.rows.in_split(split)
        return [r for r in self.rows if r.split == split]

    def clean_rows_in(self, split: str) -> Iterable[Row]:
        """The split's clean variants (the items as written), in snapshot order."""
        if isinstance(self.rows, RowStore):
            return self.rows.in_split(split, clean_only=True)
        return [r for r in self.rows if r.split == split and r.variant_kind == "clean"]

    def count_in(self, split: str) -> int:
        if isinstance(self.rows, RowStore):
            return self.rows.count(split)
        return sum(1 for r in self.rows if r.split == split)

    @property
    def splits(self) -> list[str]:
        return [s for s in SPLITS if self.count_in(s)]

    @cached_property
    def summary(self):
        """The card's and Croissant's counts (releases.package.summary), from one pass over the rows."""
        from releases.package.summary import summarise  # it imports this module

        if isinstance(self.rows, RowStore) and self.rows.summary is not None:
            return self.rows.summary
        return summarise(self.rows)
