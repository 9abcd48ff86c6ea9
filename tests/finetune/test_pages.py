"""The fine-tuning pages: the list, the new-job form (the service's refusals shown in it), a job's page (live
progress, settings, data, result, adapter, links), its progress JSON, cancel / resume, who may see what.

Nothing trains here: the database is not transactional, so `transaction.on_commit` never sends the task;
the send itself is recorded (`queued`) to check that a created or resumed job is queued once."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from annotation.splits import split_for_group
from finetune.models import FineTuneJob
from finetune.services import job_create

pytestmark = pytest.mark.django_db

HISTORY = [{"step": 1, "loss": 2.5}, {"step": 2, "loss": 2.1, "val_loss": 2.3}, {"step": 3, "loss": 1.8},
           {"step": 4, "loss": 1.6, "val_loss": 1.9}]


def group_in(split: str) -> str:
    """A split group that annotation.splits puts in `split`."""
    return next(g for g in (f"ft-{i}" for i in range(1000)) if split_for_group(g) == split)


@pytest.fixture
def items_in(phantom_images):
    """Approved chains on one phantom image whose patient is in the given split."""
    from annotation.models import Image, QAItem
    from annotation.services.chains import chains_generate

    def _make(split: str = "train", seed: int = 0):
        (image,) = phantom_images(1, seed=seed)
        Image.objects.filter(pk=image.pk).update(split_group=group_in(split))
        chains_generate(image_ids=[image.pk], actor=None, seed=0)
        QAItem.objects.filter(is_current=True).update(status=QAItem.Status.APPROVED)
        return image

    return _make


@pytest.fixture
def queued(monkeypatch):
    """Every send of a fine-tuning task (finetune.services' after-commit dispatch), as (task name, job id)."""
    sent = []
    monkeypatch.setattr("finetune.services.send_after_commit", lambda task, *args: sent.append((task.name, *args)))
    return sent


@pytest.fixture
def job(items_in, base_model, queued):
    items_in("train")
    return job_create(actor=None, base_endpoint=base_model, recipe="stepwise", steps=20, seed=3,
                      config={"tokens_per_step": 256, "eval_every": 2})


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def complete(job, *, run=None, endpoint=None, **result):
    """The state job_complete leaves (set directly: nothing trains in these tests)."""
    FineTuneJob.objects.filter(pk=job.pk).update(
        status="completed", progress={"step": 4, "steps": job.steps, "loss": 1.6, "val_loss": 1.9, "tokens": 1024,
                                      "tokens_per_s": 512.0, "eta_s": 0, "peak_rss_bytes": 3 << 30,
                                      "history": HISTORY},
        result={"status": "stopped_early", "steps": 4, "tokens": 1024, "train_seconds": 75.4, "tokens_per_s": 13.6,
                "best_val_loss": 1.9, "best_step": 4, "peak_rss_bytes": 3 << 30, "peak_gpu_bytes": None,
                "resumed_from": 2, **result},
        adapter_hashes={"adapter_model.safetensors": "ab" * 32, "adapter_config.json": "cd" * 32},
        result_endpoint=endpoint, evaluation_run=run)
    job.refresh_from_db()
    return job


def test_each_page_renders_for_a_reader_and_is_refused_to_others(job, users):
    reads = [reverse("finetune:job-list"), reverse("finetune:job-detail", args=[job.pk]),
             reverse("finetune:job-progress", args=[job.pk])]
    for role in (Role.CURATOR, Role.AUDITOR, Role.ADMIN):
        client = client_for(users[role])
        assert [client.get(url).status_code for url in reads] == [200, 200, 200], role
    for role in (Role.ANNOTATOR, Role.ADJUDICATOR, None):
        client = client_for(users[role])
        assert [client.get(url).status_code for url in reads] == [403, 403, 403], role
    assert Client().get(reads[0]).status_code == 302   # anonymous: to the login page
    # creating, cancelling and resuming need run_evaluations: the auditor reads only
    auditor = client_for(users[Role.AUDITOR])
    assert auditor.get(reverse("finetune:job-create")).status_code == 403
    assert auditor.post(reverse("finetune:job-action", args=[job.pk, "cancel"])).status_code == 403
    assert client_for(users[Role.CURATOR]).get(reverse("finetune:job-create")).status_code == 200
    job.refresh_from_db()
    assert job.status == "pending"


def test_the_navigation_shows_fine_tuning_to_readers_of_results(job, users):
    html = client_for(users[Role.AUDITOR]).get(reverse("finetune:job-list")).content.decode()
    assert re.findall(r'class="active">([^<]+)</a>', html) == ["Fine-tuning"]
    dashboard = client_for(users[Role.ANNOTATOR]).get(reverse("dashboard:index")).content.decode()
    assert "Fine-tuning" not in dashboard and "Fine-tuning" in \
        client_for(users[Role.CURATOR]).get(reverse("dashboard:index")).content.decode()


def test_a_job_created_through_the_form_is_queued_and_shown(items_in, base_model, queued, users):
    items_in("train")
    client = client_for(users[Role.CURATOR])
    form = client.get(reverse("finetune:job-create")).content.decode()
    assert base_model.name in form and "stepwise (the chain" in form   # recipes with their labels
    response = client.post(reverse("finetune:job-create"), {
        "base_endpoint": base_model.pk, "stage": ["S1", "S2"], "recipe": "answer_only", "steps": 7, "seed": 2,
        "tokens_per_step": 512, "lr": 0.005, "eval_every": 0, "patience": ""})
    job = FineTuneJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("finetune:job-detail", args=[job.pk])
    assert (job.recipe, job.steps, job.seed, job.item_filters) == ("answer_only", 7, 2, {"stage": ["S1", "S2"]})
    assert (job.config["tokens_per_step"], job.config["lr"], job.config["eval_every"]) == (512, 0.005, 0)
    assert job.config["patience"] == 3   # left empty: the service's default
    assert queued == [("finetune.train", job.pk)]
    assert job.created_by == users[Role.CURATOR]

    html = client.get(response["Location"]).content.decode()
    assert "queued" in html                                      # the success message
    assert "answer only (the same items, answers alone)" in html  # the recipe's label
    assert "current approved items · stage S1, S2" in html
    assert "0.005 (linear warm-up" in html and "Validation</th><td>never" in html
    assert f"<code>job-{job.pk}</code>" in html
    assert "{'" not in html and "['" not in html                 # no Python reprs
    assert 'data-active="1"' in html and "js/finetune.js" in html and 'id="ft-progress-data"' in html


@pytest.mark.parametrize("case,fragment", [
    ("missing directory", "does not exist"),
    ("no train items", "has no train items"),
    ("release and filters", "give a release or item filters, not both"),
])
def test_the_form_shows_what_the_service_refuses(case, fragment, items_in, base_model, make_endpoint, queued, users,
                                                 tmp_path):
    from releases.services import release_create

    items_in("test")
    release = release_create(actor=None)           # every item in the test split: nothing to train on
    data = {"base_endpoint": base_model.pk, "recipe": "stepwise", "steps": 5, "seed": 0}
    if case == "missing directory":
        gone = make_endpoint("gone-vlm", "transformers", parameters={"path": str(tmp_path / "gone")})
        data["base_endpoint"] = gone.pk
    elif case == "no train items":
        data["release"] = release.pk
    else:
        data |= {"release": release.pk, "stage": ["S1"]}
    response = client_for(users[Role.CURATOR]).post(reverse("finetune:job-create"), data)
    assert response.status_code == 400
    assert fragment in response.content.decode()
    assert not FineTuneJob.objects.exists() and queued == []


def test_the_form_offers_only_local_base_models_and_checks_its_fields(items_in, base_model, make_endpoint, users):
    items_in("train")
    other = make_endpoint("null-baseline-model", "null")
    adapter = make_endpoint("adapter-on-top", "transformers", parameters={"path": "/x", "adapter": "/y"})
    client = client_for(users[Role.CURATOR])
    form = client.get(reverse("finetune:job-create")).content.decode()
    assert base_model.name in form and other.name not in form and adapter.name not in form
    for bad in ({"base_endpoint": other.pk}, {"recipe": "guess"}, {"steps": 0}, {"steps": "abc"}):
        data = {"base_endpoint": base_model.pk, "recipe": "stepwise", "steps": 5, "seed": 0, **bad}
        response = client.post(reverse("finetune:job-create"), data)
        assert response.status_code == 400, bad
        assert 'class="bad small"' in response.content.decode(), bad   # the field's error
    assert not FineTuneJob.objects.exists()


def test_the_job_page_shows_progress_result_adapter_and_links(job, users, make_endpoint):
    from workers.models import EvaluationRun

    tuned = make_endpoint("tiny-base-ft-stepwise-s3", "transformers",
                          parameters={"path": "/models/tiny", "adapter": "/srv/var/finetune/job-1/adapter"},
                          display_name="tiny + stepwise (seed 3)", lineage={"job": job.pk})
    run = EvaluationRun.objects.create(name="paired", status="running")
    complete(job, run=run, endpoint=tuned)
    FineTuneJob.objects.filter(pk=job.pk).update(data={
        "train": {"examples": 3, "turns": 12, "items": 12, "by_source": {"chain": 3}, "items_without_clean_variant": 1},
        "val": {"examples": 1, "turns": 4, "items": 4, "by_source": {"chain": 1}, "items_without_clean_variant": 0,
                "source": "held out from train (no val items)"},
        "test": {"items": 5}})
    html = client_for(users[Role.AUDITOR]).get(reverse("finetune:job-detail", args=[job.pk])).content.decode()
    assert 'data-active="0"' in html
    assert "3 chains" in html and "held out from train (no val items)" in html
    assert "1 item without a clean variant left out" in html
    assert 'max="20" value="4"' in html and "step 4 / 20 (20.0%)" in html
    assert "3.0\xa0GB" in html and "1.6000" in html and "1.9000" in html
    assert "stopped early" in html and "1.9000 at step 4" in html and "1 min 15 s" in html
    assert "step 2 (a checkpoint)" in html
    assert f'title="{"ab" * 32}">{"ab" * 8}…' in html            # a hash shortened, in full on hover
    assert reverse("workers:run-detail", args=[run.pk]) in html
    assert f'{reverse("finetune:compare")}?run={run.pk}' in html
    assert "tiny + stepwise (seed 3)" in html
    assert "/srv/var/finetune" not in html and "/models/tiny" not in html   # no server paths
    assert '"val_loss": 1.9' in html                              # the curve's points, for finetune.js


def test_progress_json(job, users):
    FineTuneJob.objects.filter(pk=job.pk).update(status="running", progress={
        "step": 2, "steps": 20, "loss": 2.1, "val_loss": 2.3, "tokens": 512, "tokens_per_s": 256.0, "eta_s": 36.0,
        "peak_rss_bytes": 1 << 30, "history": HISTORY[:2]})
    body = client_for(users[Role.AUDITOR]).get(reverse("finetune:job-progress", args=[job.pk])).json()
    assert (body["status"], body["active"], body["percent"]) == ("running", True, 10.0)
    assert body["progress"]["history"] == HISTORY[:2] and body["progress"]["eta_s"] == 36.0
    complete(job)
    body = client_for(users[Role.AUDITOR]).get(reverse("finetune:job-progress", args=[job.pk])).json()
    assert (body["status"], body["active"]) == ("completed", False)
    assert client_for(users[Role.AUDITOR]).get(reverse("finetune:job-progress", args=[job.pk + 99])).status_code == 404


def test_cancel_and_resume_from_the_page(job, users, queued):
    client = client_for(users[Role.CURATOR])
    page = client.get(reverse("finetune:job-detail", args=[job.pk])).content.decode()
    assert 'id="cancel-form"' in page and 'id="resume-form"' not in page
    cancel, resume = (reverse("finetune:job-action", args=[job.pk, a]) for a in ("cancel", "resume"))
    assert client.get(cancel).status_code == 405                   # POST only
    assert client.post(reverse("finetune:job-action", args=[job.pk, "delete"])).status_code == 404
    response = client.post(cancel, follow=True)
    job.refresh_from_db()
    assert job.status == "cancelled" and "Job cancelled." in response.content.decode()
    assert 'id="resume-form"' in response.content.decode()
    response = client.post(cancel, follow=True)                    # a wrong state: said, nothing changes
    assert "only pending or running jobs can be cancelled" in response.content.decode()
    queued.clear()
    client.post(resume)
    job.refresh_from_db()
    assert job.status == "pending" and queued == [("finetune.train", job.pk)]
    response = client.post(resume, follow=True)
    assert "or running jobs whose worker is gone, can be resumed" in response.content.decode()
    # a running job is asked to stop after its current step
    FineTuneJob.objects.filter(pk=job.pk).update(status="running")
    client.post(cancel)
    job.refresh_from_db()
    assert (job.status, job.cancel_requested) == ("running", True)


def test_the_list_filters_by_status_and_pages(job, users):
    FineTuneJob.objects.bulk_create([FineTuneJob(name=f"old {i}", base_endpoint=job.base_endpoint, recipe="mixed",
                                                 steps=10, status="failed") for i in range(50)])
    client = client_for(users[Role.AUDITOR])
    html = client.get(reverse("finetune:job-list")).content.decode()
    assert "page 1 of 2" in html and html.count("<progress") == 50
    html = client.get(reverse("finetune:job-list"), {"status": "pending"}).content.decode()
    assert f"#{job.pk} {job.name}" in html and "old 1" not in html
    assert "current approved items" in html


def test_the_admin_lists_jobs_readably_and_never_edits_them(job, users):
    client = client_for(users[Role.ADMIN])
    html = client.get(reverse("admin:finetune_finetunejob_changelist")).content.decode()
    assert "items: every approved" in html and "0 / 20" in html and job.base_endpoint.name in html
    assert client.get(reverse("admin:finetune_finetunejob_add")).status_code == 403


def test_the_pages_name_the_release_without_loading_its_heavy_json(job, users):
    """A release at the paper's scale carries megabytes of JSON (its changelog): the job pages and the form's
    release choices show its name and version, and never select those columns."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from releases.models import Release
    from releases.selectors import HEAVY_FIELDS

    release = Release.objects.create(version="3.1.0", created_date="2026-01-01", changes=[
        {"kind": "added", "item_key": f"key-{i}", "from_version": None, "to_version": 1, "reason": "new"}
        for i in range(500)])
    FineTuneJob.objects.filter(pk=job.pk).update(release=release)
    client = client_for(users[Role.ADMIN])
    for url, shown in ((reverse("finetune:job-list"), "release 3.1.0"),
                       (reverse("finetune:job-detail", kwargs={"pk": job.pk}), "release med-r2 3.1.0"),
                       (reverse("finetune:job-create"), "med-r2 3.1.0")):
        with CaptureQueriesContext(connection) as queries:
            html = client.get(url).content.decode()
        assert shown in html, url
        loaded = [f for f in HEAVY_FIELDS for q in queries if f'"releases_release"."{f}"' in q["sql"]]
        assert loaded == [], (url, loaded)
