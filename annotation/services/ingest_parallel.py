"""Parallel import: one batch, its files split into chunks, each chunk imported by a Celery task
(`annotation.import_chunk`, queue `cpu`) on any worker, every result reported into the one batch.

- `images_import_dispatch` lists the files (folders walked, ZIP central directories read, every limit
  checked), starts the batch with `files_total`, records at once what cannot even be opened (a path that
  does not exist), writes the chunks — each file's place in the batch (`position`), name and origin
  (`SourceRef.origin`: path, display name, ordinal) — and sends one task per chunk after the commit.
- `import_chunk_run` (the task) opens its files again (`reopen_sources`: every limit checked again) and
  imports them with the per-file engine (`ingest_files.FileImporter`), skipping every position whose
  result is already recorded. So a redelivered chunk (its worker was SIGKILLed: the task is acked late and
  rejected when the worker is lost) imports only what is missing, two deliveries racing record each file
  once (unique batch × position), and no image is stored twice (unique content hash).
- The chunk that finds every chunk of its batch done finishes the batch (once: `import_batch_finish`).
- With the broker down at dispatch, the batch stays unfinished with its chunks pending;
  `import_batch_resume` (`manage.py import_images --resume BATCH`) sends every chunk not done again.
- Eager mode (`CELERY_TASK_ALWAYS_EAGER`: the demo, a local run without a broker) runs the same tasks
  in this process, one after another.

Large uploads from the page (`images_upload_queued`) are copied to a spool folder under the storage root
first, so the workers can read them; the folder is removed when the batch finishes.
"""
from __future__ import annotations

import logging
import shutil
import uuid
from dataclasses import asdict, replace
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.ingest import IngestError, SourceRef, reopen_sources
from annotation.models import ImportBatch, ImportChunk, ImportFileResult
from annotation.services.images import (
    ImportDefaults,
    decode_options,
    images_upload,
    import_batch_finish,
    import_batch_start,
    path_sources,
    source_limits,
)
from annotation.services.ingest_files import FileImporter
from annotation.storage import storage_root
from common.dispatch import send, send_after_commit

logger = logging.getLogger(__name__)

#: files per chunk: small enough that two workers share a folder evenly and a redone chunk is cheap,
#: large enough that a task's overhead (its look-ups, the final synchronous commit) stays small
CHUNK_FILES = 16


def images_import_dispatch(*, paths, actor, source: str = ImportBatch.Source.COMMAND,
                           defaults: ImportDefaults = ImportDefaults(), option_overrides: dict | None = None,
                           chunk_files: int = CHUNK_FILES, spool: str = "", refused: list | None = None,
                           ) -> ImportBatch:
    """Start a batch over the files under `paths` and send its chunks to the workers (see the module).
    `refused`: refs already refused (an upload over its size limit), reported first."""
    from annotation.tasks import import_chunk_task  # lazy: tasks.py imports this module (a real cycle)

    if chunk_files < 1:
        raise ValueError("chunk_files must be at least 1")
    refs = list(refused or []) + path_sources(paths)
    options = {"defaults": asdict(defaults), "decode": dict(option_overrides or {}), "spool": spool}
    batch = import_batch_start(actor=actor, source=source, defaults=defaults, files_total=len(refs), options=options)
    unopenable = [(position, ref) for position, ref in enumerate(refs) if ref.origin is None]
    if unopenable:  # before any chunk is sent: an eager chunk may finish the batch
        with _importer(batch, actor) as importer:
            for position, ref in unopenable:
                importer.add(ref, position=position)
    entries = [[position, ref.name, *ref.origin] for position, ref in enumerate(refs) if ref.origin is not None]
    with transaction.atomic():
        chunks = ImportChunk.objects.bulk_create([
            ImportChunk(batch=batch, index=i, entries=entries[start:start + chunk_files])
            for i, start in enumerate(range(0, len(entries), chunk_files))])
        for chunk in chunks:
            send_after_commit(import_chunk_task, chunk.pk)
    if not chunks:
        return _finish(batch)
    batch.refresh_from_db()
    return batch


def import_chunk_run(*, chunk_id: int) -> str:
    """Import one chunk (the task's body). Quiet when the chunk is gone or done; returns its status."""
    chunk = ImportChunk.objects.select_related("batch", "batch__created_by").filter(pk=chunk_id).first()
    if chunk is None:
        return "gone"
    if chunk.status == ImportChunk.Status.DONE:
        return "done"
    ImportChunk.objects.filter(pk=chunk.pk).update(status=ImportChunk.Status.RUNNING, attempts=F("attempts") + 1,
                                                   started_at=timezone.now())
    batch = chunk.batch
    recorded = set(ImportFileResult.objects.filter(batch=batch, position__in=[e[0] for e in chunk.entries])
                   .values_list("position", flat=True))
    todo = [e for e in chunk.entries if e[0] not in recorded]
    refs = reopen_sources([tuple(e[2:5]) for e in todo], limits=source_limits())
    with _importer(batch, batch.created_by) as importer:
        for (position, name, *_), ref in zip(todo, refs):
            importer.add(ref, name=name, position=position)
    ImportChunk.objects.filter(pk=chunk.pk).update(status=ImportChunk.Status.DONE, finished_at=timezone.now())
    if not ImportChunk.objects.filter(batch=batch).exclude(status=ImportChunk.Status.DONE).exists():
        _finish(batch)
    return "done"


def import_batch_resume(*, batch_id: int) -> tuple[ImportBatch | None, int]:
    """Send every chunk of an unfinished batch that is not done again (after a broker outage, or a chunk
    whose message was lost); a chunk that is in fact running skips what it recorded. Returns the batch
    (None when there is none) and how many chunks were sent."""
    from annotation.tasks import import_chunk_task

    batch = ImportBatch.objects.filter(pk=batch_id).first()
    if batch is None or batch.finished_at is not None:
        return batch, 0
    pending = list(ImportChunk.objects.filter(batch=batch).exclude(status=ImportChunk.Status.DONE)
                   .values_list("pk", flat=True))
    if not pending and batch.files_total is not None:
        return _finish(batch), 0
    return batch, sum(send(import_chunk_task, pk) for pk in pending)


def images_upload_queued(*, files, actor, defaults: ImportDefaults = ImportDefaults()) -> ImportBatch:
    """The upload page's import: in this request when it is small (under ``MEDR2_IMPORT_PARALLEL_MIN_BYTES``,
    64 MiB by default) or when no worker can take it (no broker, or eager mode: the demo); otherwise the
    files are copied to a spool folder under the storage root and imported on the workers, and the batch
    page follows its progress. Each upload's size limit is checked before it is copied."""
    files = list(files)
    threshold = settings.MEDR2_IMPORT_PARALLEL_MIN_BYTES
    if not parallel_enabled() or sum(f.size for f in files) < threshold:
        return images_upload(files=files, actor=actor, defaults=defaults)
    spool = storage_root() / "incoming" / uuid.uuid4().hex
    refused, paths = [], []
    limit = settings.MEDR2_UPLOAD_MAX_BYTES
    for i, upload in enumerate(files):
        name = Path(upload.name).name or f"upload-{i}"
        if upload.size > limit:
            refused.append(SourceRef(name, error=IngestError("too_large", f"upload exceeds {limit} bytes")))
            continue
        target = spool / str(i) / name
        target.parent.mkdir(parents=True)
        with open(target, "wb") as out:
            for piece in upload.chunks():
                out.write(piece)
        paths.append(str(target))
    return images_import_dispatch(paths=paths, actor=actor, source=ImportBatch.Source.UPLOAD, defaults=defaults,
                                  spool=str(spool), refused=refused)


def _importer(batch: ImportBatch, actor) -> FileImporter:
    options = batch.options or {}
    defaults = ImportDefaults(**options.get("defaults", {}))
    decode = replace(decode_options(), **options.get("decode", {}))
    return FileImporter(batch=batch, actor=actor, defaults=defaults, options=decode)


def _finish(batch: ImportBatch) -> ImportBatch:
    batch = import_batch_finish(batch=batch, actor=batch.created_by)
    spool = (batch.options or {}).get("spool")
    if spool and Path(spool).resolve().is_relative_to((storage_root() / "incoming").resolve()):
        shutil.rmtree(spool, ignore_errors=True)
    return batch


def parallel_enabled() -> bool:
    """Whether imports may be sent to workers: a broker is configured and tasks are not run eagerly."""
    return bool(settings.CELERY_BROKER_URL) and not settings.CELERY_TASK_ALWAYS_EAGER
