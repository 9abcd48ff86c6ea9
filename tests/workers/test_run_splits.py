"""Runs evaluate one patient-level split (test by default); the prior baseline is never scored on
the split it was fitted on unless someone asks; results name the split and, for runs over every
split, are broken down per split."""
from __future__ import annotations

import csv
import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.roles import Role
from annotation.models import Image, QAItem, Variant
from annotation.splits import split_for_group
from audit.models import AuditEvent
from workers.models import EvaluationRun, Prediction
from workers.services.execution import batch_execute
from workers.services.runs import run_create, run_finalize, run_variant_ids, split_group_filter

pytestmark = pytest.mark.django_db


def _group_in(split: str, start: int = 0) -> str:
    """The first hand-picked split group ("patient-<i>") that split_for_group puts in `split`."""
    i = start
    while split_for_group(f"patient-{i}") != split:
        i += 1
    return f"patient-{i}"


@pytest.fixture
def split_content(eval_content):
    """Three phantom images: two patients in train, one in test, none in val."""
    content = eval_content(3, kinds=["clean", "misleading_hint"])
    train_a = _group_in("train")
    train_b = _group_in("train", int(train_a.split("-")[1]) + 1)
    test = _group_in("test")
    groups = [train_a, train_b, test]
    for image, group in zip(content["images"], groups):
        Image.objects.filter(pk=image.pk).update(split_group=group)
    return {"groups": dict(zip(("train_a", "train_b", "test"), groups)), **content}


def _expected(split: str) -> list[int]:
    """By hand: every variant of an approved current item whose image's group is in `split`."""
    rows = Variant.objects.filter(item__is_current=True, item__status=QAItem.Status.APPROVED).order_by("pk")
    return [v.pk for v in rows.select_related("item__chain__image")
            if split == "all" or split_for_group(v.item.chain.image.split_group) == split]


def _execute(run):
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
    for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    run_finalize(run_id=run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture
def prior(make_endpoint):
    from workers.services.endpoints import prior_fit

    return prior_fit(endpoint=make_endpoint("prior", "prior"), actor=None)


def test_the_split_filter_selects_exactly_the_variants_of_that_split(split_content):
    for split in ("train", "test", "all"):
        got = run_variant_ids(item_filters={}, variant_kinds=[], split=split)
        assert got == _expected(split) and got, split
    assert run_variant_ids(item_filters={}, variant_kinds=[], split="val") == _expected("val") == []
    train, test = (set(run_variant_ids(item_filters={}, variant_kinds=[], split=s)) for s in ("train", "test"))
    assert not train & test and train | test == set(_expected("all"))
    # the shorter list of patients goes into the query: train (2 of 3 groups) is "not in" the test group
    g = split_content["groups"]
    assert split_group_filter("train") == ("not_in", [g["test"]])
    assert split_group_filter("test") == ("in", [g["test"]])
    assert split_group_filter("all") is None


def test_selection_costs_two_queries_however_many_variants(split_content):
    with CaptureQueriesContext(connection) as ctx:
        ids = run_variant_ids(item_filters={}, variant_kinds=[], split="test")
    assert len(ids) > 1 and len(ctx.captured_queries) == 2   # distinct split groups, then the variants


def test_runs_default_to_the_test_split(split_content, make_endpoint):
    assert EvaluationRun().split == "test"
    run = run_create(name="default", endpoints=[make_endpoint("nul", "null")], actor=None, start=False)
    assert run.split == "test" and run.n_variants == len(_expected("test"))
    assert sorted(v for b in run.batches.all() for v in b.variant_ids) == _expected("test")
    assert run.provenance["split"]["name"] == "test" and run.provenance["allow_train_overlap"] is False
    event = AuditEvent.objects.get(action="workers.run.create")
    assert event.after["split"] == "test"


def test_an_unknown_split_is_refused_and_nothing_is_created(split_content, make_endpoint):
    endpoint = make_endpoint("nul", "null")
    with pytest.raises(ValidationError, match="unknown split 'holdout'"):
        run_create(name="x", endpoints=[endpoint], actor=None, split="holdout", start=False)
    with pytest.raises(ValidationError, match="no variants match these filters in the 'val' split"):
        run_create(name="x", endpoints=[endpoint], actor=None, split="val", start=False)
    assert not EvaluationRun.objects.exists() and not AuditEvent.objects.filter(action="workers.run.create").exists()


def test_the_prior_is_never_scored_on_its_training_items_unless_asked(split_content, prior, make_endpoint):
    assert prior.parameters["fitted_split"] == "train"
    for split in ("train", "all"):
        with pytest.raises(ValidationError, match=r"prior \(fitted on train\).*allow_train_overlap"):
            run_create(name="x", endpoints=[prior], actor=None, split=split, start=False)
    assert not EvaluationRun.objects.exists()
    # an unfitted prior learned nothing, so nothing overlaps
    run_create(name="bare", endpoints=[make_endpoint("bare-prior", "prior")], actor=None, split="all", start=False)

    test_run = run_create(name="held out", endpoints=[prior], actor=None, start=False)
    p = test_run.provenance
    assert p["split"]["name"] == "test" and p["endpoints"][str(prior.pk)]["fitted_split"] == "train"
    assert p["train_overlap"] == {} and p["allow_train_overlap"] is False

    asked = run_create(name="asked", endpoints=[prior], actor=None, split="all", allow_train_overlap=True, start=False)
    assert asked.split == "all" and asked.provenance["allow_train_overlap"] is True
    assert asked.provenance["train_overlap"] == {"prior": "train"}
    assert AuditEvent.objects.filter(action="workers.run.create").order_by("-seq").first().after["train_overlap"] == \
        {"prior": "train"}


def test_an_all_splits_run_is_broken_down_per_split(split_content, make_endpoint, users):
    null = make_endpoint("nul", "null")
    run = _execute(run_create(name="every split", endpoints=[null], actor=None, split="all", batch_size=50,
                              start=False))
    m = run.metrics
    assert m["split"] == "all" and set(m["models_by_split"]) == {"train", "test"}
    clean = Prediction.objects.filter(run=run, variant__kind="clean").select_related("item__chain__image", "variant")
    for split in ("train", "test"):
        mine = [p for p in clean if split_for_group(p.item.chain.image.split_group) == split]
        step = m["models_by_split"][split][str(null.pk)]["step_accuracy"]
        assert step["n"] == len(mine) and step["k"] == sum(p.correct for p in mine)
    assert {c["split"]: c["n"] for c in m["by_split"]} == {
        s: Prediction.objects.filter(run=run, variant_id__in=_expected(s)).count() for s in ("train", "test")}
    assert {c["split"] for c in m["cells"]} == {"train", "test"}

    client = Client()
    client.force_login(users[Role.CURATOR])
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "all split" in page and 'id="split-leaderboards"' in page and "test (held out)" in page
    assert 'id="by-split"' in page
    rows = list(csv.DictReader(io.StringIO(client.get(f"/runs/{run.pk}/results.csv").content.decode())))
    assert {r["run_split"] for r in rows} == {"all"} and {r["split"] for r in rows} == {"train", "test"}
    exported = client.get(f"/runs/{run.pk}/results.json")
    assert exported.json()["run"]["split"] == "all" and "-all-results.json" in exported["Content-Disposition"]
    api = client.get(f"/api/runs/{run.pk}/results/").json()
    assert api["split"] == "all" and api["run"]["split"] == "all" and api["metrics"]["models_by_split"]


def test_a_test_run_shows_its_split_and_has_no_per_split_tables(split_content, make_endpoint, users):
    run = _execute(run_create(name="held out", endpoints=[make_endpoint("nul", "null")], actor=None, batch_size=50,
                              start=False))
    assert run.metrics["split"] == "test" and run.metrics["models_by_split"] == {}
    assert {c["split"] for c in run.metrics["cells"]} == {"test"}
    client = Client()
    client.force_login(users[Role.CURATOR])
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Leaderboard · test split" in page and 'id="split-leaderboards"' not in page
    listing = client.get("/runs/").content.decode()
    assert "<th>Split</th>" in listing and 'split-test' in listing


def test_api_split_default_refusals_and_override(split_content, prior, make_endpoint, users):
    make_endpoint("nul", "null")
    client = Client()
    client.force_login(users[Role.CURATOR])
    r = client.post("/api/runs/", {"name": "x", "models": ["nul"], "split": "holdout"}, content_type="application/json")
    body = r.json()
    assert r.status_code == 400 and body["code"] == "invalid" and "holdout" in body["fields"]["split"][0]
    r = client.post("/api/runs/", {"name": "x", "models": ["prior"], "split": "all"}, content_type="application/json")
    assert r.status_code == 400 and r.json()["code"] == "invalid" and "fitted on train" in r.json()["detail"]
    assert not EvaluationRun.objects.exists()
    r = client.post("/api/runs/", {"name": "d", "models": ["nul"]}, content_type="application/json")
    assert r.status_code == 201 and r.json()["split"] == "test"
    r = client.post("/api/runs/", {"name": "o", "models": ["prior"], "split": "all", "allow_train_overlap": True},
                    content_type="application/json")
    assert r.status_code == 201 and r.json()["split"] == "all"
    assert EvaluationRun.objects.get(pk=r.json()["id"]).provenance["train_overlap"] == {"prior": "train"}


def test_form_split_select_refusals_and_override(split_content, prior, users):
    client = Client()
    client.force_login(users[Role.CURATOR])
    page = client.get("/runs/new/").content.decode()
    assert 'name="split"' in page and '<option value="test" selected>' in page
    assert "Benchmark runs use test" in page and 'name="allow_train_overlap"' in page
    base = {"name": "f", "endpoints": [prior.pk], "batch_size": 64}
    r = client.post("/runs/new/", {**base, "split": "holdout"})
    assert r.status_code == 400 and b"Select a valid choice" in r.content
    r = client.post("/runs/new/", {**base, "split": "train"})
    assert r.status_code == 400 and b"fitted on train" in r.content
    assert not EvaluationRun.objects.exists()
    r = client.post("/runs/new/", {**base, "split": "train", "allow_train_overlap": "on"})
    run = EvaluationRun.objects.get()
    assert r.status_code == 302 and run.split == "train" and run.provenance["allow_train_overlap"] is True
    r = client.post("/runs/new/", {**base, "name": "no split posted"})   # a script that names no split
    assert r.status_code == 302 and EvaluationRun.objects.get(name="no split posted").split == "test"


def test_command_split_default_refusals_and_override(split_content, prior, make_endpoint):
    make_endpoint("nul", "null")
    with pytest.raises(CommandError, match="unknown split 'holdout'"):
        call_command("run_evaluation", "--models", "nul", "--split", "holdout", "--no-wait", stdout=io.StringIO())
    with pytest.raises(CommandError, match="fitted on train"):
        call_command("run_evaluation", "--models", "prior", "--split", "all", "--no-wait", stdout=io.StringIO())
    assert not EvaluationRun.objects.exists()
    out = io.StringIO()
    call_command("run_evaluation", "--models", "nul", "--name", "cmd", "--no-wait", stdout=out)
    assert EvaluationRun.objects.get(name="cmd").split == "test" and "(test split)" in out.getvalue()
    call_command("run_evaluation", "--models", "prior", "--name", "overlap", "--split", "train",
                 "--allow-train-overlap", "--no-wait", stdout=io.StringIO())
    assert EvaluationRun.objects.get(name="overlap").provenance["train_overlap"] == {"prior": "train"}
