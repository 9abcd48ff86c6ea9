"""Evaluation on real Celery worker processes: a private Redis broker (append-only file, so a
restart keeps the queue, as a production Redis does), the PostgreSQL test database, the tiny VLM.

- end to end: `manage.py run_evaluation` dispatches, a worker runs the tiny VLM and the random
  baseline on demo variants, the results page shows the metrics;
- SIGKILL: the worker is killed in the middle of a run, a new one finishes it, with no missing and
  no duplicate predictions;
- Redis restart: the broker goes away mid-run and comes back; the run completes (a batch whose message
  died with the connection is found by the sweep, Celery beat inside the worker, and sent again);
- a lost message: the run's window is sent, the broker loses it, the sweep sends it again.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Count

from accounts.roles import Role
from audit.models import AuditEvent
from audit.services import audit_verify
from tests.procs import PrivateRedis, database_url
from workers.models import EvaluationRun, Prediction, RunBatch

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def redis(tmp_path):
    if connection.vendor != "postgresql":
        pytest.fail("worker tests need PostgreSQL: run them through `make test`")
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


class Workers:
    """Start and kill `celery worker` processes against the private broker."""

    def __init__(self, redis: PrivateRedis, storage_root: Path, logdir: Path):
        self.env = {**os.environ, "DATABASE_URL": database_url(), "CELERY_BROKER_URL": redis.url,
                    "CELERY_RESULT_BACKEND": redis.url, "CELERY_TASK_ALWAYS_EAGER": "false",
                    "CELERY_VISIBILITY_TIMEOUT": "8", "MEDR2_EVAL_MAX_BATCH_SECONDS": "5",
                    "CELERY_UNACKED_RESTORE_INTERVAL": "2", "CELERY_UNACKED_RESTORE_THROTTLE": "1",
                    # a SIGKILL can land while the dying worker holds kombu's restore lock
                    "CELERY_UNACKED_MUTEX_EXPIRE": "10",
                    "MEDR2_STORAGE_ROOT": str(storage_root), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
                    # the sweep (workers/services/dispatch.py), fast enough for a test
                    "MEDR2_EVAL_RECONCILE_S": "2", "MEDR2_EVAL_LOST_GRACE_S": "3", "MEDR2_EVAL_STALE_S": "15"}
        self.logdir, self.procs = logdir, []

    def start(self, beat: bool = False) -> subprocess.Popen:
        """One worker; with `beat`, Celery beat runs inside it (the periodic sweep among its jobs)."""
        log = open(self.logdir / f"worker-{len(self.procs)}.log", "w")
        scheduler = ["-B", "-s", str(self.logdir / f"beat-{len(self.procs)}")] if beat else []
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "medr2", "worker", "-Q", "gpu,cpu", "--concurrency=1",
             "--prefetch-multiplier=1", "-n", f"w{len(self.procs)}-{os.getpid()}@%h", "--without-gossip",
             "--without-mingle", "--loglevel=INFO", *scheduler],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def manage(self, *args: str, timeout: float = 240, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env={**self.env, **env},
                              capture_output=True, text=True, timeout=timeout)

    def kill(self, proc: subprocess.Popen) -> None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)

    def logs(self) -> str:
        return "\n".join(p.read_text()[-3000:] for p in sorted(self.logdir.glob("worker-*.log")))


@pytest.fixture
def workers(redis, storage_root, tmp_path):
    logdir = tmp_path / "logs"
    logdir.mkdir()
    pool = Workers(redis, storage_root, logdir)
    yield pool
    pool.stop_all()


@pytest.fixture
def models(make_endpoint, tiny_vlm_dir):
    return {
        "tiny": make_endpoint("tiny-vlm", "transformers", parameters={"path": str(tiny_vlm_dir), "max_new_tokens": 3,
                                                                     "batch_size": 4}),
        "random": make_endpoint("random-baseline", "random", parameters={"seed": 3}),
    }


def _wait(predicate, timeout: float, what: str, workers: Workers):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    pytest.fail(f"timed out waiting for {what}\n{workers.logs()}")


def _assert_complete_without_duplicates(run: EvaluationRun) -> None:
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.COMPLETED, run.error
    preds = Prediction.objects.filter(run=run)
    assert preds.count() == run.total
    dupes = preds.values("endpoint", "variant").annotate(n=Count("id")).filter(n__gt=1)
    assert not dupes.exists()
    assert not RunBatch.objects.filter(run=run).exclude(status=RunBatch.Status.DONE).exists()
    assert audit_verify().ok


def test_worker_runs_the_tiny_vlm_and_the_results_page_shows_metrics(eval_content, models, workers, client,
                                                                     make_user):
    eval_content(2, kinds=["clean", "misleading_hint", "image_ablation"])
    workers.start()
    done = workers.manage("run_evaluation", "--split", "all", "--models", "tiny-vlm,random-baseline", "--name", "e2e",
                          "--batch-size", "8", "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr + workers.logs()
    run = EvaluationRun.objects.get(name="e2e")
    _assert_complete_without_duplicates(run)
    tiny = Prediction.objects.filter(run=run, endpoint=models["tiny"])
    assert tiny.exclude(outcome="error").count() == tiny.count()  # the VLM really generated for each variant
    assert tiny.filter(tokens_out__gt=0).count() == tiny.count()
    assert run.metrics and set(run.metrics["models"]) == {str(models["tiny"].pk), str(models["random"].pk)}

    client.force_login(make_user(Role.AUDITOR))
    page = client.get(f"/runs/{run.pk}/").content.decode()
    for text in ("Leaderboard", "Tiny", "random-baseline", "Stage degradation", "<svg", "Robustness by variant kind",
                 "misleading hint", "image ablation", "Paired comparisons"):
        assert text.lower() in page.lower(), text


def test_a_worker_killed_mid_run_is_replaced_and_nothing_is_lost_or_doubled(eval_content, models, workers):
    eval_content(3, kinds=["clean", "misleading_hint", "option_permutation"])
    first = workers.start()
    out = workers.manage("run_evaluation", "--split", "all", "--models", "tiny-vlm", "--name", "kill",
                         "--batch-size", "6", "--no-wait")
    assert out.returncode == 0, out.stderr
    run = EvaluationRun.objects.get(name="kill")
    _wait(lambda: RunBatch.objects.filter(run=run, status="done").count() >= 2, 120, "two batches", workers)
    assert RunBatch.objects.filter(run=run).exclude(status="done").exists(), "the run finished before the kill"
    workers.kill(first)
    killed_at = Prediction.objects.filter(run=run).count()
    assert killed_at < run.total
    workers.start()
    _wait(lambda: EvaluationRun.objects.get(pk=run.pk).status != "running", 180, "the run to finish", workers)
    _assert_complete_without_duplicates(run)
    assert RunBatch.objects.filter(run=run, attempts__gte=2).exists() or killed_at % 6 == 0


def test_the_run_completes_when_redis_restarts_mid_run(eval_content, models, workers, redis):
    eval_content(3, kinds=["clean", "misleading_hint"])
    workers.start(beat=True)
    out = workers.manage("run_evaluation", "--split", "all", "--models", "tiny-vlm,random-baseline", "--name", "redis",
                         "--batch-size", "6", "--no-wait")
    assert out.returncode == 0, out.stderr
    run = EvaluationRun.objects.get(name="redis")
    _wait(lambda: RunBatch.objects.filter(run=run, status="done").exists(), 120, "a first batch", workers)
    redis.stop()
    time.sleep(2)
    redis.start()
    _wait(lambda: EvaluationRun.objects.get(pk=run.pk).status != "running", 180, "the run to finish", workers)
    _assert_complete_without_duplicates(run)


def test_a_run_is_sent_a_window_at_a_time_and_a_lost_message_is_sent_again(eval_content, models, workers, redis):
    import redis as redis_client

    eval_content(3, kinds=["clean", "misleading_hint"])
    out = workers.manage("run_evaluation", "--split", "all", "--models", "random-baseline", "--name", "lost",
                         "--batch-size", "2", "--no-wait", MEDR2_EVAL_DISPATCH_WINDOW="2")
    assert out.returncode == 0, out.stderr
    run = EvaluationRun.objects.get(name="lost")
    batches = RunBatch.objects.filter(run=run)
    assert batches.count() >= 4
    broker = redis_client.Redis.from_url(redis.url)
    # no chord: two plain messages in the model's queue, the rest of the run only in the database
    assert batches.filter(dispatched_at__isnull=False).count() == 2 and broker.llen("cpu") == 2
    broker.delete("cpu")           # the broker loses both (as a pop that never reached a worker does)
    time.sleep(3.5)                # MEDR2_EVAL_LOST_GRACE_S
    workers.start(beat=True)
    _wait(lambda: EvaluationRun.objects.get(pk=run.pk).status != "running", 120, "the run to finish", workers)
    _assert_complete_without_duplicates(run)
    resend = AuditEvent.objects.filter(action="workers.run.resend", object_id=str(run.pk)).first()
    assert resend is not None and resend.after["n"] == 2


def test_broker_settings_keep_gpu_workers_safe():
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1
    assert settings.CELERY_TASK_ACKS_LATE and settings.CELERY_TASK_REJECT_ON_WORKER_LOST
    from workers.tasks import eval_batch

    assert eval_batch.acks_late and eval_batch.reject_on_worker_lost
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] > settings.MEDR2_EVAL_MAX_BATCH_SECONDS
