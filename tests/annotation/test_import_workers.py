"""Parallel import on real `celery worker` processes, over a private Redis (append-only, as a production
Redis keeps its queue) and the PostgreSQL test database: `manage.py import_images --parallel` splits a
folder into chunks, two workers import them into one batch; a worker SIGKILLed mid-import is replaced and
its chunk redone, with no duplicate rows; chunks whose messages Redis lost are sent again by the sweep (Celery
beat inside a worker)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import Count

from annotation.models import Image, ImportBatch, ImportChunk, ImportFileResult
from annotation.phantoms import write_phantoms
from audit.models import AuditEvent
from audit.services import audit_verify
from tests.procs import PrivateRedis, database_url

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

#: Celery's command line in a process whose decoder kills it (SIGKILL, as the kernel's out-of-memory killer
#: does) on a file whose name holds $POISON: patched here before the worker starts, so its pool processes,
#: forked from it, inherit the patch
POISONED_CELERY = """
import os, signal, sys
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "medr2.settings")
django.setup()
from annotation.services import ingest_files
real_decode, poison = ingest_files.decode, os.environ["POISON"]
def decode(data, *, name, **kwargs):
    if poison in name:
        os.kill(os.getpid(), signal.SIGKILL)
    return real_decode(data, name=name, **kwargs)
ingest_files.decode = decode
from celery.__main__ import main
sys.argv[0] = "celery"
main()
"""


class Cluster:
    """A private redis-server and `celery worker` processes (queue cpu) that import into the test database."""

    def __init__(self, tmp: Path, storage_root: Path):
        self.tmp, self.procs = tmp, []
        self.redis = PrivateRedis(tmp)
        self.redis.start()
        url = self.redis.url
        self.env = {**os.environ, "DATABASE_URL": database_url(), "CELERY_BROKER_URL": url,
                    "CELERY_RESULT_BACKEND": url, "CELERY_TASK_ALWAYS_EAGER": "false", "CELERY_VISIBILITY_TIMEOUT": "8",
                    "CELERY_UNACKED_RESTORE_INTERVAL": "2", "CELERY_UNACKED_RESTORE_THROTTLE": "1",
                    "CELERY_UNACKED_MUTEX_EXPIRE": "10", "MEDR2_STORAGE_ROOT": str(storage_root),
                    "PYTHONUNBUFFERED": "1"}

    def start_worker(self, beat: bool = False, launcher: tuple[str, ...] = ("-m", "celery"), **env: str,
                     ) -> subprocess.Popen:
        """One worker; with `beat`, Celery beat runs inside it (the import sweep among its jobs). `launcher`:
        what runs Celery's command line (python's arguments before it)."""
        n = len(self.procs)
        scheduler = ["-B", "-s", str(self.tmp / f"beat-{n}")] if beat else []
        proc = subprocess.Popen(
            [sys.executable, *launcher, "-A", "medr2", "worker", "-Q", "cpu", "--concurrency=1",
             "--prefetch-multiplier=1", "-n", f"ingest{n}-{os.getpid()}@%h", "--without-gossip", "--without-mingle",
             "--loglevel=INFO", *scheduler],
            cwd=ROOT, env={**self.env, **env}, stdout=open(self.tmp / f"worker-{n}.log", "w"), stderr=subprocess.STDOUT,
            start_new_session=True)
        self.procs.append(proc)
        return proc

    def manage(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                              text=True, timeout=timeout)

    def kill(self, proc: subprocess.Popen) -> None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(p.read_text()[-3000:] for p in sorted(self.tmp.glob("worker-*.log")))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
        self.redis.stop()


@pytest.fixture
def cluster(tmp_path, storage_root):
    if connection.vendor != "postgresql":
        pytest.fail("worker tests need PostgreSQL: run them through `make test`")
    logs = tmp_path / "cluster"
    logs.mkdir()
    made = Cluster(logs, storage_root)
    yield made
    made.stop()


def _phantom_folder(root: Path, count: int, seed: int) -> Path:
    folder = root / "incoming"
    write_phantoms(folder, count, seed=seed)
    for p in folder.glob("*.json"):
        p.unlink()
    return folder


def _wait(predicate, timeout: float, what: str, cluster: Cluster) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}\n{cluster.logs()}")


def _assert_one_report_without_duplicates(batch: ImportBatch, files: int, images: int) -> None:
    batch.refresh_from_db()
    assert batch.finished_at is not None and batch.files_total == files == batch.files_done
    results = ImportFileResult.objects.filter(batch=batch)
    assert results.count() == files
    assert sorted(results.values_list("position", flat=True)) == list(range(files))
    assert not Image.objects.values("sha256").annotate(n=Count("id")).filter(n__gt=1).exists()
    assert Image.objects.filter(import_batch=batch).count() == batch.images_created == images
    assert audit_verify().ok


def test_two_workers_import_one_folder_into_one_batch(cluster, tmp_path):
    folder = _phantom_folder(tmp_path, 24, seed=11)
    (folder / "zz-broken.dcm").write_bytes(b"DICM" * 10)
    first, second = cluster.start_worker(), cluster.start_worker()
    done = cluster.manage("import_images", str(folder), "--parallel", "--chunk-files", "3", "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr + cluster.logs()
    assert "24 file(s) imported" in done.stdout and "rejected incoming/zz-broken.dcm" in done.stdout

    batch = ImportBatch.objects.get()
    _assert_one_report_without_duplicates(batch, files=25, images=24)
    assert ImportFileResult.objects.get(batch=batch, status="failed").code == "unsupported_format"
    assert ImportChunk.objects.filter(batch=batch, status="done").count() == 9
    for n in (0, 1):  # both workers took chunks
        assert "annotation.import_chunk" in (tmp_path / "cluster" / f"worker-{n}.log").read_text(), cluster.logs()

    again = cluster.manage("import_images", str(folder), "--parallel", "--no-progress")
    assert again.returncode == 0, again.stderr
    second_batch = ImportBatch.objects.exclude(pk=batch.pk).get()
    second_batch.refresh_from_db()
    assert (second_batch.files_duplicate, second_batch.files_failed, second_batch.images_created) == (24, 1, 0)
    assert first.poll() is None and second.poll() is None


def test_a_worker_killed_mid_import_is_replaced_and_nothing_is_doubled(cluster, tmp_path):
    folder = _phantom_folder(tmp_path, 60, seed=12)
    victim = cluster.start_worker()
    sent = cluster.manage("import_images", str(folder), "--parallel", "--chunk-files", "20", "--no-wait")
    assert sent.returncode == 0, sent.stderr
    batch = ImportBatch.objects.get()
    _wait(lambda: ImportFileResult.objects.filter(batch=batch).count() >= 5, 120, "the first files", cluster)
    cluster.kill(victim)
    killed_at = ImportFileResult.objects.filter(batch=batch).count()
    batch.refresh_from_db()
    assert batch.finished_at is None and killed_at < 60, "the import finished before the kill"

    cluster.start_worker()
    _wait(lambda: ImportBatch.objects.filter(pk=batch.pk, finished_at__isnull=False).exists(), 180,
          "the batch to finish", cluster)
    _assert_one_report_without_duplicates(batch, files=60, images=60)
    assert ImportChunk.objects.filter(batch=batch, attempts__gte=2).exists() or killed_at % 20 == 0
    referenced = set(Image.objects.values_list("file", flat=True)) | set(Image.objects.values_list("source_file",
                                                                                                   flat=True))
    root = Path(cluster.env["MEDR2_STORAGE_ROOT"])
    stored = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "incoming" not in p.parts}
    # the dead delivery may leave files it wrote but never committed; its redelivery reuses them
    assert referenced <= stored


def test_chunks_whose_messages_redis_lost_are_sent_again_by_the_sweep(cluster, tmp_path):
    import redis as redis_client

    folder = _phantom_folder(tmp_path, 9, seed=13)
    sent = cluster.manage("import_images", str(folder), "--parallel", "--chunk-files", "3", "--no-wait")
    assert sent.returncode == 0, sent.stderr
    batch = ImportBatch.objects.get()
    broker = redis_client.Redis.from_url(cluster.redis.url)
    assert broker.llen("cpu") == 3
    broker.delete("cpu")           # the broker loses every chunk (as a pop that never reached a worker does)
    time.sleep(2.5)                # MEDR2_IMPORT_LOST_GRACE_S
    cluster.start_worker(beat=True, MEDR2_IMPORT_RECONCILE_S="1", MEDR2_IMPORT_LOST_GRACE_S="2")
    _wait(lambda: ImportBatch.objects.filter(pk=batch.pk, finished_at__isnull=False).exists(), 120,
          "the batch to finish", cluster)
    _assert_one_report_without_duplicates(batch, files=9, images=9)
    resend = AuditEvent.objects.get(action="annotation.import_batch.resend", object_id=str(batch.pk))
    assert resend.after["n"] == 3 and "not started" in resend.after["why"][0]


def test_a_file_that_kills_its_worker_every_time_is_given_up_and_the_rest_imported(cluster, tmp_path):
    folder = _phantom_folder(tmp_path, 8, seed=14)
    (folder / "phantom-00002.dcm").rename(folder / "phantom-00002-poison.dcm")   # position 2 of chunk 0 (0-4)
    worker = cluster.start_worker(launcher=("-c", POISONED_CELERY), POISON="poison")
    sent = cluster.manage("import_images", str(folder), "--parallel", "--chunk-files", "5", "--no-wait")
    assert sent.returncode == 0, sent.stderr
    batch = ImportBatch.objects.get()
    _wait(lambda: ImportBatch.objects.filter(pk=batch.pk, finished_at__isnull=False).exists(), 90,
          "the batch to finish", cluster)

    _assert_one_report_without_duplicates(batch, files=8, images=7)
    assert (batch.files_imported, batch.files_failed) == (7, 1)
    lost = ImportFileResult.objects.get(batch=batch, status="failed")
    assert (lost.position, lost.name, lost.code) == (2, "incoming/phantom-00002-poison.dcm", "worker_lost")
    assert "died 2 times" in lost.message
    chunk = ImportChunk.objects.get(batch=batch, index=0)
    assert chunk.attempts >= 4 and (chunk.status, chunk.current_position) == ("done", None)  # 1 fast, 2 careful
    give_up = AuditEvent.objects.get(action="annotation.import_chunk.give_up", object_id=str(batch.pk))
    assert give_up.after["positions"] == [2] and give_up.after["why"] == ["worker_lost"]
    log = (tmp_path / "cluster" / "worker-0.log").read_text()
    assert log.count("SIGKILL") >= 3, log[-3000:]   # the pool process really died, each time
    assert "gave up position 2" in log and "poison" not in log   # the log names no file
    assert worker.poll() is None
