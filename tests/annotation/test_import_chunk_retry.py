"""A chunk whose worker dies on every try does not loop forever (annotation/services/ingest_retry.py): its
retries import one file at a time with the file named in the chunk first, a file that killed
MEDR2_IMPORT_FILE_MAX_DEATHS of them is recorded failed and the rest imported, and a chunk started more than
MEDR2_IMPORT_CHUNK_MAX_ATTEMPTS times gives up what it has left. The deaths are simulated here as the dead
worker leaves them (tests/annotation/test_import_workers.py kills a real one)."""
from __future__ import annotations

import logging

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Image, ImportBatch, ImportChunk, ImportFileResult
from annotation.phantoms import write_phantoms
from annotation.services import ingest_commit, ingest_files, ingest_parallel
from annotation.services.ingest_parallel import images_import_dispatch, import_chunk_run
from audit.models import AuditEvent
from audit.services import audit_verify

pytestmark = pytest.mark.django_db


def _phantoms(out, seed: int):
    """Six phantom DICOMs (their ground truth removed)."""
    write_phantoms(out, 6, seed=seed)
    for p in out.glob("*.json"):
        p.unlink()
    return out


@pytest.fixture
def folder(tmp_path):
    return _phantoms(tmp_path / "incoming", seed=21)


@pytest.fixture
def poison(monkeypatch):
    """The worker dies whenever it imports the file named in `names` (SystemExit stands for the SIGKILL: nothing
    of the dying attempt runs after it that a real death would not also leave undone)."""
    names: set[str] = set()
    real_add = ingest_files.FileImporter.add

    def dying_add(self, source, *, name=None, position=None):
        if name in names:
            raise SystemExit("the worker died")
        return real_add(self, source, name=name, position=position)

    monkeypatch.setattr(ingest_files.FileImporter, "add", dying_add)
    return names


def _chunk_updates(queries) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].startswith(f'UPDATE "{ImportChunk._meta.db_table}"')]


def _dies(chunk: ImportChunk) -> None:
    with pytest.raises(SystemExit):
        import_chunk_run(chunk_id=chunk.pk)


def _finished_with_one_result_per_file(batch: ImportBatch) -> None:
    batch.refresh_from_db()
    assert batch.finished_at is not None and batch.files_done == batch.files_total
    assert sorted(ImportFileResult.objects.filter(batch=batch).values_list("position", flat=True)) == \
        list(range(batch.files_total))
    assert Image.objects.filter(import_batch=batch).count() == batch.images_created == batch.files_imported
    assert audit_verify().ok


def test_a_first_attempt_names_no_file_and_a_retry_names_each_before_importing_it(folder, monkeypatch):
    monkeypatch.setattr(ingest_parallel, "HEARTBEAT_S", 3600.0)   # no heartbeat write in either count
    fast = images_import_dispatch(paths=[folder], actor=None, chunk_files=6)
    with CaptureQueriesContext(connection) as first:
        import_chunk_run(chunk_id=ImportChunk.objects.get(batch=fast).pk)
    assert len(_chunk_updates(first.captured_queries)) == 2   # its start and its end: nothing per file
    _finished_with_one_result_per_file(fast)

    retried = images_import_dispatch(paths=[_phantoms(folder.parent / "more", seed=22)], actor=None, chunk_files=6)
    chunk = ImportChunk.objects.get(batch=retried)
    ImportChunk.objects.filter(pk=chunk.pk).update(status="running", attempts=1)   # the first one died early
    with CaptureQueriesContext(connection) as careful:
        import_chunk_run(chunk_id=chunk.pk)
    named = _chunk_updates(careful.captured_queries)[1:-1]
    assert len(named) == 6 and all('"current_position" = ' in sql for sql in named)
    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts, chunk.current_position, chunk.current_deaths) == ("done", 2, None, 0)
    _finished_with_one_result_per_file(retried)
    assert retried.files_imported == 6


def test_a_file_that_kills_every_careful_attempt_is_given_up_and_the_others_imported(
        folder, poison, monkeypatch, settings, curator, caplog):
    settings.MEDR2_IMPORT_FILE_MAX_DEATHS = 2
    monkeypatch.setattr(ingest_commit, "GROUP", 1)   # the first attempt commits some files before it dies
    batch = images_import_dispatch(paths=[folder], actor=curator, chunk_files=6)
    chunk = ImportChunk.objects.get(batch=batch)
    p, name = chunk.entries[3][:2]
    poison.add(name)

    _dies(chunk)   # the first attempt, at full speed: names no file
    chunk.refresh_from_db()
    assert (chunk.attempts, chunk.current_position) == (1, None)
    _dies(chunk)   # the first careful one: dies with the file named, the files before it committed
    chunk.refresh_from_db()
    assert (chunk.attempts, chunk.current_position, chunk.current_deaths) == (2, p, 0)
    assert set(ImportFileResult.objects.filter(batch=batch).values_list("position", flat=True)) == {0, 1, 2}
    with caplog.at_level(logging.WARNING, logger="annotation.services.ingest_retry"):
        _dies(chunk)   # the second: the first death is counted at its start
        chunk.refresh_from_db()
        assert (chunk.attempts, chunk.current_position, chunk.current_deaths) == (3, p, 1)
        assert not AuditEvent.objects.filter(action="annotation.import_chunk.give_up").exists()

        assert import_chunk_run(chunk_id=chunk.pk) == "done"   # the third: gives the file up, imports the rest

    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts, chunk.current_position, chunk.current_deaths) == ("done", 4, None, 0)
    _finished_with_one_result_per_file(batch)
    assert (batch.files_imported, batch.files_failed) == (5, 1)
    lost = ImportFileResult.objects.get(batch=batch, status="failed")
    assert (lost.position, lost.name, lost.code) == (p, name, "worker_lost")
    assert "died 2 times" in lost.message and "the other files of the batch are imported" in lost.message
    event = AuditEvent.objects.get(action="annotation.import_chunk.give_up")
    assert (event.object_type, event.object_id) == ("annotation.importbatch", str(batch.pk))
    assert event.after == {"chunk": chunk.pk, "positions": [p], "why": ["worker_lost"], "attempts": 4}
    warnings = [r.getMessage() for r in caplog.records]
    assert any(f"gave up position {p}" in m for m in warnings) and any("died importing" in m for m in warnings)
    assert not any(name.split("/")[-1] in m or str(folder) in m for m in warnings)   # no file name: PHI

    client = Client()
    client.force_login(curator)
    page = client.get(reverse("annotation:import-batch", args=[batch.pk]) + "?status=failed").content.decode()
    assert name in page and "Worker lost" in page and "died 2 times" in page


def test_a_dead_careful_attempt_found_at_the_start_gives_its_file_up_at_the_limit(folder, settings):
    settings.MEDR2_IMPORT_FILE_MAX_DEATHS = 1
    batch = images_import_dispatch(paths=[folder], actor=None, chunk_files=6)
    chunk = ImportChunk.objects.get(batch=batch)
    # as a careful attempt that died on position 2 leaves its chunk: running, the file named, no result for it
    ImportChunk.objects.filter(pk=chunk.pk).update(status="running", attempts=2, current_position=2)
    import_chunk_run(chunk_id=chunk.pk)
    _finished_with_one_result_per_file(batch)
    assert list(ImportFileResult.objects.filter(batch=batch, status="failed").values_list("position", "code")) == \
        [(2, "worker_lost")]
    assert batch.files_imported == 5


def test_a_death_after_the_named_file_committed_counts_against_no_file(folder, poison, monkeypatch, settings,
                                                                         caplog):
    settings.MEDR2_IMPORT_FILE_MAX_DEATHS = 1
    monkeypatch.setattr(ingest_commit, "GROUP", 1)
    batch = images_import_dispatch(paths=[folder], actor=None, chunk_files=6)
    chunk = ImportChunk.objects.get(batch=batch)
    poison.add(chunk.entries[1][1])
    _dies(chunk)   # position 0 committed
    # as a careful attempt that died after committing position 0, before naming position 1, leaves its chunk
    ImportChunk.objects.filter(pk=chunk.pk).update(attempts=2, current_position=0)
    poison.clear()
    with caplog.at_level(logging.WARNING, logger="annotation.services.ingest_retry"):
        import_chunk_run(chunk_id=chunk.pk)
    _finished_with_one_result_per_file(batch)
    assert (batch.files_imported, batch.files_failed) == (6, 0) and not caplog.records
    assert not AuditEvent.objects.filter(action="annotation.import_chunk.give_up").exists()


def test_a_chunk_started_too_many_times_gives_up_what_it_has_left_and_the_batch_finishes(
        folder, poison, monkeypatch, settings):
    settings.MEDR2_IMPORT_CHUNK_MAX_ATTEMPTS = 3
    monkeypatch.setattr(ingest_commit, "GROUP", 1)
    batch = images_import_dispatch(paths=[folder], actor=None, chunk_files=3)
    first, second = ImportChunk.objects.filter(batch=batch).order_by("index")
    import_chunk_run(chunk_id=first.pk)
    poison.add(second.entries[1][1])
    _dies(second)   # its first file committed, then a death that named nothing (the first attempt)
    ImportChunk.objects.filter(pk=second.pk).update(attempts=3)   # and two more, say, lost with their hosts

    assert import_chunk_run(chunk_id=second.pk) == "done"
    _finished_with_one_result_per_file(batch)
    assert (batch.files_imported, batch.files_failed) == (4, 2)
    failed = ImportFileResult.objects.filter(batch=batch, status="failed")
    assert [(f.position, f.code) for f in failed] == [(4, "too_many_attempts"), (5, "too_many_attempts")]
    assert all("gave up after 3 attempts" in f.message for f in failed)
    event = AuditEvent.objects.get(action="annotation.import_chunk.give_up")
    assert event.after == {"chunk": second.pk, "positions": [4, 5], "why": ["too_many_attempts"], "attempts": 4}
    assert ImportChunk.objects.get(pk=second.pk).status == "done"
