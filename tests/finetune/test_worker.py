"""Fine-tuning on real Celery worker processes (private Redis broker, PostgreSQL test database, tiny VLM):

- end to end: `manage.py finetune --queue` sends the job to the gpu queue; a worker trains it, registers
  the fine-tuned model and runs the paired evaluation it starts;
- SIGKILL: the worker is killed in the middle of training; the redelivered task on a new worker resumes
  from the last checkpoint, and the final adapter equals an uninterrupted run's (same seed, same data order).
"""
from __future__ import annotations

import json
import time

import pytest
from safetensors.torch import load_file

from audit.models import AuditEvent
from finetune.models import FineTuneJob
from finetune.services import job_create, job_execute, work_path
from tests.workers.test_eval_worker import _wait, redis, workers  # noqa: F401 - the worker fixtures
from workers.models import EvaluationRun, Prediction

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def ft_workers(workers, tmp_path, settings):  # noqa: F811
    root = tmp_path / "finetune"
    settings.MEDR2_FINETUNE_ROOT = root
    workers.env.update({"MEDR2_FINETUNE_ROOT": str(root), "MEDR2_FINETUNE_PROGRESS_S": "0.2"})
    return workers


def test_a_worker_fine_tunes_registers_the_model_and_runs_the_paired_evaluation(ft_content, base_model, ft_workers):
    ft_workers.start()
    config = json.dumps({"tokens_per_step": 256, "eval_every": 2, "checkpoint_every": 2, "lr": 0.005})
    out = ft_workers.manage("finetune", "--base", base_model.name, "--recipe", "stepwise", "--steps", "4",
                            "--seed", "1", "--config", config, "--queue", "--no-progress", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr + ft_workers.logs()
    job = FineTuneJob.objects.get()
    assert job.status == "completed" and job.attempts == 1 and job.result["steps"] == 4
    assert [p["step"] for p in job.progress["history"]][-1] == 4
    assert job.result_endpoint.lineage["job"] == job.pk and "registered" in out.stdout
    run = job.evaluation_run
    _wait(lambda: EvaluationRun.objects.get(pk=run.pk).status not in ("pending", "running"), 240,
          "the paired evaluation", ft_workers)
    run.refresh_from_db()
    assert run.status == "completed", run.error
    by_model = {e.name: Prediction.objects.filter(run=run, endpoint=e).count() for e in run.endpoints.all()}
    assert set(by_model) == {base_model.name, job.result_endpoint.name} and len(set(by_model.values())) == 1
    ft_preds = Prediction.objects.filter(run=run, endpoint=job.result_endpoint)
    assert ft_preds.filter(outcome="error").count() == 0
    assert ft_preds.filter(tokens_out__gt=0).count() == ft_preds.count()


def test_a_worker_killed_mid_training_resumes_from_the_checkpoint_to_the_same_adapter(ft_content, base_model,
                                                                                     ft_workers, users):
    config = {"tokens_per_step": 1024, "eval_every": 5, "patience": 0, "checkpoint_every": 5, "lr": 0.005}
    first = ft_workers.start()
    out = ft_workers.manage("finetune", "--base", base_model.name, "--recipe", "stepwise", "--steps", "40",
                            "--seed", "7", "--config", json.dumps(config), "--queue", "--no-wait")
    assert out.returncode == 0, out.stdout + out.stderr
    job = FineTuneJob.objects.get()
    state = work_path(job) / "checkpoint" / "state.json"

    def checkpoint_step() -> int:
        try:
            return json.loads(state.read_text())["step"]
        except (OSError, ValueError):
            return 0

    deadline = time.monotonic() + 240
    while checkpoint_step() < 10 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert 10 <= checkpoint_step() < 40, ft_workers.logs()
    ft_workers.kill(first)
    killed_at = checkpoint_step()
    assert FineTuneJob.objects.get(pk=job.pk).status == "running"
    ft_workers.start()   # the unacked task comes back after the visibility timeout
    _wait(lambda: FineTuneJob.objects.get(pk=job.pk).status not in ("pending", "running"), 300,
          "the resumed job", ft_workers)
    job.refresh_from_db()
    assert job.status == "completed", job.error + ft_workers.logs()
    assert job.attempts == 2 and job.result["resumed_from"] >= killed_at and job.result["steps"] == 40
    assert AuditEvent.objects.filter(object_id=str(job.pk), action="finetune.job.resume_after_loss").exists()

    # the same job uninterrupted, in this process: the same adapter within floating-point tolerance
    twin = job_execute(job_id=job_create(actor=users["curator"], base_endpoint=base_model, recipe="stepwise",
                                         steps=40, seed=7, config=config, start=False).pk)
    assert twin.status == "completed" and twin.result["resumed_from"] == 0
    resumed = load_file(str(work_path(job) / "adapter" / "adapter_model.safetensors"))
    straight = load_file(str(work_path(twin) / "adapter" / "adapter_model.safetensors"))
    assert resumed.keys() == straight.keys() and resumed
    worst = max(float((resumed[k] - straight[k]).abs().max()) for k in resumed)
    assert worst < 1e-5, worst
    assert twin.result["tokens"] == job.result["tokens"]
