"""The experiment's path end to end at toy size: pre-training, one job per recipe, one evaluation of all
models together, the comparison written to results.json."""
from __future__ import annotations

import json

import pytest

from finetune.experiment import run_experiment
from finetune.models import FineTuneJob
from workers.models import EvaluationRun

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def eager_celery():
    """The evaluation runs in-process, as in the demo (the Celery app's own setting, not Django's)."""
    from medr2.celery import app

    before = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield app
    app.conf.task_always_eager, app.conf.task_eager_propagates = before


def test_the_experiment_runs_end_to_end_at_toy_size(ft_content, settings, tmp_path, users, eager_celery):
    from releases.services import release_create

    settings.MEDR2_FINETUNE_ROOT = tmp_path / "finetune"
    release = release_create(version="1.0.0", actor=users["admin"])
    record = run_experiment(release=release, out=tmp_path / "exp", pretrain_steps=2, steps=2, seeds=[0],
                            tokens_per_step=256, kinds=["clean"], say=lambda _: None)
    jobs = FineTuneJob.objects.order_by("pk")
    assert [(j.recipe, j.status, j.evaluate_after, j.evaluation_run_id) for j in jobs] == [
        ("stepwise", "completed", False, None), ("answer_only", "completed", False, None)]
    assert all(j.config["answer_style"] == "text" for j in jobs)
    run = EvaluationRun.objects.get(pk=record["run"])
    assert run.status == "completed" and run.variant_kinds == ["clean"]
    names = set(run.endpoints.values_list("name", flat=True))
    assert names == {"tiny-pretrained", "random-baseline", *[j.result_endpoint.name for j in jobs]}
    saved = json.loads((tmp_path / "exp" / "results.json").read_text())
    assert saved["run"] == run.pk and saved["settings"]["pretrain_steps"] == 2 and saved["comparison"]
    assert saved["pretraining_check"]["accuracy"]["base"]["n"] > 0
    (contrast,) = saved["contrasts"]   # stepwise against answer-only, seed 0, every metric with its interval
    assert contrast["base"].startswith("tiny-pretrained-ft-answer-only") and "step_accuracy" in contrast["differences"]
