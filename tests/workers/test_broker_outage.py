"""A broker outage never fails a request: starting a run commits the run and its batches (the
dispatch miss is logged) and the resume action sends the pending batches later; a rescore is
accepted (202) and sent again by the rescore action. Every send reaches the broker through
`Celery.send_task`, which is made to raise what kombu raises when Redis is unreachable."""
from __future__ import annotations

import logging

import pytest
from django.test import Client
from kombu.exceptions import OperationalError

from accounts.roles import Role
from medr2.celery import app as celery_app
from workers.models import EvaluationRun, RunBatch

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker(monkeypatch):
    """Celery sends with the broker down (`down=True`) or recorded (`sent`) without a broker."""

    class Broker:
        down = True
        sent: list[tuple[str, tuple, str | None]] = []

    state = Broker()
    state.sent = []

    def send_task(name, args=None, kwargs=None, **options):
        if state.down:
            raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        state.sent.append((name, tuple(args or ()), options.get("queue")))

    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False        # sends go to the (down) broker even in an eager set-up
    monkeypatch.setattr(celery_app, "send_task", send_task)
    yield state
    celery_app.conf.task_always_eager = eager


@pytest.fixture
def curator(users):
    client = Client()
    client.force_login(users[Role.CURATOR])
    return client


def test_starting_a_run_with_the_broker_down_commits_it_and_resume_sends_it_later(
        eval_content, make_endpoint, curator, broker, caplog, django_capture_on_commit_callbacks):
    eval_content(1, kinds=["clean"])
    make_endpoint("nul", "null")
    with caplog.at_level(logging.WARNING, logger="common.dispatch"), \
            django_capture_on_commit_callbacks(execute=True) as callbacks:
        r = curator.post("/api/runs/", {"name": "outage", "models": ["nul"], "split": "all", "batch_size": 1},
                         content_type="application/json")
    assert r.status_code == 201, r.content
    assert len(callbacks) == 1                       # the dispatch ran after commit, and failed quietly
    run = EvaluationRun.objects.get(pk=r.json()["id"])
    assert run.status == EvaluationRun.Status.RUNNING
    batches = RunBatch.objects.filter(run=run)
    assert (batches.count() == run.n_variants >= 1
            and set(batches.values_list("status", flat=True)) == {RunBatch.Status.PENDING})
    assert "workers.eval_batch(" in caplog.text and "not sent (OperationalError)" in caplog.text
    assert not batches.filter(dispatched_at__isnull=False).exists()   # marked unsent again: the sweep sends them

    broker.down = False                              # Redis is back: resume sends every pending batch
    with django_capture_on_commit_callbacks(execute=True):
        r = curator.post(f"/api/runs/{run.pk}/resume/")
    assert r.status_code == 200 and r.json()["status"] == "running"
    sent = [(name, args) for name, args, _ in broker.sent]
    assert sorted(args[0] for name, args in sent if name == "workers.eval_batch") == \
        sorted(batches.values_list("pk", flat=True))


def test_the_sweep_sends_a_run_the_broker_missed_once_it_is_back(
        eval_content, make_endpoint, broker, django_capture_on_commit_callbacks):
    from workers.services.runs import run_create, runs_reconcile

    eval_content(1, kinds=["clean"])
    endpoint = make_endpoint("nul", "null")
    with django_capture_on_commit_callbacks(execute=True):
        run = run_create(name="later", endpoints=[endpoint], actor=None, split="all", batch_size=1)
    assert not run.batches.filter(dispatched_at__isnull=False).exists() and broker.sent == []
    runs_reconcile()                                  # still down: nothing sent, nothing raised
    assert broker.sent == []
    broker.down = False
    runs_reconcile()                                  # Celery beat, a minute later
    assert sorted(args[0] for name, args, _ in broker.sent if name == "workers.eval_batch") == \
        sorted(run.batches.values_list("pk", flat=True))


def test_starting_a_run_through_the_service_with_the_broker_down(
        eval_content, make_endpoint, broker, django_capture_on_commit_callbacks):
    from workers.services.runs import run_create

    eval_content(1, kinds=["clean"])
    endpoint = make_endpoint("nul", "null")
    with django_capture_on_commit_callbacks(execute=True):
        run = run_create(name="svc", endpoints=[endpoint], actor=None, split="all", batch_size=3)
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.RUNNING and run.batches.count() >= 1
    assert not run.batches.exclude(status=RunBatch.Status.PENDING).exists()


def test_rescoring_with_the_broker_down_is_accepted_and_sent_again_later(
        eval_content, make_endpoint, curator, broker, caplog, django_capture_on_commit_callbacks):
    from workers.services.runs import run_create

    eval_content(1, kinds=["clean"])
    run = run_create(name="r", endpoints=[make_endpoint("nul", "null")], actor=None, split="all", start=False)
    with caplog.at_level(logging.WARNING, logger="common.dispatch"), \
            django_capture_on_commit_callbacks(execute=True) as callbacks:
        r = curator.post(f"/api/runs/{run.pk}/rescore/")
    assert r.status_code == 202 and r.json()["id"] == run.pk
    assert len(callbacks) == 1 and f"workers.run_score({run.pk},) not sent" in caplog.text

    with django_capture_on_commit_callbacks(execute=True):   # the HTML action, broker down: a message, no error
        page = curator.post(f"/runs/{run.pk}/rescore/")
    assert page.status_code == 302

    broker.down = False
    with django_capture_on_commit_callbacks(execute=True):
        assert curator.post(f"/api/runs/{run.pk}/rescore/").status_code == 202
    assert broker.sent == [("workers.run_score", (run.pk,), None)]
