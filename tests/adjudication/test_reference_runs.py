"""A protected adjudication queue: only reference runs open or re-prioritise cases, baselines never count
as models, unmarking a run re-scores its cases without it (withdrawn when no reference run raises them),
and every case says which runs and models raised it (blinded for readers)."""
from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.roles import Role
from adjudication.models import AdjudicationCase, CaseReading
from annotation.models import QAItem, Variant

from .test_facts import _predict, scored  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def eager_tasks():
    """Tasks sent after commit run in-process (the receiver -> task -> service path, without a worker)."""
    from medr2.celery import app as celery_app

    eager, propagates = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager = celery_app.conf.task_eager_propagates = True
    yield
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = eager, propagates


def _choice_items(n: int) -> list[QAItem]:
    items = list(QAItem.objects.filter(category__answer_type="single_choice").order_by("pk")[:n])
    assert len(items) == n, "the fixture chain has enough single-choice items"
    return items


def _wrong(item) -> tuple[Variant, str]:
    variant = Variant.objects.get(item=item, kind="clean")
    return variant, chr(65 + (variant.options.index(item.gold_answer) + 1) % len(variant.options))


def _agree_wrong(run, endpoints, item) -> None:
    variant, wrong = _wrong(item)
    for endpoint in endpoints:
        _predict(run, endpoint, variant, wrong, False)


def _answer_right(run, endpoints, item) -> None:
    variant = Variant.objects.get(item=item, kind="clean")
    for endpoint in endpoints:
        _predict(run, endpoint, variant, chr(65 + variant.options.index(item.gold_answer)), True)


def _run(name, endpoints, *, reference=False, scored_now=True):
    from workers.models import EvaluationRun
    from workers.services.runs import run_create

    run = run_create(name=name, endpoints=endpoints, actor=None, split="all", start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.COMPLETED, is_reference=reference,
                                                   scored_at=timezone.now() if scored_now else None)
    run.refresh_from_db()
    return run


def _endpoint(name, backend="oracle"):
    from workers.services.endpoints import endpoint_create

    return endpoint_create(name=name, backend=backend, actor=None)


def _queue():
    return {c.key: (c.priority, c.hits, c.run_ids, c.status) for c in AdjudicationCase.objects.all()}


def test_a_random_baseline_run_never_reorders_the_queue(scored, users, eager_tasks,  # noqa: F811
                                                        django_capture_on_commit_callbacks):
    """The issue's scenario: cases opened by a reference run keep their priorities and their "Why this
    case" when a run of the random baseline alone is scored, forced through detection, or marked."""
    from adjudication.services import cases_sync
    from common.errors import Conflict
    from workers.models import EvaluationRun
    from workers.services.reference import run_set_reference
    from workers.services.scoring import run_score

    first, second = _choice_items(2)
    a, b, c = scored["endpoints"]
    _agree_wrong(scored["run"], [a, b], first)          # 2 of 3 agree: priority 0.8333
    _answer_right(scored["run"], [c], first)
    _agree_wrong(scored["run"], [a, b, c], second)      # 3 of 3 agree: priority 1.0
    cases_sync(run_ids=[scored["run"].pk])
    before = _queue()
    assert before[f"item:{first.item_key}"][0] == 0.8333 and before[f"item:{second.item_key}"][0] == 1.0

    baseline = _endpoint("random-baseline", "random")
    throwaway = _run("random alone", [baseline], scored_now=False)
    _agree_wrong(throwaway, [baseline], first)           # it would make the first case look like 3 of 4 ...
    _agree_wrong(throwaway, [baseline], second)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        run_score(run=throwaway, actor=None)
    assert callbacks == [], "scoring a run that is not a reference run queues no detection"
    assert _queue() == before

    summary = cases_sync(run_ids=[throwaway.pk])         # forced: still nothing
    assert summary.ignored_runs == [throwaway.pk] and summary.created == summary.updated == 0
    assert _queue() == before

    with pytest.raises(Conflict, match="only baselines"):
        run_set_reference(run=throwaway, reference=True, actor=users[Role.CURATOR])
    # even if it were a reference run, the baseline never counts as a model
    EvaluationRun.objects.filter(pk=throwaway.pk).update(is_reference=True)
    cases_sync(run_ids=[throwaway.pk])
    after = _queue()
    assert after == before, "same priorities, same hits (no random-baseline), same runs"
    assert all("random-baseline" not in h["models"] for _, hits, _, _ in after.values() for h in hits)

    page = Client()
    page.force_login(users[Role.CURATOR])
    case = AdjudicationCase.objects.get(key=f"item:{first.item_key}")
    html = page.get(reverse("adjudication:case-detail", args=[case.pk])).content.decode()
    assert "Random baseline" not in html and "random-baseline" not in html, "Why this case cites no baseline"


def test_marking_a_run_opens_its_cases_after_commit_and_scoring_it_again_reprioritises(
        scored, users, eager_tasks, django_capture_on_commit_callbacks):  # noqa: F811
    from workers.models import EvaluationRun
    from workers.services.reference import run_set_reference
    from workers.services.scoring import run_score

    item, other = _choice_items(2)
    a, b, c = scored["endpoints"]
    EvaluationRun.objects.filter(pk=scored["run"].pk).update(is_reference=False)
    _agree_wrong(scored["run"], [a, b, c], item)
    run_score(run=scored["run"], actor=None)
    assert not AdjudicationCase.objects.exists(), "not a reference run: no case"

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        run_set_reference(run=scored["run"], reference=True, actor=users[Role.CURATOR], reason="the benchmark run")
    assert callbacks, "the detection is sent after commit"
    case = AdjudicationCase.objects.get(key=f"item:{item.item_key}")
    assert case.status == "open" and case.priority == 1.0 and case.run_ids == [scored["run"].pk]

    _agree_wrong(scored["run"], [a, b], other)           # more predictions, then the reference run is rescored
    _answer_right(scored["run"], [c], other)
    with django_capture_on_commit_callbacks(execute=True):
        run_score(run=scored["run"], actor=None)
    assert AdjudicationCase.objects.get(key=f"item:{other.item_key}").priority == 0.8333


def test_unmarking_rescores_without_the_run_withdraws_what_nothing_raises_and_keeps_started_readings(
        scored, users, make_user):  # noqa: F811
    from adjudication.services import case_assign, case_verdict_submit, cases_sync
    from audit.models import AuditEvent
    from workers.models import EvaluationRun

    only_first, both, started = _choice_items(3)
    a, b, c = scored["endpoints"]
    first = scored["run"]
    d, e, f = _endpoint("model-d"), _endpoint("model-e"), _endpoint("model-f")
    second = _run("second reference", [d, e, f], reference=True)
    for item in (only_first, both, started):
        _agree_wrong(first, [a, b, c], item)
    _agree_wrong(second, [d, e, f], both)
    _answer_right(second, [d, e, f], only_first)
    cases_sync(run_ids=[first.pk, second.pk])
    case = {k: AdjudicationCase.objects.get(key=f"item:{i.item_key}")
            for k, i in (("only_first", only_first), ("both", both), ("started", started))}
    assert case["both"].run_ids == [first.pk, second.pk] and case["only_first"].run_ids == [first.pk]
    assert case["only_first"].priority == 0.75, "3 of 6 models (both runs) agree against the gold"
    reader, other = users[Role.ADJUDICATOR], make_user(Role.ADJUDICATOR, "dr-other")
    case_assign(case=case["only_first"], readers=[reader], actor=users[Role.CURATOR])
    case_assign(case=case["started"], readers=[reader, other], actor=users[Role.CURATOR], double_read=True)
    case["started"].refresh_from_db()
    case_verdict_submit(case_id=case["started"].pk, reader=reader, verdict="confirmed",
                        expected_version=case["started"].version)
    version = AdjudicationCase.objects.get(pk=case["only_first"].pk).version

    EvaluationRun.objects.filter(pk=first.pk).update(is_reference=False)   # what run_set_reference does
    summary = cases_sync(run_ids=[first.pk])
    assert (summary.withdrawn, summary.kept_in_reading) == (1, 1)
    withdrawn = AdjudicationCase.objects.get(pk=case["only_first"].pk)
    assert withdrawn.status == "withdrawn" and withdrawn.version == version + 1
    assert not CaseReading.objects.filter(case=withdrawn, status="assigned").exists(), "its reading is withdrawn"
    rescored = AdjudicationCase.objects.get(pk=case["both"].pk)
    assert rescored.status == "open" and rescored.run_ids == [second.pk]
    assert rescored.hits[0]["models"] == ["model-d", "model-e", "model-f"] and rescored.priority == 1.0
    assert AdjudicationCase.objects.get(pk=case["started"].pk).status == "in_progress", "a verdict was given"
    event = AuditEvent.objects.filter(action="adjudication.cases.sync").latest("pk")
    assert event.after["withdrawn_cases"] == [withdrawn.pk] and event.after["readings_withdrawn"] == 1

    page = Client()
    page.force_login(reader)
    html = page.get(reverse("adjudication:case-detail", args=[withdrawn.pk])).content.decode()
    assert "Withdrawn" in html and 'id="verdict-form"' not in html
    assert withdrawn.pk not in [c["id"] for c in page.get(reverse("adjudication:api-case-list")).json()["results"]]

    EvaluationRun.objects.filter(pk=first.pk).update(is_reference=True)    # marked again: the case comes back
    again = cases_sync(run_ids=[first.pk])
    assert again.reopened == 1
    reopened = AdjudicationCase.objects.get(pk=withdrawn.pk)
    assert reopened.status == "open" and reopened.run_ids == [first.pk] and reopened.version == version + 2


def test_a_verdict_on_a_case_withdrawn_meanwhile_is_refused(scored, users):  # noqa: F811
    from adjudication.services import CaseConflict, case_verdict_submit, cases_sync
    from workers.models import EvaluationRun

    (item,) = _choice_items(1)
    _agree_wrong(scored["run"], scored["endpoints"], item)
    cases_sync(run_ids=[scored["run"].pk])
    case = AdjudicationCase.objects.get(key=f"item:{item.item_key}")
    EvaluationRun.objects.filter(pk=scored["run"].pk).update(is_reference=False)
    cases_sync(run_ids=[scored["run"].pk])
    with pytest.raises(CaseConflict, match="withdrawn"):
        case_verdict_submit(case_id=case.pk, reader=users[Role.ADJUDICATOR], verdict="confirmed",
                            expected_version=case.version)


def test_baselines_inside_a_reference_run_never_count_as_models(scored):  # noqa: F811
    from adjudication.facts import detect_cases
    from adjudication.services import cases_sync

    (item,) = _choice_items(1)
    a, b, c = scored["endpoints"]
    prior, null = _endpoint("prior-baseline", "prior"), _endpoint("null-baseline", "null")
    scored["run"].endpoints.add(prior, null)
    _agree_wrong(scored["run"], [a, b, prior, null], item)   # two baselines join the two models' wrong answer
    _answer_right(scored["run"], [c], item)
    (draft,) = [d for d in detect_cases(run_ids=[scored["run"].pk]) if d.item_id == item.pk]
    (hit,) = draft.hits
    assert hit.models == ("model-a", "model-b") and hit.evidence["answered"] == 3, "3 models answered, not 5"
    assert hit.priority == round(0.5 + 0.5 * 2 / 3, 4)

    # baselines alone in a reference run raise nothing
    (other,) = [i for i in _choice_items(2) if i.pk != item.pk]
    _agree_wrong(scored["run"], [prior, null], other)
    cases_sync(run_ids=[scored["run"].pk])
    assert not AdjudicationCase.objects.filter(key=f"item:{other.item_key}").exists()


def test_raised_by_on_the_case_page_the_queue_and_the_api_blinded_for_readers(scored, users):  # noqa: F811
    from adjudication.services import cases_sync

    (item,) = _choice_items(1)
    run = scored["run"]
    _agree_wrong(run, scored["endpoints"], item)
    cases_sync(run_ids=[run.pk])
    case = AdjudicationCase.objects.get(key=f"item:{item.item_key}")
    reader, curator = Client(), Client()
    reader.force_login(users[Role.ADJUDICATOR])
    curator.force_login(users[Role.CURATOR])

    html = reader.get(reverse("adjudication:case-detail", args=[case.pk])).content.decode()
    block = html[html.index('id="raised-by"'):][:1500]
    assert "Reference run 1" in block and "Model A, Model B, Model C" in block
    assert f"Run {run.pk}" not in block, "run ids lead to the results readers are blind to"
    assert run.name not in block and "model-a" not in block and "/runs/" not in block
    html = curator.get(reverse("adjudication:case-detail", args=[case.pk])).content.decode()
    block = html[html.index('id="raised-by"'):][:1500]
    assert f"Run {run.pk}: {run.name}" in block and "model-a, model-b, model-c" in block
    assert reverse("workers:run-detail", args=[run.pk]) in block

    queue = reader.get(reverse("adjudication:queue")).content.decode()
    assert "<th>Raised by</th>" in queue and "Model A, Model B, Model C" in queue

    detail = reader.get(reverse("adjudication:api-case-detail", args=[case.pk])).json()
    assert detail["raised_by"] == {"runs": [{"id": None, "label": "Reference run 1", "name": None, "reference": True}],
                                   "models": ["Model A", "Model B", "Model C"], "annotators": False}
    assert detail["run_ids"] == [] and detail["hits"], "the API is blinded like the page"
    assert {m for h in detail["hits"] for m in h["models"]} == {"Model A", "Model B", "Model C"}
    for name in (e.name for e in scored["endpoints"]):
        assert name not in json.dumps(detail), f"{name} reaches a reader through the API"
    listed = reader.get(reverse("adjudication:api-case-list")).json()["results"]
    for name in [e.name for e in scored["endpoints"]] + [run.name]:
        assert name not in json.dumps(listed)
    assert all(c["run_ids"] == [] and all(r["id"] is None for r in c["raised_by"]["runs"]) for c in listed)
    listed = curator.get(reverse("adjudication:api-case-list")).json()["results"]
    mine = next(c for c in listed if c["id"] == case.pk)
    assert mine["raised_by"]["runs"][0]["name"] == run.name and mine["raised_by"]["models"][0] == "model-a"
    assert mine["run_ids"] == [run.pk] and mine["rules"] == ["model_consensus"], "existing fields kept"
    assert {m for h in mine["hits"] for m in h["models"]} == {"model-a", "model-b", "model-c"}
