"""Parallel import without a worker process: the chunks of one batch run here, one by one, as the workers
would run them (tests/annotation/test_import_workers.py runs real ones). Dedup before de-identification,
idempotent chunks, one batch report, the batch page's live progress."""
from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pydicom
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotation import storage
from annotation.ingest import dicom as dicom_module
from annotation.ingest.hashing import frame_sha256
from annotation.ingest.pixels import dicom_frame, values_sha256
from annotation.models import Image, ImportBatch, ImportChunk, ImportFileResult
from annotation.phantoms import write_phantoms
from annotation.services import ingest_commit, ingest_files
from annotation.services.images import BytesSource, images_import
from annotation.services.ingest_parallel import (
    images_import_dispatch,
    images_upload_queued,
    import_batch_resume,
    import_chunk_run,
)
from audit.models import AuditEvent
from audit.services import audit_verify

pytestmark = pytest.mark.django_db


@pytest.fixture
def phantom_folder(tmp_path):
    """Five phantom DICOMs, a corrupt one and a ZIP with two more phantoms (their ground truth removed)."""
    folder = tmp_path / "incoming"
    paths = write_phantoms(folder, 5, seed=7)
    zipped = write_phantoms(tmp_path / "z", 2, seed=8, start=100)
    for p in folder.glob("*.json"):
        p.unlink()
    (folder / "broken.dcm").write_bytes(paths[0].read_bytes()[:2000])
    with zipfile.ZipFile(folder / "more.zip", "w") as zf:
        for p in zipped:
            zf.write(p, f"series/{p.name}")
    return folder


def _run_all_chunks(batch: ImportBatch) -> None:
    for chunk_id in ImportChunk.objects.filter(batch=batch).values_list("pk", flat=True):
        import_chunk_run(chunk_id=chunk_id)


def _assert_one_report(batch: ImportBatch) -> None:
    batch.refresh_from_db()
    results = ImportFileResult.objects.filter(batch=batch)
    assert results.count() == batch.files_total == batch.files_done
    assert sorted(results.values_list("position", flat=True)) == list(range(batch.files_total))
    assert batch.finished_at is not None
    assert Image.objects.filter(import_batch=batch).count() == batch.images_created
    assert audit_verify().ok


def test_a_folder_in_chunks_reports_into_one_batch_with_a_clear_error_for_the_corrupt_file(phantom_folder):
    batch = images_import_dispatch(paths=[phantom_folder], actor=None, chunk_files=3)
    assert batch.files_total == 8 and batch.finished_at is None
    assert ImportChunk.objects.filter(batch=batch).count() == 3
    _run_all_chunks(batch)

    _assert_one_report(batch)
    assert (batch.files_imported, batch.files_failed, batch.files_duplicate) == (7, 1, 0)
    broken = ImportFileResult.objects.get(batch=batch, status="failed")
    assert broken.name == "incoming/broken.dcm" and broken.code == "corrupt" and broken.message
    assert ImportFileResult.objects.filter(batch=batch, name__startswith="incoming/more.zip/series/").count() == 2
    assert AuditEvent.objects.filter(action="annotation.image.import").count() == 7
    assert AuditEvent.objects.filter(action="annotation.import_batch.finish", object_id=str(batch.pk)).count() == 1


def test_a_redelivered_chunk_imports_nothing_twice(phantom_folder):
    batch = images_import_dispatch(paths=[phantom_folder], actor=None, chunk_files=8)
    chunk = ImportChunk.objects.get(batch=batch)
    assert import_chunk_run(chunk_id=chunk.pk) == "done"
    counts = (Image.objects.count(), ImportFileResult.objects.count(), AuditEvent.objects.count())

    ImportChunk.objects.filter(pk=chunk.pk).update(status="running")  # acked never: the broker sends it again
    import_chunk_run(chunk_id=chunk.pk)
    assert (Image.objects.count(), ImportFileResult.objects.count()) == counts[:2]
    assert AuditEvent.objects.count() == counts[2]  # not even a second "finish"
    _assert_one_report(batch)
    assert ImportChunk.objects.get(pk=chunk.pk).attempts == 2
    assert import_chunk_run(chunk_id=chunk.pk) == "done" and import_chunk_run(chunk_id=10 ** 9) == "gone"


def test_a_chunk_killed_midway_is_finished_by_its_redelivery_without_duplicates(phantom_folder, monkeypatch):
    batch = images_import_dispatch(paths=[phantom_folder], actor=None, chunk_files=8)
    chunk = ImportChunk.objects.get(batch=batch)
    real_add, calls = ingest_files.FileImporter.add, {"n": 0}

    def dying_add(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:  # the worker dies while importing its fifth file
            raise SystemExit("SIGKILL")
        return real_add(self, *args, **kwargs)

    monkeypatch.setattr(ingest_commit, "GROUP", 2)  # so some files were committed before the death
    monkeypatch.setattr(ingest_files.FileImporter, "add", dying_add)
    with pytest.raises(SystemExit):
        import_chunk_run(chunk_id=chunk.pk)
    done_before = ImportFileResult.objects.filter(batch=batch).count()
    assert 0 < done_before < 8
    assert ImportChunk.objects.get(pk=chunk.pk).status == "running"

    monkeypatch.setattr(ingest_files.FileImporter, "add", real_add)
    import_chunk_run(chunk_id=chunk.pk)  # the redelivery
    _assert_one_report(batch)
    assert Image.objects.count() == 7 and Image.objects.values("sha256").distinct().count() == 7
    referenced = set(Image.objects.values_list("file", flat=True)) | set(Image.objects.values_list("source_file",
                                                                                                   flat=True))
    stored = {str(p.relative_to(storage.storage_root())) for p in storage.storage_root().rglob("*") if p.is_file()}
    assert stored <= referenced  # nothing left behind by the dead delivery


def test_reimport_marks_every_file_duplicate_before_any_deidentification(phantom_folder, monkeypatch):
    first = images_import_dispatch(paths=[phantom_folder], actor=None)
    _run_all_chunks(first)

    def no_deid(*args, **kwargs):
        raise AssertionError("a known file was de-identified again")

    monkeypatch.setattr(dicom_module, "deidentify", no_deid)
    again = images_import_dispatch(paths=[phantom_folder], actor=None)
    _run_all_chunks(again)
    _assert_one_report(again)
    assert (again.files_duplicate, again.files_failed, again.files_imported) == (7, 1, 0)
    dup = ImportFileResult.objects.filter(batch=again, status="duplicate").first()
    assert dup.images_duplicate == 1 and "already imported" in dup.message

    # the synchronous path takes the same shortcut
    sync = images_import(sources=[BytesSource(p.name, p.read_bytes()) for p in sorted(phantom_folder.glob("*.dcm"))],
                         actor=None)
    assert (sync.files_duplicate, sync.files_failed) == (5, 1)


def test_the_dedup_key_is_the_hash_of_the_decoded_frame_and_the_deidentified_copy_keeps_it(real_dicom_paths):
    path = real_dicom_paths["CT"]
    batch = images_import(sources=[BytesSource("ct.dcm", Path(path).read_bytes())], actor=None)
    image = Image.objects.get(import_batch=batch)
    original = pydicom.dcmread(path)
    values = np.asarray(pydicom.pixels.apply_modality_lut(original.pixel_array, original), dtype=np.float32)
    assert image.sha256 == frame_sha256(values)  # computed on the decoded pixels, before de-identification

    stored = storage.resolve(image.source_file).read_bytes()
    assert values_sha256(dicom_frame(stored, None)) == image.sha256  # de-identification left the pixels alone
    again = images_import(sources=[BytesSource("deidentified-copy.dcm", stored)], actor=None)
    assert again.files_duplicate == 1 and Image.objects.count() == 1


def test_a_burned_in_annotation_stays_flagged_and_its_reimport_is_a_duplicate(tmp_path):
    path = write_phantoms(tmp_path, 1, seed=3)[0]
    ds = pydicom.dcmread(path)
    ds.BurnedInAnnotation = "YES"
    buf = io.BytesIO()
    ds.save_as(buf, enforce_file_format=True)
    images_import(sources=[BytesSource("burned.dcm", buf.getvalue())], actor=None)
    image = Image.objects.get()
    assert image.metadata["burned_in_annotation"] == "YES"
    stored = pydicom.dcmread(storage.resolve(image.source_file))
    assert stored.BurnedInAnnotation == "YES"  # kept by the profile: releases refuse such images

    again = images_import(sources=[BytesSource("burned-again.dcm", buf.getvalue())], actor=None)
    assert again.files_duplicate == 1
    image.refresh_from_db()
    assert image.metadata["burned_in_annotation"] == "YES"


def test_the_batch_page_shows_live_progress_until_the_chunks_are_done(phantom_folder, curator):
    batch = images_import_dispatch(paths=[phantom_folder], actor=curator, chunk_files=4)
    client = Client()
    client.force_login(curator)
    page = client.get(reverse("annotation:import-batch", args=[batch.pk])).content.decode()
    assert 'id="import-progress"' in page and "job_progress.js" in page and 'max="8"' in page
    url = reverse("annotation:import-batch-progress", args=[batch.pk])
    progress = client.get(url).json()
    assert (progress["status"], progress["done"], progress["total"]) == ("importing", 0, 8)

    import_chunk_run(chunk_id=ImportChunk.objects.filter(batch=batch).first().pk)
    progress = client.get(url).json()
    assert progress["status"] == "importing" and progress["done"] == 4 and "imported" in progress["step"]
    _run_all_chunks(batch)
    assert client.get(url).json()["status"] == "finished"
    page = client.get(reverse("annotation:import-batch", args=[batch.pk])).content.decode()
    assert 'id="import-progress"' not in page and "broken.dcm" in page


def test_resume_sends_the_chunks_not_done(phantom_folder, monkeypatch):
    batch = images_import_dispatch(paths=[phantom_folder], actor=None, chunk_files=4)
    sent = []
    monkeypatch.setattr("annotation.services.ingest_parallel.send", lambda task, *args: sent.append(args) or True)
    first = ImportChunk.objects.filter(batch=batch).first()
    import_chunk_run(chunk_id=first.pk)
    resumed, n = import_batch_resume(batch_id=batch.pk)
    assert n == 1 and sent == [(ImportChunk.objects.filter(batch=batch).last().pk,)]
    assert import_batch_resume(batch_id=10 ** 9) == (None, 0)


def test_a_large_upload_is_spooled_for_the_workers_and_the_spool_removed(settings, curator, real_dicom_paths):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # never reached: sends happen after a commit
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.MEDR2_IMPORT_PARALLEL_MIN_BYTES = 1
    settings.MEDR2_UPLOAD_MAX_BYTES = 1_000_000
    files = [SimpleUploadedFile("ct.dcm", Path(real_dicom_paths["CT"]).read_bytes()),
             SimpleUploadedFile("huge.dcm", b"\0" * 1_000_001)]
    batch = images_upload_queued(files=files, actor=curator)
    spool = Path(batch.options["spool"])
    assert spool.is_dir() and batch.files_total == 2 and batch.finished_at is None
    assert ImportFileResult.objects.get(batch=batch, name="huge.dcm").code == "too_large"
    _run_all_chunks(batch)
    _assert_one_report(batch)
    assert ImportFileResult.objects.get(batch=batch, name="ct.dcm").status == "imported"
    assert not spool.exists()


def test_small_uploads_and_no_broker_import_in_the_request(settings, curator):
    from tests.conftest import png_bytes

    settings.CELERY_TASK_ALWAYS_EAGER = True
    batch = images_upload_queued(files=[SimpleUploadedFile("a.png", png_bytes(color=17))], actor=curator)
    assert batch.finished_at is not None and batch.files_imported == 1
    assert not ImportChunk.objects.filter(batch=batch).exists()


@pytest.mark.django_db(transaction=True)
def test_eager_mode_runs_the_chunks_in_this_process(settings, phantom_folder):
    from celery import current_app

    settings.CELERY_TASK_ALWAYS_EAGER = True
    # the Celery app read its configuration once; an earlier test may have loaded it with eager off
    eager, current_app.conf.task_always_eager = current_app.conf.task_always_eager, True
    try:
        batch = images_import_dispatch(paths=[phantom_folder], actor=None, chunk_files=2)
    finally:
        current_app.conf.task_always_eager = eager
    _assert_one_report(batch)
    assert ImportChunk.objects.filter(batch=batch, status="done").count() == 4
    shutil.rmtree(phantom_folder)


def test_only_importers_read_a_batch_s_progress(phantom_folder, make_user):
    from accounts.roles import Role

    batch = images_import_dispatch(paths=[phantom_folder], actor=None)
    url = reverse("annotation:import-batch-progress", args=[batch.pk])
    client = Client()
    client.force_login(make_user(Role.ANNOTATOR))
    assert client.get(url).status_code == 403
    client.logout()
    assert client.get(url).status_code in (302, 403)


@pytest.mark.django_db(transaction=True)
def test_the_writer_thread_commits_every_file_in_order_and_goes_away(phantom_folder, monkeypatch):
    import threading

    from annotation.services.images import path_sources

    monkeypatch.setattr(ingest_files, "BIG_FILE_BYTES", 1)  # every file waits for an empty queue: that path too
    seen = []
    batch = images_import(sources=path_sources([phantom_folder]), actor=None, on_result=seen.append)
    batch.refresh_from_db()
    assert (batch.files_imported, batch.files_failed, batch.images_created) == (7, 1, 7)
    assert len(seen) == 8 and all(r.pk for r in seen)
    assert not [t for t in threading.enumerate() if t.name == "ingest-write"]
    again = images_import(sources=path_sources([phantom_folder]), actor=None)
    assert (again.files_duplicate, again.files_failed) == (7, 1)
    assert list(ImportFileResult.objects.filter(batch=again).values_list("position", flat=True)) == list(range(8))
    assert audit_verify().ok
