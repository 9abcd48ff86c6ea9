"""The model comparison is cached (finetune/comparison.py, "Cached"): a repeated comparison, on the page or
in the API, is read from the cache and never from the predictions, and anything that changes the run's
predictions or scores (a new scoring, a rescore after a gold correction, a batch that finished) gives a new
key, so a cached comparison is never stale. The page costs the same queries for two models or four."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.roles import Role
from finetune import comparison
from finetune.comparison import model_comparison

from .test_comparison import paired_run  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def computed(monkeypatch):
    """The runs whose predictions a comparison was computed from, one entry per computation."""
    calls = []
    real = comparison.prediction_table

    def counting(*, run, **kwargs):
        calls.append(run.pk)
        return real(run=run, **kwargs)

    monkeypatch.setattr(comparison, "prediction_table", counting)
    return calls


def _fresh(run):
    from workers.models import EvaluationRun

    return EvaluationRun.objects.get(pk=run.pk)


def _step(c: dict, name: str) -> dict:
    return next(m for m in c["models"] if m["name"] == name)["values"]["step_accuracy"]


def _shown(page) -> str:
    """The page without what differs on every response (the CSRF token, the script nonce)."""
    return re.sub(r'(csrfmiddlewaretoken" value|nonce)="[^"]*"', "", page.content.decode())


def test_a_repeated_comparison_is_read_from_the_cache(paired_run, computed):  # noqa: F811
    run = paired_run(models=("tiny-base", "tiny-ft-step-s0", "tiny-ft-answer-s0"))
    first = model_comparison(run=run)
    again = model_comparison(run=_fresh(run))
    assert again == first and computed == [run.pk]
    again["models"].clear()                                          # a caller's copy: the cache is untouched
    assert model_comparison(run=run) == first and computed == [run.pk]
    two = model_comparison(run=run, endpoints=["tiny-base", "tiny-ft-step-s0"])   # other models: another key
    assert [m["name"] for m in two["models"]] == ["tiny-base", "tiny-ft-step-s0"] and len(computed) == 2


def test_a_new_scoring_a_rescore_or_a_finished_batch_gives_a_new_comparison(paired_run, computed):  # noqa: F811
    from adjudication.services.rescoring import predictions_rescore
    from annotation.services.qa import qa_item_revise
    from workers.models import Prediction, RunBatch
    from workers.services.scoring import run_score

    run = paired_run(models=("tiny-base", "tiny-ft-step-s0"))
    first = model_comparison(run=run)
    run_score(run=_fresh(run), actor=None)                          # a new scoring: a new scored_at
    again = model_comparison(run=_fresh(run))
    assert len(computed) == 2 and again["run"]["scored_at"] > first["run"]["scored_at"]
    assert again["models"] == first["models"] and again["pairwise"] == first["pairwise"]   # same predictions

    # a gold correction rescored the predictions; the run is not scored again yet (rescore_runs=False)
    right = (Prediction.objects.filter(run=run, endpoint__name="tiny-base", variant__kind="clean", correct=True,
                                       item__category__answer_type="single_choice").select_related("item").first())
    item = right.item
    wrong = next(o for o in item.options if o != item.gold_answer)
    qa_item_revise(item=item, actor=None, reason="adjudicated", gold_answer=wrong)
    scored_at = _fresh(run).scored_at
    assert predictions_rescore(item_key=item.item_key, actor=None, reason="gold corrected",
                               rescore_runs=False).changed > 0
    assert _fresh(run).scored_at == scored_at
    rescored = model_comparison(run=_fresh(run))
    assert len(computed) == 3
    assert _step(rescored, "tiny-base")["k"] < _step(first, "tiny-base")["k"]   # the new scores, not the cached

    # a running run: each batch that finishes (or writes predictions) changes the key
    RunBatch.objects.filter(pk=RunBatch.objects.filter(run=run).order_by("pk").first().pk).update(
        status=RunBatch.Status.DONE, n_done=1)
    model_comparison(run=_fresh(run))
    assert len(computed) == 4
    model_comparison(run=_fresh(run))
    assert len(computed) == 4


def test_the_page_and_the_api_share_the_cached_comparison_at_a_constant_cost(paired_run, users,  # noqa: F811
                                                                              computed):
    run = paired_run()
    client = Client()
    client.force_login(users[Role.CURATOR])
    page, api = reverse("finetune:compare"), reverse("finetune:api-compare")

    def get(url: str, **params):
        with CaptureQueriesContext(connection) as ctx:
            answer = client.get(url, params)
        assert answer.status_code == 200
        return answer, ctx.captured_queries

    first, _ = get(page, run=run.pk)
    assert computed == [run.pk]
    again, queries = get(page, run=run.pk)
    assert _shown(again) == _shown(first) and computed == [run.pk]      # tables and figures cached with it
    assert not any('"workers_evaluationrun"."metrics"' in q["sql"] for q in queries), "no metrics read"
    answer, _ = get(api, run=run.pk)
    assert computed == [run.pk] and [m["name"] for m in answer.json()["models"]][0] == "tiny-base"

    get(page, run=run.pk, models="tiny-base,tiny-ft-step-s0")
    _, two = get(page, run=run.pk, models="tiny-base,tiny-ft-step-s0")
    assert len(computed) == 2 and len(two) == len(queries)                  # two models or four: same queries
