"""Importing images: decode → de-identify → render → deduplicate → store → rows + audit.

Each file is imported atomically: its rows, its files and its audit event appear together
or not at all. A bad file is recorded (ImportFileResult with a stable code) and the batch
goes on. No patient data reaches the logs: only codes, counts and hash prefixes.
"""
from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotation.ingest import SourceLimits, decode, iter_sources, iter_uploads
from annotation.ingest.types import DecodedFrame, DecodedSource, DecodeOptions, IngestError
from annotation.models import Image, ImportBatch, ImportFileResult
from annotation.storage import StoredFile, discard, put_bytes
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
    """Content hash of one frame's source pixels (dtype and shape included)."""
    pixels = np.ascontiguousarray(frame.pixels)
    digest = hashlib.sha256(f"{pixels.dtype.str}|{pixels.shape}|".encode())
    digest.update(pixels.tobytes())
    return digest.hexdigest()


def _png_bytes(frame: DecodedFrame) -> bytes:
    buf = io.BytesIO()
    frame.rendered.save(buf, format="PNG", optimize=False)
    return buf.getvalue()


def import_batch_start(*, actor, source: str, defaults: ImportDefaults) -> ImportBatch:
    with transaction.atomic():
        batch = ImportBatch.objects.create(
            source=source, source_dataset=defaults.source_dataset, license=defaults.license,
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
        )
        audit_record(actor=actor, action="annotation.import_batch.start", target=batch,
                     after={"source": source, "source_dataset": defaults.source_dataset, "license": defaults.license})
    return batch


def import_batch_finish(*, batch: ImportBatch, actor) -> ImportBatch:
    with transaction.atomic():
        batch = ImportBatch.objects.select_for_update().get(pk=batch.pk)
        batch.finished_at = timezone.now()
        batch.save(update_fields=["finished_at"])
        audit_record(actor=actor, action="annotation.import_batch.finish", target=batch, after={
            "files_imported": batch.files_imported, "files_duplicate": batch.files_duplicate,
            "files_failed": batch.files_failed, "images_created": batch.images_created,
        })
    return batch


@transaction.atomic
def _record_result(batch: ImportBatch, **fields) -> ImportFileResult:
    result = ImportFileResult.objects.create(batch=batch, **fields)
    counter = {"imported": "files_imported", "duplicate": "files_duplicate", "failed": "files_failed"}[result.status]
    ImportBatch.objects.filter(pk=batch.pk).update(
        **{counter: F(counter) + 1, "images_created": F("images_created") + result.images_created})
    return result


def image_import_source(
    *, batch: ImportBatch, source: Source, actor, defaults: ImportDefaults = ImportDefaults(),
    options: DecodeOptions | None = None,
) -> ImportFileResult:
    """Import one file. Never raises for a bad file: the outcome is the returned row."""
    options = options or decode_options()
    try:
        decoded = decode(source.read(), name=source.name, options=options)
    except IngestError as exc:
        logger.info("import rejected a file: %s", exc.code)
        return _record_result(batch, name=source.name, status="failed", code=exc.code, message=exc.message)
    except Exception as exc:  # a decoder bug must not stop the batch; keep the message free of file content
        logger.warning("decoder crashed on a file: %s", type(exc).__name__)
        return _record_result(batch, name=source.name, status="failed", code="decode_error",
                              message=f"the file could not be decoded ({type(exc).__name__})")

    hashed = [(frame_sha256(f), f) for f in decoded.frames]
    existing = set(Image.objects.filter(sha256__in=[h for h, _ in hashed]).values_list("sha256", flat=True))
    seen: set[str] = set()
    new = []
    for sha, frame in hashed:
        if sha not in existing and sha not in seen:
            seen.add(sha)
            new.append((sha, frame))
    duplicates = len(hashed) - len(new)
    if not new:
        return _record_result(batch, name=source.name, status="duplicate", images_duplicate=duplicates,
                              message=f"{'the image was' if len(hashed) == 1 else f'all {len(hashed)} images were'} "
                                      "already imported")

    written: list[StoredFile] = []
    try:
        with transaction.atomic():
            result = _record_result(batch, name=source.name, status="imported", images_created=len(new),
                                    images_duplicate=duplicates)
            images = _write_images(decoded, new, result, defaults, written)
            audit_record(actor=actor, action="annotation.image.import", target=result, after={
                "image_ids": [i.pk for i in images], "sha256": [i.sha256 for i in images],
                "format": decoded.format, "modality": images[0].modality, "deid": decoded.deid_record,
                "duplicates_skipped": duplicates,
            })
    except IntegrityError:
        # another importer stored the same image between our check and our insert: its committed
        # rows may point at the very files we wrote (content-addressed), so keep referenced ones
        _discard_unreferenced(written)
        return _record_result(batch, name=source.name, status="duplicate", images_duplicate=len(hashed),
                              message="imported concurrently by another batch")
    except BaseException:
        _discard_unreferenced(written)
        raise
    return result


def _discard_unreferenced(written: list[StoredFile]) -> None:
    """Remove the files this failed import created, unless a committed row now uses them."""
    paths = [f.rel_path for f in written if f.created]
    used = set(Image.objects.filter(file__in=paths).values_list("file", flat=True))
    used |= set(Image.objects.filter(source_file__in=paths).values_list("source_file", flat=True))
    discard([f for f in written if f.rel_path not in used])


def _write_images(decoded: DecodedSource, new, result: ImportFileResult, defaults: ImportDefaults,
                  written: list[StoredFile]) -> list[Image]:
    stored_source = None
    if decoded.stored_bytes is not None:
        stored_source = put_bytes(decoded.stored_bytes, kind="sources", suffix=decoded.stored_suffix)
        written.append(stored_source)
    rows = []
    for sha, frame in new:
        png = put_bytes(_png_bytes(frame), kind="images", suffix=".png")
        written.append(png)
        width, height = frame.rendered.size
        rows.append(Image(
            sha256=sha, file=png.rel_path, width=width, height=height,
            modality=(decoded.modality or defaults.modality)[:16],
            body_region=(decoded.body_region or defaults.body_region)[:64],
            source_format=decoded.format,
            source_file=stored_source.rel_path if stored_source else "",
            source_sha256=stored_source.sha256 if stored_source else "",
            frame_index=frame.frame_index,
            series_uid=decoded.series_uid, series_position=decoded.series_position,
            source_dataset=defaults.source_dataset, license=defaults.license,
            split_group=defaults.split_group or decoded.split_key or f"img-{sha[:16]}",
            window_center=frame.window_center, window_width=frame.window_width, window_source=frame.window_source,
            deid=decoded.deid_record, metadata=decoded.metadata,
            import_batch_id=result.batch_id, import_file=result,
        ))
    created = Image.objects.bulk_create(rows)
    if any(img.pk is None for img in created):  # backends without RETURNING
        by_sha = dict(Image.objects.filter(sha256__in=[r.sha256 for r in rows]).values_list("sha256", "pk"))
        for img in created:
            img.pk = by_sha[img.sha256]
    return created


def images_import(
    *, sources: Iterable[Source], actor, source: str = ImportBatch.Source.COMMAND,
    defaults: ImportDefaults = ImportDefaults(), on_result: Callable[[ImportFileResult], None] | None = None,
    option_overrides: dict | None = None,
) -> ImportBatch:
    """Import many files as one batch; each file on its own (see image_import_source)."""
    batch = import_batch_start(actor=actor, source=source, defaults=defaults)
    options = replace(decode_options(), **(option_overrides or {}))
    for src in sources:
        result = image_import_source(batch=batch, source=src, actor=actor, defaults=defaults, options=options)
        if on_result is not None:
            on_result(result)
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
