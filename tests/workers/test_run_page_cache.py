"""The run page at scale (workers/results_page.py, common.pagination's capped lists): the results are built
once per scoring and then read from the cache without loading the run's metrics (nor summing a finished
run's batches again); the page and the
predictions list cost the same queries for one model or three; the predictions list counts a long filtered
list only up to the cap ("N+ matching"), shows a completed run's exact total without counting, and pages
(next, previous, deep, past the end) work as before, on the page and in the API."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished_run(eval_content, make_endpoint):
    """Runs of baselines over the same clean and misleading-hint variants of 4 phantoms, run and scored."""
    from django.utils import timezone

    from workers.models import EvaluationRun
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create, run_finalize

    eval_content(images=4, kinds=["clean", "misleading_hint"])
    made = []

    def _make(*backends: str):
        endpoints = [make_endpoint(f"{b}-{len(made)}-{i}", b) for i, b in enumerate(backends)]
        run = run_create(name="scale", endpoints=endpoints, actor=None, split="all", batch_size=1000, start=False)
        EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
        for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
            batch_execute(batch_id=batch_id)
        run_finalize(run_id=run.pk)
        made.append(run.pk)
        return EvaluationRun.objects.get(pk=run.pk)

    return _make


@pytest.fixture
def client(users):
    c = Client()
    c.force_login(users[Role.CURATOR])
    return c


def _get(client, url: str, **params):
    with CaptureQueriesContext(connection) as ctx:
        answer = client.get(url, params)
    assert answer.status_code == 200, url
    return answer, ctx.captured_queries


def _shown(answer) -> str:
    return re.sub(r'(csrfmiddlewaretoken" value|nonce)="[^"]*"', "", answer.content.decode())


def test_the_results_are_built_once_per_scoring_and_never_load_the_metrics(finished_run, client, monkeypatch):
    from workers import results_page
    from workers.services.scoring import run_score

    built = []
    real = results_page.results_page
    monkeypatch.setattr(results_page, "results_page", lambda metrics: built.append(1) or real(metrics))
    run = finished_run("oracle", "cue_follower")
    first, _ = _get(client, f"/runs/{run.pk}/")
    again, queries = _get(client, f"/runs/{run.pk}/")
    assert len(built) == 1 and _shown(again) == _shown(first) and 'id="robustness-harmful"' in _shown(again)
    assert not any('"workers_evaluationrun"."metrics"' in q["sql"] for q in queries), "the metrics stay in the database"
    assert not any("SUM(" in q["sql"] for q in queries), "a finished run's progress is not summed again"
    run_score(run=run, actor=None)                                   # a new scoring: the page is built again
    _get(client, f"/runs/{run.pk}/")
    assert len(built) == 2


def test_the_run_page_and_its_predictions_cost_the_same_queries_for_one_model_or_three(finished_run, client):
    one, three = finished_run("oracle"), finished_run("oracle", "null", "cue_follower")
    for url in ("/runs/{}/", "/runs/{}/predictions/", "/runs/{}/predictions/?correct=true&page=2",
                "/api/runs/{}/predictions/?kind=clean"):
        counts = []
        for run in (one, three):
            _get(client, url.format(run.pk))                         # the first view builds the cached results
            counts.append(len(_get(client, url.format(run.pk))[1]))
        assert counts[0] == counts[1], (url, counts)


def test_a_long_list_is_counted_up_to_the_cap_and_pages_at_any_depth(finished_run, client, monkeypatch):
    from workers.models import EvaluationRun, Prediction

    monkeypatch.setattr("common.pagination.COUNT_CAP", 3)
    run = finished_run("oracle", "null", "cue_follower")
    every = list(Prediction.objects.filter(run=run).order_by("pk").values_list("pk", flat=True))
    wrong = list(Prediction.objects.filter(run=run, correct=False).order_by("pk").values_list("pk", flat=True))
    assert len(every) > 50 and len(wrong) > 6, "more than a page of predictions, three API pages of wrong ones"
    url, api = f"/runs/{run.pk}/predictions/", f"/api/runs/{run.pk}/predictions/"

    whole, queries = _get(client, url)                               # a completed, scored run: its own total
    assert f"{len(every):,} matching" in whole.content.decode()
    assert not any("COUNT(" in q["sql"] and "workers_prediction" in q["sql"] for q in queries), "not counted"
    body = _get(client, api, page_size=2)[0].json()
    assert (body["count"], body["count_exact"]) == (len(every), True)

    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.FAILED)   # no known total now
    first = _get(client, url)[0].content.decode()
    assert "50+ matching" in first and "page 1 of 2+" in first and "?page=2" in first
    last = -(-len(every) // 50)
    deep = _get(client, url, page=last)[0].content.decode()
    assert f"{len(every):,} matching" in deep and f"page {last} of {last}<" in deep and "next →" not in deep
    assert "previous" in deep and deep.count('href="/runs/') == first.count('href="/runs/')
    assert _shown(_get(client, url, page=999999)[0]) == _shown(_get(client, url, page=last)[0])  # past the end

    body = _get(client, api, correct="false", page_size=2)[0].json()
    assert (body["count"], body["count_exact"]) == (3, False) and body["next"] and body["previous"] is None
    assert [r["id"] for r in body["results"]] == wrong[:2]
    body = _get(client, api, correct="false", page_size=2, page=3)[0].json()
    assert body["count_exact"] is False and [r["id"] for r in body["results"]] == wrong[4:6]
    body = _get(client, api, correct="false", page_size=2, page="last")[0].json()
    assert (body["count"], body["count_exact"]) == (len(wrong), True) and body["next"] is None
    assert [r["id"] for r in body["results"]] == wrong[(len(wrong) - 1) // 2 * 2:]
    assert client.get(api, {"correct": "false", "page": 999999}).status_code == 404


def test_the_api_schema_documents_the_capped_count(client):
    schema = client.get("/api/schema/", {"format": "json"}).json()
    envelope = schema["components"]["schemas"]["PaginatedPredictionOutputList"]
    assert envelope["properties"]["count_exact"]["type"] == "boolean"
    assert "lower bound" in envelope["properties"]["count"]["description"]


@pytest.mark.parametrize("n, complete, known", [
    ("9036", "true", 9036),       # PostgreSQL: ->> gives text
    (9036, "true", 9036),         # SQLite (the demo): a JSON number comes back as a number
    (9036, 1, 9036),
    ("9036", "false", -1), (None, "true", -1), ("12.5", "true", -1), (9036, None, -1),
])
def test_the_stored_total_is_read_whatever_type_the_database_returns(n, complete, known):
    from workers.selectors import _stored_total

    assert _stored_total(n, complete) == known
