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
- A retry (a chunk's second attempt on) imports its files one at a time, each named in the chunk before it is
  imported, so a worker's death is pinned to one file; a file that killed `MEDR2_IMPORT_FILE_MAX_DEATHS` such
  attempts is recorded failed (`worker_lost`) and the others imported, and a chunk started more than
  `MEDR2_IMPORT_CHUNK_MAX_ATTEMPTS` times records what it has left failed: a file that kills its worker every
  time (out of memory, a decoder's crash) cannot keep its batch importing forever (`ingest_retry`).
- The chunk that finds every chunk of its batch done finishes the batch (once: `import_batch_finish`).
- Each chunk records when its message was last sent (`dispatched_at`) and its worker's last sign of progress
  (`heartbeat_at`: at its start, then at most every `HEARTBEAT_S` while it imports). The sweep
  (`ingest_reconcile.imports_reconcile`, Celery beat) sends a chunk again when the broker lost it (with the
  broker down at dispatch too) or its worker died with its host, and finishes a batch whose finish was lost;
  `import_batch_resume` (`manage.py import_images --resume BATCH`) sends every chunk not done again at once.
  Either way through `chunks_resend`: renewed `dispatched_at` and an audit event per batch.
- Eager mode (`CELERY_TASK_ALWAYS_EAGER`: the demo, a local run without a broker) runs the same tasks
  in this process, one after another.

Large uploads from the page (`images_upload_queued`) are copied to a spool folder under the storage root
first, so the workers can read them; the folder is removed when the batch finishes.
"""
from __future__ import annotations

import logging
import shutil
import time
import uuid
from dataclasses import asdict, replace
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.ingest import IngestError, SourceRef, reopen_sources
from annotation.models import ImportBatch, ImportChunk
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
from annotation.services.ingest_retry import chunk_attempt_start, chunk_marker_set
from annotation.storage import storage_root
from audit.services import audit_record
from common.dispatch import send, send_after_commit

logger = logging.getLogger(__name__)

#: files per chunk: small enough that two workers share a folder evenly and a redone chunk is cheap,
#: large enough that a task's overhead (its look-ups, the final synchronous commit) stays small
CHUNK_FILES = 16
#: a running chunk writes its heartbeat at most this often (seconds): far below MEDR2_IMPORT_STALE_S
HEARTBEAT_S = 10.0


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
        sent_at = timezone.now()   # a send the broker refuses is found by the sweep like a lost message
        chunks = ImportChunk.objects.bulk_create([
            ImportChunk(batch=batch, index=i, entries=entries[start:start + chunk_files], dispatched_at=sent_at)
            for i, start in enumerate(range(0, len(entries), chunk_files))])
        for chunk in chunks:
            send_after_commit(import_chunk_task, chunk.pk)
    if not chunks:
        return parallel_batch_finish(batch)
    batch.refresh_from_db()
    return batch


def import_chunk_run(*, chunk_id: int) -> str:
    """Import one chunk (the task's body). Quiet when the chunk is gone or done; returns its status."""
    attempt = chunk_attempt_start(chunk_id=chunk_id)   # counted; on a retry, what is due given up
    if isinstance(attempt, str):   # "gone", or "done" meanwhile by another delivery
        return attempt
    chunk = attempt.chunk
    batch = chunk.batch
    refs = reopen_sources([tuple(e[2:5]) for e in attempt.todo], limits=source_limits())
    if attempt.careful:   # a retry: each file named in the chunk, then imported and committed alone
        for (position, name, *_), ref in zip(attempt.todo, refs):
            chunk_marker_set(attempt, position)
            with _importer(batch, batch.created_by, pipeline=False) as importer:
                importer.add(ref, name=name, position=position)
    else:
        beat = time.monotonic()
        with _importer(batch, batch.created_by) as importer:
            for (position, name, *_), ref in zip(attempt.todo, refs):
                if time.monotonic() - beat >= HEARTBEAT_S:   # alive: the sweep leaves a chunk with a fresh heartbeat
                    beat = time.monotonic()
                    ImportChunk.objects.filter(pk=chunk.pk).update(heartbeat_at=timezone.now())
                importer.add(ref, name=name, position=position)
    ImportChunk.objects.filter(pk=chunk.pk).update(status=ImportChunk.Status.DONE, finished_at=timezone.now(),
                                                   current_position=None, current_deaths=0)
    if not ImportChunk.objects.filter(batch=batch).exclude(status=ImportChunk.Status.DONE).exists():
        parallel_batch_finish(batch)
    return "done"


def import_batch_resume(*, batch_id: int, actor=None) -> tuple[ImportBatch | None, int]:
    """Send every chunk of an unfinished batch that is not done again (after a broker outage, or a chunk
    whose message was lost); a chunk that is in fact running skips what it recorded. Returns the batch
    (None when there is none) and how many chunks were sent."""
    batch = ImportBatch.objects.filter(pk=batch_id).first()
    if batch is None or batch.finished_at is not None:
        return batch, 0
    pending = list(ImportChunk.objects.filter(batch=batch).exclude(status=ImportChunk.Status.DONE)
                   .values_list("pk", flat=True))
    if not pending and batch.files_total is not None:
        return parallel_batch_finish(batch), 0
    return batch, chunks_resend(why={pk: "resumed by hand" for pk in pending}, actor=actor)


def chunks_resend(*, why: dict[int, str], actor=None, sent_before=None) -> int:
    """Send these chunks (id → why) again: those still not done, of unfinished batches, and with `sent_before`
    only those not sent since then (so two sweeps at once send each chunk once). Their `dispatched_at` is
    renewed and one audit event per batch written in one transaction, then the messages are sent. Returns
    how many were sent: with the broker down the rest are marked unsent (no `dispatched_at`: the sweep takes
    them as sent when their batch was created, so it finds them again once the broker is back)."""
    from annotation.tasks import import_chunk_task

    with transaction.atomic():
        chunks = (ImportChunk.objects.select_for_update(skip_locked=True, of=("self",))
                  .filter(pk__in=list(why), batch__finished_at__isnull=True).exclude(status=ImportChunk.Status.DONE))
        if sent_before is not None:
            chunks = chunks.filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=sent_before))
        rows = list(chunks.order_by("pk").values_list("pk", "batch_id"))
        ImportChunk.objects.filter(pk__in=[pk for pk, _ in rows]).update(dispatched_at=timezone.now())
        by_batch: dict[int, list[int]] = {}
        for pk, batch_id in rows:
            logger.warning("import batch %s: chunk %s sent again (%s)", batch_id, pk, why[pk])
            by_batch.setdefault(batch_id, []).append(pk)
        for batch_id, pks in by_batch.items():
            audit_record(actor=actor, action="annotation.import_batch.resend", object_type="annotation.importbatch",
                         object_id=batch_id, after={"n": len(pks), "chunks": pks[:1000],
                                                    "why": sorted({why[pk] for pk in pks})})
    for k, (pk, _) in enumerate(rows):
        if not send(import_chunk_task, pk):   # the broker is down: marked unsent, for a later sweep
            ImportChunk.objects.filter(pk__in=[p for p, _ in rows[k:]]).update(dispatched_at=None)
            return k
    return len(rows)


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


def _importer(batch: ImportBatch, actor, pipeline: bool = True) -> FileImporter:
    options = batch.options or {}
    defaults = ImportDefaults(**options.get("defaults", {}))
    decode = replace(decode_options(), **options.get("decode", {}))
    return FileImporter(batch=batch, actor=actor, defaults=defaults, options=decode, pipeline=pipeline)


def parallel_batch_finish(batch: ImportBatch) -> ImportBatch:
    """Finish the batch (once, audited: `import_batch_finish`) and remove its spool folder, if any."""
    batch = import_batch_finish(batch=batch, actor=batch.created_by)
    spool = (batch.options or {}).get("spool")
    if spool and Path(spool).resolve().is_relative_to((storage_root() / "incoming").resolve()):
        shutil.rmtree(spool, ignore_errors=True)
    return batch


def parallel_enabled() -> bool:
    """Whether imports may be sent to workers: a broker is configured and tasks are not run eagerly."""
    return bool(settings.CELERY_BROKER_URL) and not settings.CELERY_TASK_ALWAYS_EAGER
