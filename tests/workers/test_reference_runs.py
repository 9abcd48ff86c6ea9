"""Marking a run as a reference run: the one baseline predicate, the service (who, which runs, audited),
the run page's switch, the API, the commands."""
from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.roles import Role
from workers.models import EvaluationRun

from ..adjudication.test_facts import scored  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(scored):  # noqa: F811
    """The constructed three-model run, finished and scored, not a reference run yet."""
    run = scored["run"]
    EvaluationRun.objects.filter(pk=run.pk).update(is_reference=False, scored_at=timezone.now())
    run.refresh_from_db()
    return run


def _baseline_run(name="random alone"):
    from workers.services.endpoints import endpoint_create
    from workers.services.runs import run_create

    endpoint = endpoint_create(name="random-baseline", backend="random", actor=None)
    run = run_create(name=name, endpoints=[endpoint], actor=None, split="all", start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.COMPLETED, scored_at=timezone.now())
    return run


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_one_predicate_tells_baselines_from_models():
    from adjudication.rules import ItemFact, ModelAnswer, RuleParams, detect
    from workers.backends import baseline_backend_names, is_baseline_backend
    from workers.models import ModelEndpoint

    assert baseline_backend_names() == ["null", "prior", "random"]
    assert not any(is_baseline_backend(n) for n in ("oracle", "cue_follower", "text_only", "transformers",
                                                    "openai-compatible", "no-such-backend"))
    assert ModelEndpoint(name="r", backend="random").is_baseline
    assert not ModelEndpoint(name="o", backend="oracle").is_baseline

    item = ItemFact(item_id=1, item_key="k", chain_id=1, image_id=1, stage=2, step=1, category="c",
                    answer_type="single_choice", gold="liver")
    answers = [ModelAnswer(model=m, item_id=1, variant_id=1, variant_kind="clean", outcome="answered", value="spleen",
                           baseline=m.startswith("baseline")) for m in ("m1", "m2", "baseline-1", "baseline-2")]
    assert detect([item], answers, params=RuleParams()) == [], "two models are not enough, baselines never count"
    (hit,) = detect([item], [*answers, ModelAnswer(model="m3", item_id=1, variant_id=1, variant_kind="clean",
                                                   outcome="answered", value="spleen")])
    assert hit.models == ("m1", "m2", "m3") and hit.evidence["answered"] == 3


def test_marking_is_for_curators_and_admins_and_is_audited(finished, users):
    from audit.models import AuditEvent
    from workers.services.reference import run_set_reference

    for role in (Role.ANNOTATOR, Role.ADJUDICATOR, Role.AUDITOR, None):
        with pytest.raises(PermissionDenied):
            run_set_reference(run=finished, reference=True, actor=users[role])
    with pytest.raises(PermissionDenied):
        run_set_reference(run=finished, reference=True, actor=None)
    assert not EvaluationRun.objects.get(pk=finished.pk).is_reference

    run = run_set_reference(run=finished, reference=True, actor=users[Role.CURATOR], reason="  the benchmark run ")
    assert run.is_reference and run.reference_set_by == users[Role.CURATOR]
    assert run.reference_reason == "the benchmark run"
    event = AuditEvent.objects.get(action="workers.run.reference")
    assert event.actor == users[Role.CURATOR] and event.object_id == str(run.pk)
    assert event.before["is_reference"] is False and event.after == {
        "is_reference": True, "reason": "the benchmark run", "models": ["model-a", "model-b", "model-c"],
        "baselines_ignored": []}
    assert run_set_reference(run=run, reference=True, actor=users[Role.ADMIN]).reference_set_by == users[Role.CURATOR]
    assert AuditEvent.objects.filter(action="workers.run.reference").count() == 1, "no change, nothing recorded"

    run = run_set_reference(run=run, reference=False, actor=users[Role.ADMIN], reason="superseded")
    assert not run.is_reference
    unmark = AuditEvent.objects.filter(action="workers.run.reference").latest("pk")
    assert unmark.before["is_reference"] is True and unmark.after["is_reference"] is False


def test_only_a_finished_scored_run_with_a_model_can_be_a_reference_run(finished, users):
    from common.errors import Conflict
    from workers.services.reference import run_set_reference

    curator = users[Role.CURATOR]
    EvaluationRun.objects.filter(pk=finished.pk).update(status=EvaluationRun.Status.RUNNING)
    with pytest.raises(Conflict, match="finished, scored"):
        run_set_reference(run=finished, reference=True, actor=curator)
    EvaluationRun.objects.filter(pk=finished.pk).update(status=EvaluationRun.Status.COMPLETED, scored_at=None)
    with pytest.raises(Conflict, match="not scored"):
        run_set_reference(run=finished, reference=True, actor=curator)
    with pytest.raises(Conflict, match="only baselines"):
        run_set_reference(run=_baseline_run(), reference=True, actor=curator)
    EvaluationRun.objects.filter(pk=finished.pk).update(status=EvaluationRun.Status.CANCELLED, scored_at=timezone.now())
    assert run_set_reference(run=finished, reference=True, actor=curator).is_reference, "a scored partial run may be"


def test_the_run_page_shows_the_state_and_lets_curators_switch_it(finished, users):
    detail = reverse("workers:run-detail", args=[finished.pk])
    url = reverse("workers:run-reference", args=[finished.pk])
    curator = _client(users[Role.CURATOR])
    page = curator.get(detail).content.decode()
    assert "Not a reference run: its results never change the adjudication queue" in page
    assert f'action="{url}"' in page and "csrfmiddlewaretoken" in page[page.index('id="reference-form"'):]
    assert 'action="' + url not in _client(users[Role.AUDITOR]).get(detail).content.decode(), "auditors only read"

    for role in (Role.ANNOTATOR, Role.ADJUDICATOR, Role.AUDITOR):
        assert _client(users[role]).post(url, {"reference": "1"}).status_code == 403
    assert Client().post(url, {"reference": "1"}).status_code == 302, "anonymous: to the login page"
    assert not EvaluationRun.objects.get(pk=finished.pk).is_reference

    response = curator.post(url, {"reference": "1", "reason": "the benchmark run"})
    assert response.status_code == 302 and response["Location"] == detail
    assert EvaluationRun.objects.get(pk=finished.pk).is_reference
    page = curator.get(detail).content.decode()
    assert "Reference run — opens adjudication cases" in page and "the benchmark run" in page
    listing = curator.get(reverse("workers:run-list")).content.decode()
    assert 'class="tag reference"' in listing

    assert _client(users[Role.ADMIN]).post(url, {"reference": "0"}).status_code == 302
    assert not EvaluationRun.objects.get(pk=finished.pk).is_reference
    assert 'class="tag reference"' not in curator.get(reverse("workers:run-list")).content.decode()

    baseline = _baseline_run()
    response = curator.post(reverse("workers:run-reference", args=[baseline.pk]), {"reference": "1"}, follow=True)
    assert "only baselines" in response.content.decode() and not EvaluationRun.objects.get(pk=baseline.pk).is_reference


def test_csrf_is_required_to_mark_a_run(finished, users):
    client = Client(enforce_csrf_checks=True)
    client.force_login(users[Role.CURATOR])
    assert client.post(reverse("workers:run-reference", args=[finished.pk]), {"reference": "1"}).status_code == 403
    assert client.post(reverse("workers:api-run-reference", args=[finished.pk]), {"reference": True},
                       content_type="application/json").status_code == 403
    assert not EvaluationRun.objects.get(pk=finished.pk).is_reference


def test_the_api_marks_and_unmarks_with_one_error_shape(finished, users):
    url = reverse("workers:api-run-reference", args=[finished.pk])
    for role in (Role.ANNOTATOR, Role.ADJUDICATOR, Role.AUDITOR):
        response = _client(users[role]).post(url, {"reference": True}, content_type="application/json")
        assert response.status_code == 403 and response.json()["code"] == "permission_denied"
    assert Client().post(url, {"reference": True}, content_type="application/json").status_code in (401, 403)

    curator = _client(users[Role.CURATOR])
    body = curator.post(url, {"reference": True, "reason": "audit set"}, content_type="application/json").json()
    assert body["is_reference"] is True and body["reference_reason"] == "audit set" and body["reference_set_at"]
    assert curator.get(reverse("workers:api-run-detail", args=[finished.pk])).json()["is_reference"] is True
    assert curator.post(url, {"reference": False}, content_type="application/json").json()["is_reference"] is False
    invalid = curator.post(url, {"reason": "no flag"}, content_type="application/json")
    assert invalid.status_code == 400 and "reference" in invalid.json()["fields"]

    baseline = _baseline_run()
    refused = curator.post(reverse("workers:api-run-reference", args=[baseline.pk]), {"reference": True},
                           content_type="application/json")
    assert refused.status_code == 409 and refused.json()["code"] == "conflict"
    assert "baselines" in refused.json()["detail"]


def test_the_commands_mark_a_run_as_the_user_they_name(finished, users, capsys):
    from audit.models import AuditEvent

    curator = users[Role.CURATOR].username
    with pytest.raises(CommandError, match="curators and admins"):
        call_command("run_reference", str(finished.pk), "--user", users[Role.ADJUDICATOR].username)
    with pytest.raises(CommandError, match="no user"):
        call_command("run_reference", "latest", "--user", "nobody")
    call_command("run_reference", "latest", "--user", curator, "--reason", "demo")
    assert EvaluationRun.objects.get(pk=finished.pk).is_reference and "is a reference run" in capsys.readouterr().out
    call_command("run_reference", str(finished.pk), "--user", curator, "--unset")
    assert not EvaluationRun.objects.get(pk=finished.pk).is_reference
    with pytest.raises(CommandError, match="only baselines"):
        call_command("run_reference", str(_baseline_run().pk), "--user", curator)

    # run_evaluation --reference marks the run it finds complete (the demo is re-runnable with --skip-if-done)
    EvaluationRun.objects.filter(pk=finished.pk).update(name="Demo evaluation")
    call_command("run_evaluation", "--models", "model-a,model-b,model-c", "--name", "Demo evaluation",
                 "--skip-if-done", "--reference", "--user", curator)
    assert EvaluationRun.objects.get(pk=finished.pk).is_reference
    assert AuditEvent.objects.filter(action="workers.run.reference").latest("pk").actor.username == curator
    with pytest.raises(CommandError, match="--user"):
        call_command("run_evaluation", "--models", "model-a", "--name", "x", "--reference")
