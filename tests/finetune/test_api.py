"""The fine-tuning API: list (paginated) and create, one job, cancel / resume; every refusal in the one
error shape {"code", "detail", "fields"?}. Nothing trains (see test_pages.py: on_commit never runs here)."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from finetune.models import FineTuneJob
from tests.finetune.test_pages import client_for, complete, items_in, job, queued  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

LIST = "finetune:api-job-list"


def post(client, data):
    return client.post(reverse(LIST), data, content_type="application/json")


def assert_error(response, status: int, code: str, *, field: str | None = None, says: str = ""):
    body = response.json()
    assert response.status_code == status, body
    assert set(body) <= {"code", "detail", "fields"} and body["code"] == code and body["detail"], body
    if field:
        assert field in body["fields"], body
    assert says in body["detail"], body


def test_list_and_detail_for_readers(job, users):  # noqa: F811
    auditor = client_for(users[Role.AUDITOR])
    body = auditor.get(reverse(LIST)).json()
    assert body["count"] == 1 and set(body) == {"count", "next", "previous", "results"}
    row = body["results"][0]
    assert row["id"] == job.pk and row["status"] == "pending" and row["recipe"] == "stepwise"
    assert row["base_model"] == {"id": job.base_endpoint.pk, "name": "tiny-base", "label": "tiny-base"}
    assert row["release"] is None and row["result_model"] is None and row["evaluation_run"] is None
    assert row["recipe_label"].startswith("stepwise (") and row["work_folder"] == f"job-{job.pk}"
    assert row["progress"] == {"step": 0, "steps": 20, "history": []}
    assert row["config"]["tokens_per_step"] == 256 and row["data"]["train"]["items"] > 0
    assert auditor.get(reverse(LIST), {"status": "failed"}).json()["count"] == 0
    detail = auditor.get(reverse("finetune:api-job-detail", args=[job.pk])).json()
    assert detail == row
    assert_error(auditor.get(reverse("finetune:api-job-detail", args=[job.pk + 99])), 404, "not_found")
    for role in (Role.ANNOTATOR, Role.ADJUDICATOR, None):
        assert_error(client_for(users[role]).get(reverse(LIST)), 403, "permission_denied")
    assert Client().get(reverse(LIST)).status_code in (401, 403)


def test_a_finished_job_shows_its_model_and_run(job, users, make_endpoint):  # noqa: F811
    from workers.models import EvaluationRun

    tuned = make_endpoint("tiny-ft", "transformers", parameters={"path": "/m", "adapter": "/m/a"},
                          lineage={"job": job.pk, "recipe": "stepwise"})
    run = EvaluationRun.objects.create(name="paired")
    complete(job, run=run, endpoint=tuned)
    body = client_for(users[Role.AUDITOR]).get(reverse("finetune:api-job-detail", args=[job.pk])).json()
    assert body["result_model"] == {"id": tuned.pk, "name": "tiny-ft", "label": "tiny-ft",
                                    "lineage": {"job": job.pk, "recipe": "stepwise"}}
    assert body["evaluation_run"] == {"id": run.pk, "name": "paired", "status": "pending"}
    assert body["result"]["best_val_loss"] == 1.9 and len(body["progress"]["history"]) == 4
    assert set(body["adapter_hashes"]) == {"adapter_model.safetensors", "adapter_config.json"}


def test_create_queues_a_checked_job(items_in, base_model, queued, users):  # noqa: F811
    items_in("train")
    response = post(client_for(users[Role.CURATOR]), {
        "base_model": base_model.name, "recipe": "mixed", "steps": 12, "seed": 4, "name": "mixed s4",
        "item_filters": {"stage": ["S1", "S2", "S3", "S4"]}, "config": {"tokens_per_step": 128, "patience": 0}})
    assert response.status_code == 201, response.json()
    body = response.json()
    made = FineTuneJob.objects.get()
    assert body["id"] == made.pk and body["status"] == "pending" and body["name"] == "mixed s4"
    assert (made.recipe, made.steps, made.seed) == ("mixed", 12, 4)
    assert made.item_filters == {"stage": ["S1", "S2", "S3", "S4"]}
    assert (made.config["tokens_per_step"], made.config["patience"], made.config["eval_every"]) == (128, 0, 10)
    assert queued == [("finetune.train", made.pk)]
    # the auditor reads but never creates
    assert_error(post(client_for(users[Role.AUDITOR]), {"base_model": base_model.name, "recipe": "mixed",
                                                         "steps": 3}), 403, "permission_denied")


@pytest.mark.parametrize("change,field,says", [
    ({"recipe": "guess"}, "recipe", ""),
    ({"steps": 0}, "steps", ""),
    ({"steps": "abc"}, "steps", ""),
    ({"steps": True}, "steps", ""),
    ({"steps": None}, "steps", ""),
    ({"seed": -1}, "seed", ""),
    ({"base_model": "no-such-model"}, "base_model", "unknown model"),
    ({"base_model": "a-null-model"}, None, "only local transformers models"),
    ({"base_model": "gone-vlm"}, None, "does not exist"),
    ({"release": "9.9.9"}, "release", "unknown release"),
    ({"release": "TEST-ONLY"}, None, "has no train items"),
    ({"item_filters": {"stage": ["S9"]}}, None, "has no train items"),
    ({"item_filters": {"colour": ["red"]}}, "item_filters", "unknown keys"),
    ({"config": {"lr": -1}}, None, "lr must be a positive number"),
    ({"config": {"tokens_per_step": 0}}, None, "tokens_per_step must be a positive integer"),
    ({"config": {"learning_rate": 0.1}}, "config", "unknown keys"),
])
def test_bad_input_answers_400_in_the_one_error_shape(change, field, says, items_in, base_model,  # noqa: F811
                                                      make_endpoint, queued, users, tmp_path):  # noqa: F811
    from releases.services import release_create

    items_in("train")
    make_endpoint("a-null-model", "null")
    make_endpoint("gone-vlm", "transformers", parameters={"path": str(tmp_path / "gone")})
    if change.get("release") == "TEST-ONLY":
        from annotation.models import Image
        from tests.finetune.test_pages import group_in

        Image.objects.update(split_group=group_in("test"))
        change = {"release": release_create(actor=None).version}
    response = post(client_for(users[Role.CURATOR]), {"base_model": base_model.name, "recipe": "stepwise",
                                                      "steps": 5, **change})
    assert_error(response, 400, "invalid", field=field, says=says)
    assert not FineTuneJob.objects.exists() and queued == []


def test_cancel_and_resume_change_state_and_refuse_a_wrong_one(job, users, queued):  # noqa: F811
    client = client_for(users[Role.CURATOR])

    def act(action, pk=job.pk):
        return client.post(reverse("finetune:api-job-action", args=[pk, action]))

    assert_error(act("resume"), 409, "conflict", says="or running jobs whose worker is gone, can be resumed")
    body = act("cancel").json()
    assert (body["status"], body["cancel_requested"]) == ("cancelled", True)
    assert_error(act("cancel"), 409, "conflict", says="only pending or running jobs can be cancelled")
    queued.clear()
    body = act("resume").json()
    assert (body["status"], body["cancel_requested"]) == ("pending", False)
    assert queued == [("finetune.train", job.pk)]
    FineTuneJob.objects.filter(pk=job.pk).update(status="running")
    body = act("cancel").json()
    assert (body["status"], body["cancel_requested"]) == ("running", True)   # stops after its current step
    assert_error(act("delete"), 404, "not_found")
    assert_error(act("cancel", pk=job.pk + 99), 404, "not_found")
    assert_error(client_for(users[Role.AUDITOR]).post(reverse("finetune:api-job-action", args=[job.pk, "cancel"])),
                 403, "permission_denied")
    assert client.get(reverse("finetune:api-job-action", args=[job.pk, "cancel"])).status_code == 405
