"""Fine-tuning jobs through the service: every bad input refused before training, a job run in-process
to completion (adapter hashed, endpoint registered with its lineage, paired evaluation started, audited),
the registered model loads and answers, cancel and resume."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from audit.models import AuditEvent
from finetune.models import FineTuneJob
from finetune.services import job_cancel, job_create, job_execute, job_resume, work_path
from workers.backends import GenerationRequest, load_backend
from workers.models import EvaluationRun

from .conftest import FAST

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _roots(settings, tmp_path):
    settings.MEDR2_FINETUNE_ROOT = tmp_path / "finetune"
    settings.CELERY_TASK_ALWAYS_EAGER = False


def _create(users, base, **kw):
    args = {"actor": users["curator"], "base_endpoint": base, "recipe": "stepwise", "steps": 4, "config": FAST,
            "start": False, **kw}
    return job_create(**args)


@pytest.mark.parametrize("steps", [0, -3, "10", 2.5, True, None])
def test_a_budget_that_is_not_a_positive_integer_is_refused(users, base_model, ft_content, steps):
    with pytest.raises(ValidationError, match="positive integer"):
        _create(users, base_model, steps=steps)
    assert not FineTuneJob.objects.exists()


def test_an_unknown_recipe_is_refused(users, base_model, ft_content):
    with pytest.raises(ValidationError, match="unknown recipe 'chain_of_thought'"):
        _create(users, base_model, recipe="chain_of_thought")


def test_a_missing_or_non_vlm_base_model_is_refused(users, make_endpoint, tmp_path, ft_content):
    missing = make_endpoint("gone", "transformers", parameters={"path": str(tmp_path / "nowhere")})
    with pytest.raises(ValidationError, match="does not exist"):
        _create(users, missing)
    text_only = tmp_path / "text-only"
    text_only.mkdir()
    (text_only / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 8}))
    llm = make_endpoint("llm", "transformers", parameters={"path": str(text_only)})
    with pytest.raises(ValidationError, match="not a vision-language model"):
        _create(users, llm)
    baseline = make_endpoint("rnd", "random")
    with pytest.raises(ValidationError, match="only local transformers models"):
        _create(users, baseline)
    assert not FineTuneJob.objects.exists()


def test_an_item_set_or_release_without_train_items_is_refused(users, base_model, ft_content):
    test_only = ft_content["splits"]["test"]
    with pytest.raises(ValidationError, match="no train items"):
        _create(users, base_model, item_filters={"item_ids": test_only})
    with pytest.raises(ValidationError, match="unknown training settings"):
        _create(users, base_model, config={"learning_rate": 1})
    with pytest.raises(ValidationError, match="lr must be a positive number"):
        _create(users, base_model, config={"lr": 0})


def test_a_job_trains_registers_its_model_and_starts_the_paired_evaluation(users, base_model, ft_content):
    job = _create(users, base_model, seed=3)
    seen = []
    job = job_execute(job_id=job.pk, on_progress=seen.append)
    assert job.status == FineTuneJob.Status.COMPLETED, job.error
    assert [e["step"] for e in seen] == [1, 2, 3, 4]
    assert job.result["steps"] == 4 and job.result["tokens"] >= 4 * FAST["tokens_per_step"]
    assert job.result["best_val_loss"] is not None and job.progress["history"][-1]["step"] == 4
    train = job.data["train"]
    assert train["examples"] > 0 and train["by_source"] == {"chain": train["examples"]}
    adapter = work_path(job) / "adapter"
    for name, digest in job.adapter_hashes.items():
        assert hashlib.sha256((adapter / name).read_bytes()).hexdigest() == digest
    assert "adapter_model.safetensors" in job.adapter_hashes
    ft = job.result_endpoint
    assert ft.parameters["adapter"] == str(adapter) and ft.queue == base_model.queue
    assert ft.lineage["base"] == "tiny-base" and ft.lineage["recipe"] == "stepwise" and ft.lineage["seed"] == 3
    assert ft.lineage["adapter_sha256"] == job.adapter_hashes
    run = job.evaluation_run
    assert set(run.endpoints.values_list("name", flat=True)) == {"tiny-base", ft.name} and run.split == "test"
    assert sorted(run.item_filters["item_ids"]) == sorted(ft_content["splits"]["test"])
    actions = list(AuditEvent.objects.filter(object_type="finetune.finetunejob").order_by("pk")
                   .values_list("action", flat=True))
    assert actions == ["finetune.job.create", "finetune.job.start", "finetune.job.complete"]
    assert EvaluationRun.objects.filter(pk=run.pk).exists()
    # the registered endpoint loads through the ordinary backend (adapter merged) and answers
    backend = load_backend("transformers", ft.parameters)
    from PIL import Image

    image = Image.new("RGB", (32, 32))
    answer = backend.generate([GenerationRequest(key=1, prompt="Which organ is shown?", image=image)])
    assert answer[0].ok and answer[0].tokens_out >= 1
    assert backend.describe()["adapter_sha256"]["adapter_model.safetensors"] == job.adapter_hashes[
        "adapter_model.safetensors"]
    # a redelivered task finds the job done and does nothing
    assert job_execute(job_id=job.pk) is None


def test_mixed_and_answer_only_recipes_build_their_examples(users, base_model, ft_content):
    mixed = job_execute(job_id=_create(users, base_model, recipe="mixed", steps=1).pk)
    sources = mixed.data["train"]["by_source"]
    assert sources["chain"] > 0 and sources["variant"] > 0
    answer_only = job_execute(job_id=_create(users, base_model, recipe="answer_only", steps=1).pk)
    assert answer_only.data["train"]["by_source"] == {"item": answer_only.data["train"]["items"]}
    assert answer_only.data["train"]["items"] == mixed.data["train"]["items"]


def test_cancel_and_resume(users, base_model, ft_content):
    job = _create(users, base_model, steps=6)
    job_cancel(job=job, actor=users["curator"])
    job.refresh_from_db()
    assert job.status == "cancelled"
    assert job_execute(job_id=job.pk) is None     # a cancelled job is not trained by a late task
    job_resume(job=job, actor=users["curator"])
    job.refresh_from_db()
    assert job.status == "pending" and not job.cancel_requested
    # a running job stops at the next step when asked, keeping its checkpoint; resume goes on from it
    calls = []

    def cancel_midway(entry):
        calls.append(entry["step"])
        if entry["step"] == 2:
            FineTuneJob.objects.filter(pk=job.pk).update(cancel_requested=True)

    from finetune import services

    services.PROGRESS_EVERY_S, saved = 0.0, services.PROGRESS_EVERY_S
    try:
        stopped = job_execute(job_id=job.pk, on_progress=cancel_midway)
    finally:
        services.PROGRESS_EVERY_S = saved
    assert stopped.status == "cancelled" and calls[-1] in (2, 3)
    assert (Path(work_path(stopped)) / "checkpoint" / "state.json").is_file()
    job_resume(job=stopped, actor=users["curator"])
    done = job_execute(job_id=job.pk)
    assert done.status == "completed" and done.result["resumed_from"] == calls[-1] and done.result["steps"] == 6


def test_a_second_delivery_leaves_a_job_another_worker_is_training(users, base_model, ft_content):
    """The training lock: while another session (a live worker) holds it, a duplicate delivery neither
    trains nor counts an attempt, and the job cannot be 'resumed' from under it; once it is released (the
    worker died), resume works and the job trains."""
    from django.db import connections

    from finetune.services import LOCK_CLASS, job_is_training

    job = _create(users, base_model, steps=2)
    FineTuneJob.objects.filter(pk=job.pk).update(status="running", attempts=1)   # a worker started it
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_CLASS, job.pk])
            assert cursor.fetchone()[0]
        assert job_is_training(job)
        assert job_execute(job_id=job.pk) is None
        job.refresh_from_db()
        assert job.status == "running" and job.attempts == 1
        from common.errors import Conflict

        with pytest.raises(Conflict, match="worker is gone"):
            job_resume(job=job, actor=users["curator"])
    finally:
        other.close()                          # the worker's connection dies with it: the lock is gone
    assert not job_is_training(job)
    job_resume(job=job, actor=users["curator"])
    assert job_execute(job_id=job.pk).status == "completed"


def test_the_command_trains_with_a_progress_bar_and_refuses_bad_input(users, base_model, ft_content):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("finetune", "--base", "tiny-base", "--recipe", "answer_only", "--steps", "2", "--no-progress",
                 "--name", "cli", "--config", json.dumps(FAST), stdout=out)
    job = FineTuneJob.objects.get(name="cli")
    assert job.status == "completed" and "registered tiny-base-ft-answer-only-s0-j" in out.getvalue()
    call_command("finetune", "--base", "tiny-base", "--recipe", "answer_only", "--steps", "2", "--no-progress",
                 "--name", "cli", "--skip-if-done", stdout=out)
    assert FineTuneJob.objects.count() == 1 and "already complete" in out.getvalue()
    for args, message in ((["--steps", "0"], "positive integer"), (["--base", "nobody"], "unknown model"),
                          (["--release", "9.9.9"], "unknown release"), (["--config", "[1]"], "JSON object"),
                          (["--config", '{"lr": -1}'], "lr must be a positive number")):
        base = {"--base": "tiny-base", "--recipe": "stepwise", "--steps": "2"}
        base.update(dict(zip(args[::2], args[1::2])))
        with pytest.raises(CommandError, match=message):
            call_command("finetune", *[x for kv in base.items() for x in kv], "--no-progress", stdout=StringIO())
    assert FineTuneJob.objects.count() == 1
