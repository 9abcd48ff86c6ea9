"""The queue fills itself: scoring a run opens cases; re-running never duplicates them."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from adjudication.models import AdjudicationCase
from annotation.models import QAItem, Variant

from .test_facts import _predict, scored  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def _consensus(scored):  # noqa: F811
    item = QAItem.objects.filter(category__answer_type="single_choice").order_by("pk").first()
    variant = Variant.objects.get(item=item, kind="clean")
    wrong = chr(65 + (variant.options.index(item.gold_answer) + 1) % len(variant.options))
    for endpoint in scored["endpoints"]:
        _predict(scored["run"], endpoint, variant, wrong, False)
    return item


def test_scoring_a_run_opens_cases_and_rerunning_duplicates_nothing(scored, django_capture_on_commit_callbacks):  # noqa: F811
    from adjudication.services import cases_sync
    from audit.models import AuditEvent
    from workers.services.scoring import run_score

    item = _consensus(scored)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run_score(run=scored["run"], actor=None)
    assert callbacks, "scoring queues the detection"
    summary = cases_sync(run_ids=[scored["run"].pk])        # what the queued task does
    assert summary.created >= 1
    case = AdjudicationCase.objects.get(key=f"item:{item.item_key}")
    assert case.rule_names == ["model_consensus"] and case.priority == 1.0
    assert case.stage_id == item.stage_id and case.category_id == item.category_id
    assert case.run_ids == [scored["run"].pk]

    again = cases_sync(run_ids=[scored["run"].pk])
    assert (again.created, again.updated) == (0, 0) and again.unchanged == summary.created
    assert AdjudicationCase.objects.filter(key=f"item:{item.item_key}").count() == 1
    assert AuditEvent.objects.filter(action="adjudication.cases.sync").count() == 2

    AdjudicationCase.objects.filter(pk=case.pk).update(status="resolved")
    assert cases_sync(run_ids=[scored["run"].pk]).resolved_kept == 1, "a decided case is not reopened"


def test_queue_page_filters_by_rule_and_stage(scored, users):  # noqa: F811
    from accounts.roles import Role
    from adjudication.services import cases_sync

    item = _consensus(scored)
    cases_sync(run_ids=[scored["run"].pk])
    client = Client()
    client.force_login(users[Role.ADJUDICATOR])
    page = client.get(reverse("adjudication:queue"), {"rule": "model_consensus"}).content.decode()
    run = scored["run"]
    assert item.question[:40] in page and "Model A, Model B, Model C" in page and "model-a" not in page, \
        "readers are blind"
    assert "Reference run 1" in page and run.name not in page, "run names often list the models: hidden from readers"
    curator = Client()
    curator.force_login(users[Role.CURATOR])
    curator_page = curator.get(reverse("adjudication:queue")).content.decode()
    assert "model-a, model-b, model-c" in curator_page and f"Run {run.pk}: {run.name}" in curator_page
    empty = client.get(reverse("adjudication:queue"), {"rule": "adversarial_flip"}).content.decode()
    assert item.question[:40] not in empty
    api = client.get(reverse("adjudication:api-case-list"), {"stage": item.stage.code}).json()
    assert any(c["item"] == item.pk and c["rules"] == ["model_consensus"] for c in api["results"])
    client.force_login(users[Role.ANNOTATOR])
    assert client.get(reverse("adjudication:queue")).status_code == 403
