"""Evaluation runs through the services: selection, batches, idempotent execution, errors,
cancel / resume, scoring. Batches are executed in-process here; tests/workers/test_eval_worker.py
runs them on real Celery workers."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from annotation.models import QAItem, Variant
from audit.models import AuditEvent
from audit.services import audit_verify
from workers.models import EvaluationRun, Prediction, RunBatch
from workers.services.execution import batch_execute
from workers.services.runs import run_cancel, run_create, run_finalize, run_resume, run_variant_ids

pytestmark = pytest.mark.django_db


def _run(endpoints, **kwargs):
    kwargs.setdefault("batch_size", 10)
    kwargs.setdefault("split", "all")  # a handful of phantom images: every split, so every test has items
    run = run_create(name="t", endpoints=endpoints, actor=None, start=False, **kwargs)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
    run.refresh_from_db()
    return run


def _execute_all(run):
    for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    return run_finalize(run_id=run.pk)


def test_run_selects_approved_current_items_and_always_includes_clean(eval_content, make_endpoint):
    eval_content(2, kinds=["clean", "misleading_hint", "image_ablation"])
    draft = QAItem.objects.order_by("pk").first()
    QAItem.objects.filter(pk=draft.pk).update(status=QAItem.Status.DRAFT)
    ids = run_variant_ids(item_filters={}, variant_kinds=["misleading_hint"], split="all")
    chosen = Variant.objects.filter(pk__in=ids)
    assert set(chosen.values_list("kind", flat=True)) == {"clean", "misleading_hint"}
    assert not chosen.filter(item=draft).exists()
    with pytest.raises(ValidationError, match="unknown variant kinds"):
        run_variant_ids(item_filters={}, variant_kinds=["no_such_kind"])
    with pytest.raises(ValidationError, match="unknown item filters"):
        run_variant_ids(item_filters={"colour": "red"}, variant_kinds=[])


def test_run_cuts_batches_per_model_and_is_audited(eval_content, make_endpoint):
    eval_content(2, kinds=["clean"])
    a, b = make_endpoint("rand", "random"), make_endpoint("nul", "null")
    run = _run([a, b], batch_size=7)
    n = Variant.objects.count()
    assert run.n_variants == n and run.total == 2 * n
    assert run.batches.count() == 2 * -(-n // 7)
    assert sorted(v for batch in run.batches.filter(endpoint=a) for v in batch.variant_ids) == \
        sorted(Variant.objects.values_list("pk", flat=True))
    assert AuditEvent.objects.filter(action="workers.run.create").count() == 1


def test_batches_write_one_prediction_per_variant_and_model_and_never_twice(eval_content, make_endpoint):
    eval_content(2, kinds=["clean", "misleading_hint", "option_permutation"])
    run = _run([make_endpoint("rand", "random"), make_endpoint("nul", "null")])
    _execute_all(run)
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.COMPLETED
    assert Prediction.objects.filter(run=run).count() == run.total
    # a redelivered batch (same id, again) writes nothing and changes nothing
    before = list(Prediction.objects.filter(run=run).order_by("pk").values_list("pk", "raw_output"))
    RunBatch.objects.filter(run=run).update(status=RunBatch.Status.PENDING)
    for batch_id in run.batches.values_list("pk", flat=True):
        assert batch_execute(batch_id=batch_id).written == 0
    assert list(Prediction.objects.filter(run=run).order_by("pk").values_list("pk", "raw_output")) == before
    assert audit_verify().ok


def test_a_partly_done_batch_only_does_the_rest(eval_content, make_endpoint):
    eval_content(1, kinds=["clean", "misleading_hint"])
    run = _run([make_endpoint("nul", "null")], batch_size=1000)
    batch = run.batches.get()
    batch_execute(batch_id=batch.pk)
    keep = batch.variant_ids[: len(batch.variant_ids) // 2]
    Prediction.objects.filter(run=run).exclude(variant_id__in=keep).delete()
    RunBatch.objects.filter(pk=batch.pk).update(status=RunBatch.Status.RUNNING, n_done=len(keep))
    outcome = batch_execute(batch_id=batch.pk)
    assert outcome.skipped == len(keep) and outcome.written == len(batch.variant_ids) - len(keep)
    assert Prediction.objects.filter(run=run).count() == len(batch.variant_ids)


def test_a_missing_image_fails_that_variant_only_and_the_run_completes(eval_content, make_endpoint, storage_root,
                                                                     tiny_vlm_dir):
    content = eval_content(2, kinds=["clean"])
    broken = content["images"][0]
    (storage_root / broken.file).unlink()
    run = _run([make_endpoint("tiny", "transformers", parameters={"path": str(tiny_vlm_dir), "max_new_tokens": 2})])
    _execute_all(run)
    run.refresh_from_db()
    errors = Prediction.objects.filter(run=run, outcome="error")
    assert run.status == EvaluationRun.Status.COMPLETED
    assert errors.exists() and all("image could not be loaded" in e.error for e in errors)
    assert not errors.exclude(item__chain__image=broken).exists()


def test_cancel_stops_batches_and_resume_finishes_without_duplicates(eval_content, make_endpoint):
    eval_content(2, kinds=["clean", "misleading_hint"])
    run = _run([make_endpoint("nul", "null")], batch_size=5)
    first, *rest = list(run.batches.order_by("index").values_list("pk", flat=True))
    batch_execute(batch_id=first)
    run_cancel(run=run, actor=None)
    assert batch_execute(batch_id=rest[0]).status == "cancelled"
    assert Prediction.objects.filter(run=run).count() == 5
    with pytest.raises(ValidationError):
        run_cancel(run=run, actor=None)
    run_resume(run=run, actor=None)  # dispatch happens on commit; here we execute by hand
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.RUNNING
    _execute_all(run)
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.COMPLETED
    assert Prediction.objects.filter(run=run).count() == run.total
    actions = AuditEvent.objects.filter(action__startswith="workers.run.").order_by("seq")
    assert list(actions.values_list("action", flat=True)) == [
        "workers.run.create", "workers.run.cancel", "workers.run.resume", "workers.run.finish", "workers.run.score"]


def test_a_misconfigured_model_fails_its_batches_and_the_run_says_so(eval_content, make_endpoint, tmp_path):
    from workers.backends import BackendError
    from workers.services.execution import batch_fail

    eval_content(1, kinds=["clean"])
    run = _run([make_endpoint("ghost", "transformers", parameters={"path": str(tmp_path / "nowhere")})])
    for batch_id in run.batches.values_list("pk", flat=True):
        with pytest.raises(BackendError) as exc:
            batch_execute(batch_id=batch_id)
        batch_fail(batch_id=batch_id, error=str(exc.value))
    run_finalize(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.FAILED and "resume" in run.error
    assert "nowhere" in run.batches.first().error


def test_scoring_stores_every_metric_for_each_model(eval_content, make_endpoint):
    eval_content(3)
    run = _run([make_endpoint("rand", "random"), make_endpoint("nul", "null")])
    _execute_all(run)
    run.refresh_from_db()
    m = run.metrics
    assert m["complete"] is True and m["n_predictions"] == run.total
    assert set(m["models"]) == {str(e.pk) for e in run.endpoints.all()}
    for model in m["models"].values():
        assert {"step_accuracy", "chain_accuracy", "guess_rate", "robustness", "grounding",
                "abstention_rate", "unparseable_rate"} <= set(model)
        assert 0 <= model["step_accuracy"]["value"] <= 1
    assert m["by_stage"] and m["cells"] and len(m["comparisons"]) == 1
    # the null baseline always answers "A": its step accuracy is the share of clean items whose gold is A
    null = run.endpoints.get(name="nul")
    clean = Prediction.objects.filter(run=run, endpoint=null, variant__kind="clean")
    expected = sum(p.variant.expected_answer.get("letter") == "A" for p in clean) / clean.count()
    assert m["models"][str(null.pk)]["step_accuracy"]["value"] == pytest.approx(expected)


def test_prior_baseline_learns_from_the_train_split_only(eval_content, make_endpoint):
    from annotation.splits import split_for_group
    from workers.services.endpoints import prior_fit, prior_table

    eval_content(4, kinds=["clean"])
    fitted = prior_table(split="train")
    train_items = [i for i in QAItem.objects.filter(is_current=True).select_related("chain__image")
                   if split_for_group(i.chain.image.split_group) == "train"]
    assert fitted["n_items"] == len(train_items)
    endpoint = prior_fit(endpoint=make_endpoint("prior", "prior"), actor=None)
    assert endpoint.parameters["table"] == fitted["table"]
    assert AuditEvent.objects.filter(action="workers.endpoint.update").exists()


def test_endpoint_validation_refuses_secrets_and_unknown_backends(make_endpoint):
    with pytest.raises(ValidationError, match="unknown backend"):
        make_endpoint("x", "no-such-backend")
    with pytest.raises(ValidationError, match="environment variable"):
        make_endpoint("y", "openai-compatible", parameters={"base_url": "http://x", "api_key": "sk-123"})
    with pytest.raises(ValidationError, match="prompt"):
        make_endpoint("z", "null", prompt_template="no placeholder")


def test_splits_keep_a_patient_together_and_are_stable():
    from annotation.splits import split_for_group

    groups = [f"patient-{i}" for i in range(2000)]
    splits = [split_for_group(g) for g in groups]
    assert splits == [split_for_group(g) for g in groups]
    share = {s: splits.count(s) / len(splits) for s in ("train", "val", "test")}
    assert share["train"] == pytest.approx(0.7, abs=0.04) and share["val"] == pytest.approx(0.1, abs=0.03)


def test_progress_results_and_exports_for_a_curator(eval_content, make_endpoint, users):
    from django.test import Client

    from accounts.roles import Role

    eval_content(2, kinds=["clean", "misleading_hint"])
    run = _run([make_endpoint("rand", "random"), make_endpoint("nul", "null")], batch_size=8)
    client = Client()
    client.force_login(users[Role.CURATOR])
    first = run.batches.order_by("pk").first()
    batch_execute(batch_id=first.pk)
    progress = client.get(f"/runs/{run.pk}/progress.json").json()
    assert progress["status"] == "running" and progress["done"] == first.size and progress["total"] == run.total
    assert progress["rate_per_s"] > 0 and progress["eta_seconds"] is not None
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="progress"' in page and 'data-active="1"' in page and "Results appear here" in page
    assert client.get(f"/api/runs/{run.pk}/results/").status_code == 409  # not scored yet

    _execute_all(run)
    api = client.get(f"/api/runs/{run.pk}/").json()
    assert api["status"] == "completed" and api["progress"]["done"] == run.total
    results = client.get(f"/api/runs/{run.pk}/results/").json()
    assert set(results["metrics"]["models"]) == {str(e.pk) for e in run.endpoints.all()}
    exported = client.get(f"/runs/{run.pk}/results.json")
    assert exported["Content-Disposition"].endswith('.json"') and exported.json()["metrics"] == results["metrics"]
    csv_lines = client.get(f"/runs/{run.pk}/results.csv").content.decode().splitlines()
    assert csv_lines[0].startswith("model,run_split,split,stage,category,modality,kind,n,correct,accuracy")
    assert len(csv_lines) == 1 + len(results["metrics"]["cells"])
    preds = client.get(f"/api/runs/{run.pk}/predictions/?outcome=answered&kind=misleading_hint").json()
    assert preds["count"] > 0 and all(p["kind"] == "misleading_hint" for p in preds["results"])
    assert {"raw_output", "parse_method", "parsed", "expected", "correct"} <= set(preds["results"][0])
    listing = client.get(f"/runs/{run.pk}/predictions/?correct=false").content.decode()
    assert "Predictions" in listing
    assert client.get(f"/runs/{run.pk}/results.xml").status_code == 404


def test_run_form_and_api_refuse_bad_input_clearly(eval_content, make_endpoint, users):
    from django.test import Client

    from accounts.roles import Role

    eval_content(1, kinds=["clean"])
    make_endpoint("nul", "null")
    client = Client()
    client.force_login(users[Role.CURATOR])
    r = client.post("/api/runs/", {"name": "x", "models": ["nope"]}, content_type="application/json")
    assert r.status_code == 400 and r.json() == {"code": "invalid", "detail": "unknown models: nope",
                                                 "fields": {"models": ["unknown models: nope"]}}
    r = client.post("/api/runs/", {"name": "x", "models": ["nul"], "item_filters": {"stage": ["S9"]}},
                    content_type="application/json")
    assert r.status_code == 400 and "no variants match" in r.json()["detail"]
    r = client.post("/api/runs/", {"name": "x", "models": ["nul"], "variant_kinds": ["bogus"]},
                    content_type="application/json")
    assert r.status_code == 400 and "unknown variant kinds" in r.json()["detail"]
    r = client.post("/models/new/", {"name": "bad", "backend": "null", "parameters": "{not json",
                                     "prompt_template": "{prompt}", "box_format": "auto"})
    assert r.status_code == 400 and b"not valid JSON" in r.content
    run = run_create(name="x", endpoints=[make_endpoint("rnd", "random")], actor=None, split="all", start=False)
    r = client.post(f"/api/runs/{run.pk}/explode/")
    assert r.status_code == 404 and r.json() == {"code": "not_found", "detail": "unknown action 'explode'"}
    r = client.get(f"/api/runs/{run.pk}/results/")
    assert r.status_code == 409 and r.json()["code"] == "conflict" and "not scored yet" in r.json()["detail"]
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.COMPLETED)
    r = client.post(f"/api/runs/{run.pk}/resume/")
    assert r.status_code == 400 and r.json() == {"code": "invalid", "detail": f"run {run.pk} is already complete"}


def test_an_openai_compatible_server_answers_then_goes_down_and_the_run_resumes(eval_content, make_endpoint,
                                                                                 settings):
    from tests.workers.backends.openai_loopback import OpenAILoopback
    from workers.services.endpoints import endpoint_update
    from workers.tasks import eval_batch

    eval_content(1, kinds=["clean"])
    fast = {"model": "tiny-vlm", "max_retries": 1, "backoff_base_s": 0.01, "backoff_max_s": 0.02, "timeout_s": 2}
    with OpenAILoopback(default_answer="The answer is (B).") as server:
        endpoint = make_endpoint("api", "openai-compatible", parameters={"base_url": server.base_url, **fast})
        run = _run([endpoint], batch_size=100)
        _execute_all(run)
        assert server.requests and server.requests[0]["body"]["messages"][-1]["content"][1]["type"] == "image_url"
    answered = Prediction.objects.filter(run=run)
    assert answered.count() == run.total
    assert not answered.filter(outcome="error").exists()
    assert answered.filter(parsed="B").exists()

    # the server is gone (and with it the kept-alive connections): the batch task gives up after its
    # retries, the run ends `failed`
    from workers.backends import clear_backend_cache

    clear_backend_cache()
    settings.MEDR2_EVAL_MAX_RETRIES = 0
    run = _run([endpoint], batch_size=100)
    batch = run.batches.get()
    assert eval_batch.apply(args=[batch.pk]).get()["status"] == "failed"
    run_finalize(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.FAILED and "unavailable" in run.batches.get().error
    assert not Prediction.objects.filter(run=run).exists()
    # it comes back (at a new address); resuming finishes the run
    with OpenAILoopback(default_answer="A") as server:
        endpoint_update(endpoint=endpoint, actor=None, parameters={"base_url": server.base_url, **fast})
        run_resume(run=run, actor=None)
        _execute_all(run)
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.COMPLETED and Prediction.objects.filter(run=run).count() == run.total


def test_admin_shows_evaluation_rows_read_only(eval_content, make_endpoint, users):
    from django.test import Client

    from accounts.roles import Role

    eval_content(1, kinds=["clean"])
    run = _run([make_endpoint("nul", "null")])
    _execute_all(run)
    client = Client()
    client.force_login(users[Role.ADMIN])
    for model in ("modelendpoint", "evaluationrun", "runbatch", "prediction"):
        assert client.get(f"/admin/workers/{model}/").status_code == 200, model
    assert client.get("/admin/workers/prediction/add/").status_code == 403
    pred = Prediction.objects.filter(run=run).first()
    assert client.get(f"/admin/workers/prediction/{pred.pk}/change/").status_code == 200  # view only
    assert client.post(f"/admin/workers/prediction/{pred.pk}/delete/", {"post": "yes"}).status_code == 403


def test_re_registering_an_unchanged_model_writes_no_audit_event(make_endpoint):
    from workers.services.endpoints import endpoint_update

    endpoint = make_endpoint("rand", "random", parameters={"seed": 1})
    n = AuditEvent.objects.count()
    endpoint_update(endpoint=endpoint, actor=None, parameters={"seed": 1}, prompt_template="{prompt}")
    assert AuditEvent.objects.count() == n
    endpoint_update(endpoint=endpoint, actor=None, parameters={"seed": 2})
    assert AuditEvent.objects.count() == n + 1
    assert AuditEvent.objects.order_by("-seq").first().before["parameters"] == {"seed": 1}


def test_run_list_page_and_api_cost_the_same_queries_for_one_run_or_many(eval_content, make_endpoint, users):
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from accounts.roles import Role

    eval_content(1, kinds=["clean"])
    endpoint = make_endpoint("nul", "null")
    client = Client()
    client.force_login(users[Role.CURATOR])

    def queries(url: str) -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url).status_code == 200
        return len(ctx.captured_queries)

    _run([endpoint])
    one = {url: queries(url) for url in ("/runs/", "/api/runs/")}
    for _ in range(4):
        _run([endpoint])
    assert {url: queries(url) for url in ("/runs/", "/api/runs/")} == one
