"""Importing images: decode → hash → deduplicate → de-identify → render → store → rows + audit.

The per-file engine is `annotation.services.ingest_files`; the parallel import on Celery workers
(chunks of one batch) is `annotation.services.ingest_parallel`. Each file is imported atomically:
its rows, its files and its audit event appear together or not at all. A bad file is recorded
(ImportFileResult with a stable code) and the batch goes on. No patient data reaches the logs:
only codes, counts and hash prefixes.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.ingest import SourceLimits, hashing, iter_sources, iter_uploads
from annotation.ingest.types import DecodedFrame, DecodeOptions
from annotation.models import Image, ImportBatch, ImportFileResult
from annotation.services.ingest_commit import discard_unreferenced
from annotation.services.ingest_files import FileImporter
from annotation.storage import StoredFile
from audit.services import audit_record

logger = logging.getLogger(__name__)


class Source(Protocol):
    name: str

    def read(self) -> bytes: ...


@dataclass
class BytesSource:
    """An uploaded file (or anything already in memory)."""

    name: str
    data: bytes

    def read(self) -> bytes:
        return self.data


@dataclass(frozen=True)
class ImportDefaults:
    """What the importer fills in when the file itself does not say."""

    source_dataset: str = ""
    license: str = ""
    modality: str = ""
    body_region: str = ""
    split_group: str = ""  # overrides the key derived from the file


def decode_options() -> DecodeOptions:
    return DecodeOptions(
        uid_salt=settings.MEDR2_DEID_SALT,
        max_pixels=settings.MEDR2_MAX_IMAGE_PIXELS,
        max_file_bytes=settings.MEDR2_MAX_FILE_BYTES,
        max_decoded_bytes=settings.MEDR2_MAX_DECODED_BYTES,
    )


def source_limits() -> SourceLimits:
    """Sizes and ZIP limits for expanding what is handed in (docs/configuration.md)."""
    return SourceLimits(
        max_file_bytes=settings.MEDR2_MAX_FILE_BYTES, max_zip_total_bytes=settings.MEDR2_ZIP_MAX_TOTAL_BYTES,
        max_zip_ratio=settings.MEDR2_ZIP_MAX_RATIO, max_zip_members=settings.MEDR2_ZIP_MAX_MEMBERS,
    )


def path_sources(paths: Iterable[str]) -> list:
    """The files under `paths` (files, folders, ZIP archives) for `images_import`, lazily readable."""
    limits = source_limits()
    return list(iter_sources(paths, max_file_bytes=limits.max_file_bytes,
                             max_zip_total_bytes=limits.max_zip_total_bytes, max_zip_ratio=limits.max_zip_ratio,
                             max_zip_members=limits.max_zip_members))


def frame_sha256(frame: DecodedFrame) -> str:
    """Content hash of one frame's source pixels (dtype and shape included): `Image.sha256`."""
    return frame.sha256 or hashing.frame_sha256(frame.pixels)


def import_batch_start(*, actor, source: str, defaults: ImportDefaults, files_total: int | None = None,
                       options: dict | None = None) -> ImportBatch:
    with transaction.atomic():
        batch = ImportBatch.objects.create(
            source=source, source_dataset=defaults.source_dataset, license=defaults.license,
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
            files_total=files_total, options=options or {},
        )
        audit_record(actor=actor, action="annotation.import_batch.start", target=batch,
                     after={"source": source, "source_dataset": defaults.source_dataset, "license": defaults.license,
                            "files_total": files_total})
    return batch


def import_batch_finish(*, batch: ImportBatch, actor) -> ImportBatch:
    """Close the batch (once: a second call, e.g. from a redelivered chunk, changes nothing)."""
    with transaction.atomic():
        batch = ImportBatch.objects.select_for_update().get(pk=batch.pk)
        if batch.finished_at is not None:
            return batch
        batch.finished_at = timezone.now()
        batch.save(update_fields=["finished_at"])
        audit_record(actor=actor, action="annotation.import_batch.finish", target=batch, after={
            "files_imported": batch.files_imported, "files_duplicate": batch.files_duplicate,
            "files_failed": batch.files_failed, "images_created": batch.images_created,
        })
    return batch


def image_import_source(
    *, batch: ImportBatch, source: Source, actor, defaults: ImportDefaults = ImportDefaults(),
    options: DecodeOptions | None = None,
) -> ImportFileResult:
    """Import one file. Never raises for a bad file: the outcome is the returned row."""
    importer = FileImporter(batch=batch, actor=actor, defaults=defaults, options=options or decode_options(),
                            pipeline=False)
    with importer:
        importer.add(source)
    return importer.results[0]


def _discard_unreferenced(written: list[StoredFile]) -> None:
    """Remove the files this failed import created, unless a committed row now uses them."""
    discard_unreferenced(written)


def images_import(
    *, sources: Iterable[Source], actor, source: str = ImportBatch.Source.COMMAND,
    defaults: ImportDefaults = ImportDefaults(), on_result: Callable[[ImportFileResult], None] | None = None,
    option_overrides: dict | None = None,
) -> ImportBatch:
    """Import many files as one batch in this process; each file on its own (`ingest_files.FileImporter`:
    decoding overlaps the writing of the previous file's stored files)."""
    batch = import_batch_start(actor=actor, source=source, defaults=defaults)
    options = replace(decode_options(), **(option_overrides or {}))
    with FileImporter(batch=batch, actor=actor, defaults=defaults, options=options, on_result=on_result) as importer:
        for position, src in enumerate(sources):
            importer.add(src, position=position)
    return import_batch_finish(batch=batch, actor=actor)


def images_upload(*, files: Iterable, actor, defaults: ImportDefaults = ImportDefaults()) -> ImportBatch:
    """Import uploaded files (Django `UploadedFile`s, page or API) as one batch. Each file's size is
    checked before it is read (``MEDR2_UPLOAD_MAX_BYTES``); a ZIP is expanded one level with the
    limits of `source_limits`, every refused member reported under its own name."""
    sources = iter_uploads(((f.name, f, f.size) for f in files), limits=source_limits(),
                           max_upload_bytes=settings.MEDR2_UPLOAD_MAX_BYTES)
    return images_import(sources=sources, actor=actor, source=ImportBatch.Source.UPLOAD, defaults=defaults)


def image_assign(*, images: Iterable[Image], user, actor) -> int:
    """Give annotators/adjudicators access to images (their querysets are scoped to these)."""
    ids = [img.pk for img in images]
    with transaction.atomic():
        Image.assignees.through.objects.bulk_create(
            [Image.assignees.through(image_id=i, user_id=user.pk) for i in ids], ignore_conflicts=True
        )
        audit_record(actor=actor, action="annotation.image.assign", object_type="auth.user", object_id=user.pk,
                     after={"image_ids": ids, "user": user.get_username()},
                     objects=[("annotation.image", i) for i in ids])
    return len(ids)


def image_unassign(*, images: Iterable[Image], user, actor) -> int:
    """Take images away from a reader; returns how many were assigned to them."""
    with transaction.atomic():
        rows = Image.assignees.through.objects.filter(user_id=user.pk, image_id__in=[img.pk for img in images])
        ids = sorted(rows.values_list("image_id", flat=True))
        if ids:
            rows.delete()
            audit_record(actor=actor, action="annotation.image.unassign", object_type="auth.user",
                         object_id=user.pk, before={"image_ids": ids, "user": user.get_username()},
                         objects=[("annotation.image", i) for i in ids])
    return len(ids)


def image_metadata_update(*, image: Image, values: dict, actor) -> Image:
    """Merge image-level facts (e.g. ``image_quality``, ``contrast_phase``) into ``Image.metadata``.

    Keys are non-empty strings and values JSON scalars (str, int, float, bool, None); a key set to
    None is removed. Only keys whose value changes are written and audited; nothing changes -> no event."""
    if not isinstance(values, dict) or not values:
        raise ValueError("values must be a non-empty dict of metadata keys to values")
    for key, value in values.items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"metadata keys must be non-empty strings, got {key!r}")
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise ValueError(f"metadata value of {key!r} must be a string, number, boolean or None")
    with transaction.atomic():
        image = Image.objects.select_for_update().get(pk=image.pk)
        metadata = dict(image.metadata or {})
        before = {k: metadata.get(k) for k in values if metadata.get(k) != values[k]}
        if not before:
            return image
        for key in before:
            if values[key] is None:
                metadata.pop(key, None)
            else:
                metadata[key] = values[key]
        image.metadata = metadata
        image.save(update_fields=["metadata"])
        audit_record(actor=actor, action="annotation.image.metadata_update", target=image,
                     before=before, after={k: values[k] for k in before})
    return image
