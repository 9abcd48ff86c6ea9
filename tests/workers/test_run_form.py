"""The run form: filters are chosen from the real values (no free-text modality), and the page's live
count comes from GET /api/runs/preview/, which counts exactly what `run_create` then takes; bad values
answer 400 in the one error shape, never 500."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from annotation.models import Image, QAItem
from common.formatting import plural
from workers.models import EvaluationRun

pytestmark = pytest.mark.django_db

PREVIEW = "workers:api-run-preview"


@pytest.fixture
def content(eval_content, make_endpoint):
    made = eval_content(3, kinds=["clean", "misleading_hint", "image_ablation"])
    Image.objects.filter(pk=made["images"][0].pk).update(modality="MR")   # two modalities to choose from
    QAItem.objects.filter(pk=QAItem.objects.order_by("pk").first().pk).update(status=QAItem.Status.DRAFT)
    return {"a": make_endpoint("null-a", "null"), "b": make_endpoint("null-b", "null"), **made}


@pytest.fixture
def curator_client(users):
    client = Client()
    client.force_login(users[Role.CURATOR])
    return client


def _preview(client, **params):
    return client.get(reverse(PREVIEW), params)


def test_the_form_offers_choices_not_free_text(content, curator_client):
    html = curator_client.get(reverse("workers:run-create")).content.decode()
    modalities = re.findall(r'<input type="checkbox" name="modality" value="([^"]+)"', html)
    assert modalities == sorted(set(Image.objects.values_list("modality", flat=True))) and "MR" in modalities
    assert not re.search(r'<input type="text" name="modality"', html)
    assert re.search(r'<input type="checkbox" name="status" value="approved"[^>]* checked', html)
    assert len(re.findall(r'<input type="checkbox" name="category"', html)) >= 20
    assert re.findall(r'<input type="checkbox" name="stage" value="(S\d)"', html) == ["S1", "S2", "S3", "S4"]
    assert re.search(r'<select name="split"', html)
    assert f'data-url="{reverse(PREVIEW)}"' in html and "js/run_form.js" in html


def test_the_preview_counts_what_the_run_then_takes(content, curator_client):
    choices = {"modality": ["MR"], "variant_kinds": ["misleading_hint"], "split": "all",
               "endpoints": [content["a"].pk, content["b"].pk]}
    preview = _preview(curator_client, **choices)
    assert preview.status_code == 200
    body = preview.json()
    response = curator_client.post(reverse("workers:run-create"), {"name": "counted", "batch_size": 64, **choices})
    assert response.status_code == 302
    run = EvaluationRun.objects.get(name="counted")
    assert run.item_filters == {"modality": ["MR"]}
    assert (body["variants"], body["models"], body["predictions"]) == (run.n_variants, 2, run.total)
    assert body["items"] == QAItem.objects.filter(is_current=True, status="approved", chain__image__modality="MR") \
        .count()
    assert body["summary"] == (f"{plural(body['items'], 'item')} · {plural(run.n_variants, 'variant')} · 2 models → "
                               f"{plural(run.total, 'prediction')}")
    assert body["problems"] == []


def test_the_preview_follows_each_filter(content, curator_client):
    every = _preview(curator_client, split="all").json()
    drafts = _preview(curator_client, split="all", status=["draft"]).json()
    both = _preview(curator_client, split="all", status=["draft", "approved"]).json()
    assert drafts["items"] == 1 and both["items"] == every["items"] + 1
    s1 = _preview(curator_client, split="all", stage=["S1"]).json()
    assert 0 < s1["items"] < every["items"]
    clean_only = _preview(curator_client, split="all", variant_kinds=["clean"]).json()
    assert clean_only["variants"] == clean_only["items"] < every["variants"]
    assert _preview(curator_client, split="all").json()["problems"] == ["choose at least one model"]


@pytest.mark.parametrize("params,field", [
    ({"split": "holdout"}, "split"),
    ({"stage": "S9"}, "stage"),
    ({"category": "no-such-category"}, "category"),
    ({"modality": "PET"}, "modality"),
    ({"status": "published"}, "status"),
    ({"variant_kinds": "bogus"}, "variant_kinds"),
    ({"endpoints": "abc"}, "endpoints"),
    ({"endpoints": "99999"}, "endpoints"),
    ({"models": "no-such-model"}, "models"),
    ({"allow_train_overlap": "perhaps"}, "allow_train_overlap"),
])
def test_bad_values_answer_400_in_the_one_error_shape(content, curator_client, params, field):
    response = _preview(curator_client, **params)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and body["detail"] and field in body["fields"]


def test_a_prior_on_its_training_split_is_named_as_a_problem(content, curator_client, make_endpoint):
    from workers.models import ModelEndpoint

    prior = make_endpoint("prior-x", "prior")
    ModelEndpoint.objects.filter(pk=prior.pk).update(parameters={"table": {"x": 1}, "fitted_split": "train"})
    body = _preview(curator_client, split="train", endpoints=[prior.pk]).json()
    assert any("would be scored on the items it was fitted on" in p for p in body["problems"])
    allowed = _preview(curator_client, split="train", endpoints=[prior.pk], allow_train_overlap="true").json()
    assert not any("fitted on" in p for p in allowed["problems"])


def test_only_those_who_may_start_runs_may_ask(content, users):
    for role, expected in ((Role.ANNOTATOR, 403), (Role.AUDITOR, 403), (Role.ADJUDICATOR, 403),
                           (Role.CURATOR, 200), (Role.ADMIN, 200)):
        client = Client()
        client.force_login(users[role])
        assert client.get(reverse(PREVIEW)).status_code == expected, role
    assert Client().get(reverse(PREVIEW)).status_code in (401, 403)


def test_an_unknown_modality_posted_to_the_form_is_a_form_error(content, curator_client):
    response = curator_client.post(reverse("workers:run-create"), {
        "name": "bad", "batch_size": 64, "split": "all", "endpoints": [content["a"].pk], "modality": ["PET"]})
    assert response.status_code == 400 and "PET is not one of the available choices" in response.content.decode()
    assert not EvaluationRun.objects.filter(name="bad").exists()
