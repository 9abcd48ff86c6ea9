"""A real `celery worker` process on the embedded broker (`CELERY_BROKER_URL=filesystem://`, what `make demo`
runs), against the PostgreSQL test database, with a private broker folder:

- an evaluation run started through the normal service (`run_evaluation`, which calls `run_create`) goes
  through the worker asynchronously: queued (its batches wait as message files while no worker runs),
  running (the progress the run page polls, `/runs/<id>/progress.json`, moves), completed and scored by
  its last batch (no chord: workers/services/dispatch.py);
- a worker killed outright loses what it held (this broker has no visibility timeout): after a restart
  the run's resume action sends the unfinished batches again; a pool process killed mid-batch is
  handled by Celery: the batch is requeued (acks_late, reject_on_worker_lost) and redone. Nothing lost,
  nothing doubled.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from django.db import connection
from django.db.models import Count

from accounts.roles import Role
from audit.models import AuditEvent
from audit.services import audit_verify
from workers.models import EvaluationRun, Prediction, RunBatch

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _database_url() -> str:
    s = connection.settings_dict
    return f"postgres://{s['USER'] or 'postgres'}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class EmbeddedWorkers:
    """`celery worker` processes and `manage.py` commands on a private embedded broker folder."""

    def __init__(self, tmp: Path, storage_root: Path):
        self.folder, self.logdir = tmp / "celery", tmp / "logs"
        self.logdir.mkdir()
        self.env = {**os.environ, "DATABASE_URL": _database_url(), "CELERY_BROKER_URL": "filesystem://",
                    "CELERY_BROKER_FOLDER": str(self.folder), "CELERY_TASK_ALWAYS_EAGER": "false",
                    "MEDR2_STORAGE_ROOT": str(storage_root), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
        self.env.pop("CELERY_RESULT_BACKEND", None)
        self.procs: list[subprocess.Popen] = []
        self.files: list = []

    def start(self) -> subprocess.Popen:
        log = open(self.logdir / f"worker-{len(self.procs)}.log", "w")   # noqa: SIM115 - closed in stop_all
        self.files.append(log)
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "medr2", "worker", "-Q", "gpu,cpu,sync", "--concurrency=1",
             "--prefetch-multiplier=1", "-n", f"embedded{len(self.procs)}-{os.getpid()}@%h", "--without-gossip",
             "--without-mingle", "--loglevel=INFO"],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def manage(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        out = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                             text=True, timeout=timeout)
        assert out.returncode == 0, out.stdout + out.stderr + self.logs()
        return out

    def stop_all(self) -> None:
        """The test is over: kill at once (a warm shutdown would only make the suite wait)."""
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        for f in self.files:
            f.close()

    def logs(self, full: bool = False) -> str:
        return "\n".join(p.read_text()[None if full else -4000:] for p in sorted(self.logdir.glob("worker-*.log")))


@pytest.fixture
def embedded(tmp_path, storage_root):
    if connection.vendor != "postgresql":
        pytest.fail("worker tests need PostgreSQL: run them through `make test`")
    pool = EmbeddedWorkers(tmp_path, storage_root)
    yield pool
    pool.stop_all()


def _tiny_vlm(make_endpoint, tiny_vlm_dir, max_new_tokens: int):
    """The tiny VLM; more new tokens make each batch take longer (so that a test sees it mid-way)."""
    return make_endpoint("tiny-vlm", "transformers", parameters={"path": str(tiny_vlm_dir), "batch_size": 2,
                                                                  "max_new_tokens": max_new_tokens})


def _wait(predicate, timeout: float, what: str, workers: EmbeddedWorkers):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}\n{workers.logs()}")


def _assert_complete_without_duplicates(run: EvaluationRun) -> None:
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.COMPLETED, run.error
    preds = Prediction.objects.filter(run=run)
    assert preds.count() == run.total
    assert not preds.values("endpoint", "variant").annotate(n=Count("id")).filter(n__gt=1).exists()
    assert not RunBatch.objects.filter(run=run).exclude(status=RunBatch.Status.DONE).exists()
    assert run.metrics and run.scored_at is not None
    assert audit_verify().ok


def test_a_run_goes_through_the_worker_asynchronously_and_its_progress_moves(eval_content, make_endpoint, tiny_vlm_dir,
                                                                              embedded, client, make_user):
    eval_content(2, kinds=["clean", "misleading_hint"])
    tiny = _tiny_vlm(make_endpoint, tiny_vlm_dir, max_new_tokens=32)
    baseline = make_endpoint("random-baseline", "random", parameters={"seed": 3})
    # queued: the run is sent before any worker runs; the batches wait as message files in the broker folder
    embedded.manage("run_evaluation", "--split", "all", "--models", "tiny-vlm,random-baseline", "--name", "async",
                    "--batch-size", "2", "--no-wait")
    run = EvaluationRun.objects.get(name="async")
    assert run.status == EvaluationRun.Status.RUNNING and run.scored_at is None
    assert not Prediction.objects.filter(run=run).exists()
    tiny_batches = RunBatch.objects.filter(run=run, endpoint=tiny).count()
    assert tiny_batches >= 3 and set(RunBatch.objects.filter(run=run).values_list("status", flat=True)) == {"pending"}
    assert len(list((embedded.folder / "queue").glob("*.gpu.msg"))) == tiny_batches   # the tiny VLM's queue

    # running: a worker starts; the JSON the run page polls moves while it works
    client.force_login(make_user(Role.CURATOR))
    seen: list[dict] = []

    def finished() -> bool:
        seen.append(client.get(f"/runs/{run.pk}/progress.json").json())
        return seen[-1]["status"] == "completed" and seen[-1]["scored"]

    embedded.start()
    _wait(finished, 180, "the run to complete", embedded)
    part_way = [p for p in seen if p["status"] == "running" and 0 < p["done"] < p["total"]]
    assert len({p["done"] for p in part_way}) >= 2, seen   # the page showed the run part-way, and moving
    assert seen[-1]["done"] == seen[-1]["total"] == run.total

    # completed: every prediction once, scored; the last batch finalized the run (no chord, no polling task)
    _assert_complete_without_duplicates(run)
    assert set(run.metrics["models"]) == {str(tiny.pk), str(baseline.pk)}
    assert AuditEvent.objects.filter(action="workers.run.finish", object_id=str(run.pk)).count() == 1
    assert not re.search(r"celery\.chord_unlock", embedded.logs(full=True))


def test_killed_workers_lose_and_double_nothing(eval_content, make_endpoint, tiny_vlm_dir, embedded):
    eval_content(3, kinds=["clean", "misleading_hint"])
    _tiny_vlm(make_endpoint, tiny_vlm_dir, max_new_tokens=32)
    worker = embedded.start()
    embedded.manage("run_evaluation", "--split", "all", "--models", "tiny-vlm", "--name", "kill",
                    "--batch-size", "6", "--no-wait")
    run = EvaluationRun.objects.get(name="kill")
    assert RunBatch.objects.filter(run=run).count() >= 3

    def running_batch() -> RunBatch | None:
        return RunBatch.objects.filter(run=run, status="running").first()

    # 1. the whole worker is killed mid-batch: what it held is lost (no visibility timeout) ...
    _wait(lambda: running_batch() is not None, 120, "a batch to start", embedded)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=10)
    assert RunBatch.objects.filter(run=run).exclude(status="done").exists()
    assert Prediction.objects.filter(run=run).count() < run.total
    before = dict(RunBatch.objects.filter(run=run).values_list("pk", "attempts"))   # a killed batch stays "running"
    # ... and the run's resume action (the run page's button) sends every batch that is not done again
    worker = embedded.start()
    embedded.manage("shell", "-c", f"from workers.models import EvaluationRun; from workers.services.runs import "
                                   f"run_resume; run_resume(run=EvaluationRun.objects.get(pk={run.pk}), actor=None)")

    # 2. a pool process dies in the middle of a batch: Celery rejects the task, the broker requeues it
    def started_anew() -> RunBatch | None:
        return next((b for b in RunBatch.objects.filter(run=run, status="running") if b.attempts > before[b.pk]), None)

    victim = None
    while victim is None:   # a batch that ends just before the kill does not count: kill during the next one
        _wait(lambda: started_anew() is not None, 120, "a batch to start on the new worker", embedded)
        candidate = started_anew()
        children = [c for c in psutil.Process(worker.pid).children() if c.status() != psutil.STATUS_ZOMBIE]
        assert len(children) == 1   # --concurrency=1: the one pool process
        children[0].send_signal(signal.SIGKILL)
        candidate.refresh_from_db()
        if candidate.status != "done":
            victim = candidate
        before = dict(RunBatch.objects.filter(run=run).values_list("pk", "attempts"))
    _wait(lambda: EvaluationRun.objects.filter(pk=run.pk, scored_at__isnull=False).exclude(status="running").exists(),
          180, "the run to finish and be scored", embedded)
    _assert_complete_without_duplicates(run)
    assert "WorkerLostError" in embedded.logs(full=True)
    assert RunBatch.objects.get(pk=victim.pk).attempts > victim.attempts   # redelivered and run again
