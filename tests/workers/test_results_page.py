"""The results of a scored run as a user reads them: the run page, the results API and the exports show
how each model's answers were read (parse-method families), stage degradation on the same chains with
chance, robustness kind by kind (harmful and helpful apart, no mixed mean), chance-corrected cue adoption,
the box dose-response and CircularEval — every interval a cluster-bootstrap one."""
from __future__ import annotations

import csv
import io

import pytest


@pytest.fixture
def scored(eval_content, make_endpoint):
    from django.utils import timezone

    from workers.models import EvaluationRun
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create, run_finalize

    eval_content(images=4, seed=1)
    a = make_endpoint("oracle", "oracle")
    b = make_endpoint("follower", "cue_follower", parameters={"p": 0.5, "accuracy": 0.7, "seed": 1})
    run = run_create(name="page", endpoints=[a, b], actor=None, split="all", batch_size=1000, start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
    for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    run_finalize(run_id=run.pk)
    return EvaluationRun.objects.get(pk=run.pk)


@pytest.mark.django_db
def test_the_run_page_reports_every_validity_analysis_and_no_mixed_mean(scored, users):
    from django.test import Client

    from accounts.roles import Role

    client = Client()
    client.force_login(users[Role.CURATOR])
    page = client.get(f"/runs/{scored.pk}/").content.decode()
    for section in ('id="parse-methods"', 'id="stage-chart"', 'id="stage-clean"', 'id="stage-drop"',
                    'id="robustness-harmful"', 'id="robustness-helpful"', 'id="cue-adoption"', 'id="dose-response"',
                    "CircularEval", "Accuracy over answered", "cluster-bootstrap", "the same chains only",
                    f"/runs/{scored.pk}/results.models.csv"):
        assert section in page, section
    assert "Mean robustness drop" not in page and "Wilson" not in page
    assert '<svg role="img" aria-label="Stage degradation' in page     # matplotlib, inline


@pytest.mark.django_db
def test_the_api_and_the_exports_carry_the_parse_families_and_the_intervals(scored, users):
    from django.test import Client

    from accounts.roles import Role
    from workers.parsing import FAMILIES

    client = Client()
    client.force_login(users[Role.CURATOR])
    metrics = client.get(f"/api/runs/{scored.pk}/results/").json()["metrics"]
    model = next(iter(metrics["models"].values()))
    assert set(model["parse_families"]) <= set(FAMILIES)
    assert "mean_drop" not in str(metrics)
    assert {"value", "lo", "hi", "n"} <= set(model["robustness"]["misleading_hint"]["drop"])
    rows = list(csv.DictReader(io.StringIO(client.get(f"/runs/{scored.pk}/results.models.csv").content.decode())))
    names = {r["metric"] for r in rows}
    assert {"step_accuracy", "answered_accuracy", "circular_eval", "parse_family.letter",
            "robustness.misleading_hint.cue_adoption_corrected"} <= names
    assert all(r["lo"] != "" for r in rows if r["metric"] == "step_accuracy")
    cells = client.get(f"/runs/{scored.pk}/results.csv").content.decode().splitlines()[0].split(",")
    assert {"answered", "answered_accuracy", "chance", "acc_lo"} <= set(cells)
    assert client.get(f"/runs/{scored.pk}/results.xml").status_code == 404


@pytest.mark.parametrize("labels, keys", [
    (['"B"', "B", "b"], ["B", "B", "B"]),                                  # PostgreSQL JSON text, SQLite text
    (['["A", "C"]', '["C","A"]', '["a", "c"]'], ["A,C", "A,C", "A,C"]),     # lists: sorted, whatever spacing
    (["", "[]"], ["", "[]"]),                                              # no answer vs. "none of the options"
])
def test_answer_and_cue_keys_mean_the_same_answer_on_every_database(labels, keys):
    import numpy as np

    from workers.services.scoring import _answer_keys

    assert _answer_keys(np.array(labels)).tolist() == keys
