"""The retries of a parallel import's chunk: a file that kills its worker every time must not loop forever.

A chunk's task is acked late and rejected when its worker is lost, so a chunk whose worker process dies (out
of memory, a crash inside a decoder) is delivered again at once, and the sweep sends a silent one again. Its
first attempt imports at full speed (`FileImporter` with its write pipeline: when it dies, several files may
be decoded but not committed, so the first file without a result is not necessarily the one that killed it).
From the second attempt on (`Attempt.careful`):

- its remaining files are imported one at a time, each committed before the next, with no write pipeline;
  before each, the chunk records which one (`ImportChunk.current_position`, `chunk_marker_set`: one UPDATE,
  which is also the worker's heartbeat), so a death is pinned to one file;
- an attempt that starts and finds the marker on a file still without a result knows that the attempt before
  it died on that file: `current_deaths` counts it (back to 0 when the marker moves to another file). A file
  that killed `MEDR2_IMPORT_FILE_MAX_DEATHS` (2) careful attempts is recorded failed (`worker_lost`) and the
  attempt imports the others;
- belt and braces: a chunk started more than `MEDR2_IMPORT_CHUNK_MAX_ATTEMPTS` (8) times records every file it
  has left failed (`too_many_attempts`) and is done, so its batch finishes.

A file given up is recorded through the engine's own write side (`ingest_commit.Sink`: the batch's counters,
one result per position), with one audit event `annotation.import_chunk.give_up` (object: the batch; the
chunk, the positions, why) in the same transaction, and a warning in the log with the batch, the chunk and
the positions, never a file's name. The marker is cleared when the chunk is done (`import_chunk_run`).

A careful attempt stopped for another reason on a file (its host restarted, an error the sweep retries) counts
as a death on that file too: one such event alone gives nothing up with the default of 2.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.models import ImportChunk, ImportFileResult
from annotation.services.ingest_commit import Sink
from audit.services import audit_record

logger = logging.getLogger(__name__)

WORKER_LOST = "worker_lost"
TOO_MANY_ATTEMPTS = "too_many_attempts"
_SKIPPED = "skipped — the other files of the batch are imported"


@dataclass
class Attempt:
    """One start of a chunk: its files still to import and how (see the module)."""

    chunk: ImportChunk
    todo: list          # the entries [position, name, path, display name, ordinal] without a result
    careful: bool       # a retry: one file at a time, each named in the chunk first
    marker: int | None  # the chunk's current_position and current_deaths, as this attempt left them
    deaths: int


def chunk_attempt_start(*, chunk_id: int) -> Attempt | str:
    """Start an attempt at a chunk: count it and, on a retry, the death of the attempt before it; give up
    the files that are due (module docstring). Returns the attempt, or "gone" / "done" (done meanwhile by
    another delivery) when there is nothing to import."""
    with transaction.atomic():
        chunk = (ImportChunk.objects.select_for_update(of=("self",)).select_related("batch", "batch__created_by")
                 .filter(pk=chunk_id).first())
        if chunk is None:
            return "gone"
        if chunk.status == ImportChunk.Status.DONE:
            return "done"
        now = timezone.now()
        chunk.attempts += 1
        chunk.status, chunk.started_at, chunk.heartbeat_at = ImportChunk.Status.RUNNING, now, now
        recorded = set(ImportFileResult.objects.filter(batch_id=chunk.batch_id,
                                                       position__in=[e[0] for e in chunk.entries])
                       .values_list("position", flat=True))
        todo = [e for e in chunk.entries if e[0] not in recorded]
        give_up: dict[int, tuple[str, str]] = {}
        if chunk.current_position is not None and chunk.current_position not in recorded:
            chunk.current_deaths += 1
            logger.warning("import batch %s: chunk %s: its worker died importing position %s (%s time(s))",
                           chunk.batch_id, chunk.pk, chunk.current_position, chunk.current_deaths)
            if chunk.current_deaths >= settings.MEDR2_IMPORT_FILE_MAX_DEATHS:
                give_up[chunk.current_position] = (WORKER_LOST, (
                    f"the worker importing this file died {chunk.current_deaths} times (out of memory, or a crash "
                    f"in its decoder); {_SKIPPED}"))
                chunk.current_position, chunk.current_deaths = None, 0
        if chunk.attempts > settings.MEDR2_IMPORT_CHUNK_MAX_ATTEMPTS:
            for position, *_ in todo:
                give_up.setdefault(position, (TOO_MANY_ATTEMPTS, (
                    f"gave up after {chunk.attempts - 1} attempts at this file's part of the batch (its workers "
                    f"kept dying or stopping); {_SKIPPED}")))
        chunk.save(update_fields=["attempts", "status", "started_at", "heartbeat_at", "current_position",
                                  "current_deaths"])
        if give_up:
            _give_up(chunk, [e for e in todo if e[0] in give_up], give_up)
            todo = [e for e in todo if e[0] not in give_up]
    return Attempt(chunk=chunk, todo=todo, careful=chunk.attempts > 1, marker=chunk.current_position,
                   deaths=chunk.current_deaths)


def chunk_marker_set(attempt: Attempt, position: int) -> None:
    """A careful attempt is about to import the file at `position`: name it in the chunk (and beat)."""
    deaths = attempt.deaths if position == attempt.marker else 0
    ImportChunk.objects.filter(pk=attempt.chunk.pk).update(current_position=position, current_deaths=deaths,
                                                           heartbeat_at=timezone.now())
    attempt.marker, attempt.deaths = position, deaths


def _give_up(chunk: ImportChunk, entries: list, why: dict[int, tuple[str, str]]) -> None:
    """Record these files failed, audited, inside the caller's transaction (the chunk's row locked)."""
    positions = [position for position, *_ in entries]
    codes = sorted({why[p][0] for p in positions})
    for position in positions:
        logger.warning("import batch %s: chunk %s gave up position %s (%s)", chunk.batch_id, chunk.pk, position,
                       why[position][0])
    # the audit chain's lock before the batch's row, in the order the engine's own commits take them
    audit_record(actor=None, action="annotation.import_chunk.give_up", target=chunk.batch,
                 after={"chunk": chunk.pk, "positions": positions, "why": codes, "attempts": chunk.attempts})
    sink = Sink(batch=chunk.batch, actor=None, defaults=None)   # failures only: no image, no defaults
    for position, name, *_ in entries:
        code, message = why[position]
        sink.result(name=name, position=position, status=ImportFileResult.Status.FAILED, code=code,
                    message=message)
    sink.finish()
