"""The frozen snapshot of a release, read from the database (releases.package.snapshot is the contract).

Rows: every variant of every item version the release holds, in a stable order. Images: each
item's PNG and each rendered variant image, once, named by the SHA-256 of its bytes (what ships).
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from annotation.models import GroundingBox, Image, QAItem, Variant
from annotation.services.variants import variant_image_path
from annotation.storage import resolve
from annotation.variants import letters_for

from .models import Release, ReleaseItem
from .package.files import ReleaseError
from .package.snapshot import SPLITS, Box, Change, ImageFile, Row, RowStore, Snapshot, sort_key

HOMEPAGE = "https://github.com/med-r2/med-r2-studio"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _group_hash(split_group: str, image_id: int) -> str:
    return hashlib.sha256((split_group or f"image:{image_id}").encode()).hexdigest()[:16]


def _expected(variant: Variant, answer_type: str) -> tuple[object, list[str]]:
    """The variant's expected answer (the gold as this variant asks it: option text(s), yes/no or a
    box) and its letter(s) among the options as shown ([] for boxes and free text)."""
    record = variant.expected_answer
    value = record.get("value") if isinstance(record, dict) and "value" in record else record
    letters = record.get("letter") if isinstance(record, dict) else None
    if letters is None and variant.options:
        try:
            letters = letters_for(variant.options, value, answer_type)
        except (ValueError, TypeError):
            letters = None
    return value, ([letters] if isinstance(letters, str) else list(letters or []))


ITEM_BATCH = 500


def _item_batches(release: Release) -> Iterator[list[int]]:
    """The release's item ids in snapshot order (split, chain, step), in batches that never cut between
    items sharing a (split, chain, step): a batch's rows, sorted, continue the order of the batch before."""
    keyed = sorted((SPLITS.index(split), chain, step, item) for item, split, chain, step in
                   ReleaseItem.objects.filter(release=release).values_list("item_id", "split", "item__chain_id",
                                                                           "item__step").iterator(5000))
    batch: list[int] = []
    for n, (split, chain, step, item) in enumerate(keyed):
        batch.append(item)
        following = keyed[n + 1][:3] if n + 1 < len(keyed) else None
        if len(batch) >= ITEM_BATCH and following != (split, chain, step):
            yield batch
            batch = []
    if batch:
        yield batch


def _rows(release: Release, ship) -> Iterator[Row]:
    """Every frozen variant as a Row, in snapshot order, a batch of items at a time."""
    for item_ids in _item_batches(release):
        frozen = {ri.item_id: ri for ri in ReleaseItem.objects.filter(release=release, item_id__in=item_ids)}
        items = {i.pk: i for i in QAItem.objects.filter(pk__in=item_ids).select_related(
            "stage", "category", "chain__image")}
        boxes: dict[int, list[Box]] = {}
        through = QAItem.evidence_boxes.through.objects.filter(qaitem_id__in=item_ids).values_list(
            "qaitem_id", "groundingbox_id")
        box_rows = {b.pk: b for b in GroundingBox.objects.filter(pk__in={b for _, b in through})}
        for item_id, box_id in sorted(through):
            b = box_rows[box_id]
            boxes.setdefault(item_id, []).append(Box(float(b.x0), float(b.y0), float(b.x1), float(b.y1), b.label))
        rows: list[Row] = []
        variant_ids = [vid for ri in frozen.values() for vid in ri.variant_ids]
        for v in Variant.objects.filter(pk__in=variant_ids).order_by("item_id", "pk"):
            item = items[v.item_id]
            image = item.chain.image
            v.item = item
            deid = {**image.deid, "burned_in": str(image.metadata.get("burned_in_annotation", "")).upper()}
            base = ship(resolve(image.file), image, deid)
            shown = ship(variant_image_path(v), image, {}) if v.image_recipe else base
            options = list(v.options or [])
            params = dict(v.params or {})
            answer, letters = _expected(v, item.category.answer_type)
            rows.append(Row(
                id=f"{item.item_key}:v{item.version}:{v.pk}", split=frozen[item.pk].split,
                group=_group_hash(image.split_group, image.pk), chain_id=item.chain_id, step=item.step,
                stage=item.stage.code, stage_name=item.stage.name, category=item.category.code,
                category_name=item.category.name, answer_type=item.category.answer_type, item_id=item.pk,
                item_key=str(item.item_key), item_version=item.version, question=item.question, prompt=v.prompt,
                options=options, answer=answer, answer_letters=letters,
                evidence_boxes=boxes.get(item.pk, []), image=shown, width=image.width, height=image.height,
                modality=image.modality, body_region=image.body_region, source_dataset=image.source_dataset,
                license=image.license, variant_id=v.pk, variant_kind=v.kind, parent_variant_id=v.parent_id,
                variant_params=params, cue_letter=params.get("cue_letter")))
        rows.sort(key=sort_key)
        yield from rows


def release_snapshot(*, release: Release, spool: Path | None = None) -> Snapshot:
    """Everything the build writes, from the release's frozen item versions. With `spool` (a file path), the
    rows go to a RowStore there, read from the database a batch of items at a time, so a release of ~1M
    variants is never held in memory; without it, a list (small releases)."""
    images: dict[str, ImageFile] = {}
    by_source: dict[Path, str] = {}

    def ship(path: Path, image: Image, deid: dict) -> str:
        if path not in by_source:
            if not path.exists():
                raise ReleaseError(f"image file missing from storage: {path.name} (image {image.pk})")
            rel = f"images/{_sha256_file(path)}.png"
            by_source[path] = rel
            images.setdefault(rel, ImageFile(rel, path, image.width, image.height, deid))
        return by_source[path]

    rows = RowStore.create(_rows(release, ship), spool) if spool is not None else list(_rows(release, ship))
    return Snapshot(
        name=release.name, version=release.version, title=release.title, description=release.description,
        license=release.license, created=release.created_date.isoformat(), homepage=HOMEPAGE, rows=rows,
        images=dict(sorted(images.items())), taxonomy=release.taxonomy, taxonomy_version=release.taxonomy_version,
        reference_standard=release.reference_standard, shortcut_audit=release.shortcut_audit,
        excluded=release.excluded, changes=[Change(c["kind"], c["item_key"], c.get("from_version"),
                                                   c.get("to_version"), c["reason"]) for c in release.changes],
        previous_version=release.previous.version if release.previous_id else None,
        audit_head=release.audit_head,
        deidentification={"profile": "DICOM PS3.15 Annex E Basic Application Level Confidentiality Profile",
                          "revision": "2024b", "nifti": "header scrub (descrip, extensions)",
                          "shipped": "rendered PNGs only; no DICOM/NIfTI headers, no text chunks"})
