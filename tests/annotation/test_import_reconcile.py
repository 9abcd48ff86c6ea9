"""The import sweep (annotation/services/ingest_reconcile.py), in process against the test suite's real Redis
broker: chunks whose message the broker lost (deleted from Redis, or never sent) are sent again and the batch
completes with each file once; a chunk whose message still waits, or whose worker shows progress, is left
alone; a batch whose finish was lost is finished. tests/annotation/test_import_workers.py runs the same with
real workers."""
from __future__ import annotations

from datetime import timedelta

import pytest
from celery import current_app
from django.core.management import call_command
from django.utils import timezone

from annotation.models import Image, ImportBatch, ImportChunk, ImportFileResult
from annotation.phantoms import write_phantoms
from annotation.services import ingest_parallel
from annotation.services.ingest_parallel import images_import_dispatch, import_batch_resume, import_chunk_run
from annotation.services.ingest_reconcile import chunks_lost, imports_reconcile
from audit.models import AuditEvent
from audit.services import audit_verify
from tests.procs import purge_queue as _purge

pytestmark = pytest.mark.django_db
LONG_AGO = timedelta(hours=1)


def _take(queue: str = "cpu") -> list[tuple[str, tuple]]:
    """Every message waiting in the queue, removed from Redis: (task name, args)."""
    taken = []
    with current_app.connection_for_write() as conn:
        channel = conn.channel()
        while (message := channel.basic_get(queue, no_ack=True)) is not None:
            args, _kwargs, _embed = message.decode()
            taken.append((message.headers["task"], tuple(args)))
        channel.close()
    return taken


@pytest.fixture
def broker(settings):
    """A real broker (the suite's Redis), tasks not eager; the `cpu` queue emptied around."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.MEDR2_IMPORT_LOST_GRACE_S = 60
    settings.MEDR2_IMPORT_STALE_S = 900
    eager, current_app.conf.task_always_eager = current_app.conf.task_always_eager, False
    _purge()
    yield
    _purge()
    current_app.conf.task_always_eager = eager


@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / "incoming"
    write_phantoms(folder, 5, seed=21)
    for p in folder.glob("*.json"):
        p.unlink()
    return folder


def _dispatch(folder, django_capture_on_commit_callbacks, chunk_files: int = 2) -> ImportBatch:
    with django_capture_on_commit_callbacks(execute=True):   # the chunks are sent after the commit
        return images_import_dispatch(paths=[folder], actor=None, chunk_files=chunk_files)


def _age(batch: ImportBatch, **fields) -> None:
    """Every chunk of the batch sent an hour ago (and whatever else `fields` say)."""
    ImportChunk.objects.filter(batch=batch).update(dispatched_at=timezone.now() - LONG_AGO, **fields)


def _assert_each_file_once(batch: ImportBatch, files: int) -> None:
    batch.refresh_from_db()
    assert batch.finished_at is not None and batch.files_total == files == batch.files_done
    assert sorted(ImportFileResult.objects.filter(batch=batch).values_list("position", flat=True)) == list(range(files))
    assert Image.objects.filter(import_batch=batch).count() == batch.images_created == files
    assert Image.objects.values("sha256").distinct().count() == Image.objects.count()
    assert AuditEvent.objects.filter(action="annotation.import_batch.finish", object_id=str(batch.pk)).count() == 1
    assert audit_verify().ok


def test_chunks_whose_messages_were_lost_are_sent_again_and_the_batch_completes_with_each_file_once(
        broker, folder, django_capture_on_commit_callbacks):
    batch = _dispatch(folder, django_capture_on_commit_callbacks)
    chunks = list(ImportChunk.objects.filter(batch=batch).values_list("pk", flat=True))
    assert len(chunks) == 3
    assert sorted(_take()) == [("annotation.import_chunk", (pk,)) for pk in chunks]   # then lost: deleted
    assert import_chunk_run(chunk_id=chunks[0]) == "done"                              # one was delivered first

    assert imports_reconcile()["lost"] == 0                       # within the grace period: maybe in flight
    later = timezone.now() + timedelta(seconds=61)
    summary = imports_reconcile(now=later)
    assert (summary["lost"], summary["resent"], summary["importing"]) == (2, 2, 1)
    event = AuditEvent.objects.get(action="annotation.import_batch.resend", object_id=str(batch.pk))
    assert event.after["chunks"] == chunks[1:] and "queue 'cpu' is empty" in event.after["why"][0]
    assert imports_reconcile(now=later)["resent"] == 0            # just sent: not sent twice

    for name, args in _take():                                    # the workers run what was sent again
        assert name == "annotation.import_chunk"
        import_chunk_run(chunk_id=args[0])
    _assert_each_file_once(batch, files=5)
    assert list(ImportChunk.objects.filter(batch=batch).values_list("attempts", flat=True)) == [1, 1, 1]


def test_a_chunk_never_sent_with_the_broker_down_is_sent_by_the_sweep(broker, folder, monkeypatch,
                                                                      django_capture_on_commit_callbacks):
    monkeypatch.setattr(ingest_parallel, "send_after_commit", lambda task, *args: None)   # the send was refused
    batch = _dispatch(folder, django_capture_on_commit_callbacks, chunk_files=8)
    monkeypatch.undo()
    assert _take() == []
    later = timezone.now() + timedelta(seconds=61)
    monkeypatch.setattr(ingest_parallel, "send", lambda task, *args: False)       # the broker is still down
    assert (imports_reconcile(now=later)["lost"], imports_reconcile(now=later)["resent"]) == (1, 0)
    assert ImportChunk.objects.get(batch=batch).dispatched_at is None             # marked unsent: found again
    monkeypatch.undo()
    assert imports_reconcile(now=later)["resent"] == 1
    [(name, (chunk_id,))] = _take()
    import_chunk_run(chunk_id=chunk_id)
    _assert_each_file_once(batch, files=5)


def test_a_chunk_whose_message_is_still_queued_is_not_sent_again(broker, folder, django_capture_on_commit_callbacks):
    batch = _dispatch(folder, django_capture_on_commit_callbacks)
    _age(batch)
    assert chunks_lost() == []                        # sent an hour ago, but the queue still holds messages
    summary = imports_reconcile()
    assert (summary["lost"], summary["resent"]) == (0, 0)
    assert not AuditEvent.objects.filter(action="annotation.import_batch.resend").exists()
    assert len(_take()) == 3                          # exactly the three first messages: nothing doubled
    assert {why.split(" and ")[0] for _, _, why in chunks_lost()} == {"not started"}   # once the queue is empty


def test_a_running_chunk_is_sent_again_only_when_its_worker_has_gone_silent(broker, folder,
                                                                            django_capture_on_commit_callbacks):
    batch = _dispatch(folder, django_capture_on_commit_callbacks)
    _purge()
    live, silent, done = ImportChunk.objects.filter(batch=batch).order_by("index")
    now = timezone.now()
    _age(batch, status="running", started_at=now - LONG_AGO)
    ImportChunk.objects.filter(pk=live.pk).update(heartbeat_at=now - timedelta(seconds=30))
    ImportChunk.objects.filter(pk=silent.pk).update(heartbeat_at=now - LONG_AGO)
    ImportChunk.objects.filter(pk=done.pk).update(status="done")

    assert [(pk, why) for pk, _, why in chunks_lost(now=now)] == [(silent.pk, "no progress for 900 s")]
    assert imports_reconcile(now=now)["resent"] == 1
    assert _take() == [("annotation.import_chunk", (silent.pk,))]
    assert imports_reconcile()["resent"] == 0         # sent again just now: its new delivery gets STALE_S
    # a heartbeat-less chunk from before heartbeats existed counts from its start
    ImportChunk.objects.filter(pk=live.pk).update(heartbeat_at=None, started_at=now - timedelta(seconds=30))
    assert chunks_lost(now=now) == []


def test_a_running_chunk_writes_its_heartbeat_as_it_imports(folder, monkeypatch):
    batch = images_import_dispatch(paths=[folder], actor=None, chunk_files=8)
    chunk = ImportChunk.objects.get(batch=batch)
    monkeypatch.setattr(ingest_parallel, "HEARTBEAT_S", 0.0)
    beats = []
    real_add = ingest_parallel.FileImporter.add

    def add(self, *args, **kwargs):
        beats.append(ImportChunk.objects.get(pk=chunk.pk).heartbeat_at)
        return real_add(self, *args, **kwargs)

    monkeypatch.setattr(ingest_parallel.FileImporter, "add", add)
    import_chunk_run(chunk_id=chunk.pk)
    assert len(beats) == 5 and all(b is not None for b in beats) and beats == sorted(beats)
    assert len(set(beats)) == 5                       # one beat before each file
    assert ImportChunk.objects.get(pk=chunk.pk).status == "done"


def test_a_batch_whose_finish_was_lost_is_finished_once_by_the_sweep_and_the_command(broker, folder, monkeypatch):
    batch = images_import_dispatch(paths=[folder], actor=None, chunk_files=2)
    monkeypatch.setattr(ingest_parallel, "parallel_batch_finish", lambda batch: batch)   # the finish is lost
    for pk in ImportChunk.objects.filter(batch=batch).values_list("pk", flat=True):
        import_chunk_run(chunk_id=pk)
    monkeypatch.undo()
    batch.refresh_from_db()
    assert batch.finished_at is None and batch.files_done == 5

    unrelated = ImportBatch.objects.create(source="command", files_total=3)    # a synchronous import, running
    summary = imports_reconcile()
    assert (summary["finished"], summary["resent"], summary["importing"]) == (1, 0, 0)
    _assert_each_file_once(batch, files=5)
    unrelated.refresh_from_db()
    assert unrelated.finished_at is None              # no chunks: not the sweep's to finish

    from io import StringIO
    out = StringIO()
    call_command("imports_reconcile", stdout=out)
    assert "0 lost chunk(s) found, 0 re-sent, 0 batch(es) finished" in out.getvalue()
    assert AuditEvent.objects.filter(action="annotation.import_batch.finish", object_id=str(batch.pk)).count() == 1


def test_the_sweep_is_on_the_beat_schedule(settings):
    from annotation.tasks import imports_reconcile_task

    entry = settings.CELERY_BEAT_SCHEDULE["annotation-imports-reconcile"]
    assert entry["task"] == imports_reconcile_task.name == "annotation.imports_reconcile"
    assert entry["schedule"] == settings.MEDR2_IMPORT_RECONCILE_S


def test_resume_by_hand_sends_every_chunk_not_done_at_once_audited_with_its_actor(
        broker, folder, curator, django_capture_on_commit_callbacks):
    batch = _dispatch(folder, django_capture_on_commit_callbacks)
    first, *rest = ImportChunk.objects.filter(batch=batch).values_list("pk", flat=True)
    _take()
    import_chunk_run(chunk_id=first)
    assert import_batch_resume(batch_id=batch.pk, actor=curator) == (batch, 2)   # no grace period by hand
    assert sorted(args for _, args in _take()) == [(pk,) for pk in rest]
    event = AuditEvent.objects.get(action="annotation.import_batch.resend", object_id=str(batch.pk))
    assert event.actor == curator and event.after == {"n": 2, "chunks": rest, "why": ["resumed by hand"]}
