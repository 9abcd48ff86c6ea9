"""Every API operation fuzzed from its own OpenAPI schema (schemathesis, through the Django WSGI app): no
request, however odd, answers a 500, and every answer is what the schema says (status code, content type,
body). Run as an admin, a curator and an annotator (a blind reader: most writes answer 403), each on a small
world of real rows (an image with chains, items and variants, a scored run with its predictions and cases, a
Label Studio batch, a draft release, a report), so generated ids sometimes hit real objects.

Nothing leaves the process: Celery sends go through common.dispatch.send, recorded here instead; Label
Studio is off (an empty LABEL_STUDIO_URL). `deterministic` generation and a fixed seed make a failure
reproducible; the printed curl command repeats it against `manage.py runserver`."""
from __future__ import annotations

import itertools

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase, given, settings as hypothesis_settings, strategies as st
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from accounts.roles import Role

EXAMPLES = 30          # per operation, for reads and for writes alike
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
CONFIG = {"seed": 20, "generation": {"max-examples": EXAMPLES, "deterministic": True, "allow-x00": True}}


def api_schema():
    """The schema /api/schema/ serves (drf-spectacular), loaded by schemathesis."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    return schemathesis.openapi.from_dict(document, config=SchemathesisConfig.from_dict(CONFIG))


@pytest.fixture
def wsgi_app():
    """The project's WSGI app, without Django closing the test's connection after each request (the test
    client does the same): the requests see the rows of the test's transaction."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def sent(monkeypatch):
    """Every Celery send (common.dispatch.send, docs/architecture.md), recorded instead of sent."""
    calls = []

    def fake_send(task, *args, **kwargs):
        calls.append((task.name, args))
        return True

    monkeypatch.setattr("common.dispatch.send", fake_send)
    return calls


@pytest.fixture
def world(users, sent, settings):
    """A few real rows of every kind an API answers about."""
    from django.utils import timezone

    from adjudication.services import cases_sync
    from annotation.models import Image, QAItem
    from annotation.services.chains import chains_generate
    from annotation.services.demo import PHANTOM_DATASET, demo_load
    from annotation.services.variants import variants_generate
    from common.signing import generate_signing_key
    from labelstudio.services import batch_create
    from releases.services import release_create
    from reports.services import report_create, report_generate
    from workers.models import EvaluationRun
    from workers.services.endpoints import endpoint_create
    from workers.services.execution import batch_execute
    from workers.services.reference import run_set_reference
    from workers.services.runs import run_create, run_finalize
    settings.LABEL_STUDIO_URL = ""
    settings.MEDR2_SIGNING_KEY = generate_signing_key()
    curator, admin = users[Role.CURATOR], users[Role.ADMIN]
    demo_load(phantoms=3, seed=0, actor=curator, assign_to=[users[Role.ANNOTATOR].username])
    images = list(Image.objects.filter(source_dataset=PHANTOM_DATASET).order_by("pk"))
    chains_generate(image_ids=[i.pk for i in images], actor=curator, seed=0)
    QAItem.objects.filter(is_current=True).update(status=QAItem.Status.APPROVED)
    variants_generate(items=list(QAItem.objects.filter(is_current=True).values_list("pk", flat=True)),
                      actor=curator, seed=0)
    endpoints = [endpoint_create(name="oracle", backend="oracle", parameters={}, actor=curator),
                 endpoint_create(name="random-baseline", backend="random", parameters={"seed": 2}, actor=curator)]
    run = run_create(name="fuzz run", endpoints=endpoints, actor=curator, split="all", batch_size=1000, start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
    for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    run_finalize(run_id=run.pk)
    run.refresh_from_db()
    run_set_reference(run=run, reference=True, actor=curator, reason="fuzz")
    cases_sync(run_ids=[run.pk], actor=curator)
    batch_create(name="fuzz batch", images=images[:1], readers=[users[Role.ANNOTATOR]], maximum_annotations=1,
                 actor=curator)
    release_create(actor=admin, title="fuzz release")
    report = report_create(actor=users[Role.AUDITOR], title="fuzz report", runs=[run], release=None,
                           criteria=[], scope="", limitations="")
    report_generate(report=report, actor=users[Role.AUDITOR], queue=False)
    return {"run": run.pk}


ROLES = [Role.ADMIN, Role.CURATOR, Role.ANNOTATOR]


def _fuzz(operation, send) -> str | None:
    """EXAMPLES requests of one operation, valid ones and (as many) invalid ones; the first failure, or None."""
    failures = []
    cases = st.one_of(operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE))

    @hypothesis_settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                         phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=cases)
    def run(case):
        try:
            send(case)
        except BaseException as exc:   # a failed check: keep the first, go on to the next operation
            if not failures:
                failures.append(f"{operation.label}: {type(exc).__name__}: {str(exc)[:1500]}")
            raise

    try:
        run()
    except BaseException as exc:  # noqa: B036 - hypothesis and schemathesis raise exception groups
        if isinstance(exc, KeyboardInterrupt):
            raise
        return failures[0] if failures else f"{operation.label}: {type(exc).__name__}: {exc}"
    return None


def test_every_api_operation_answers_what_its_schema_says(world, wsgi_app, users):
    """Every operation, EXAMPLES generated requests, each sent as an admin and, in turn, as a curator or an
    annotator (every role on every request would triple the time for little more)."""
    tokens = {role: Token.objects.create(user=users[role]).key for role in ROLES}
    others = itertools.cycle([Role.CURATOR, Role.ANNOTATOR])

    def send(case):
        for role in (Role.ADMIN, next(others)):
            case.call_and_validate(app=wsgi_app, headers={"Authorization": f"Token {tokens[role]}"}, checks=CHECKS)

    operations = [result.ok() for result in api_schema().get_all_operations()]
    assert len(operations) >= 45, [op.label for op in operations]
    failures = [failure for op in operations if (failure := _fuzz(op, send))]
    assert not failures, f"{len(failures)} of {len(operations)} operations failed:\n\n" + "\n\n".join(failures)


# --- the bad query parameters that answered 500 (issue 20, item 8), one by one -------------------------------
HUGE = str(2**63)          # one past PostgreSQL's bigint


@pytest.fixture
def admin_client(users):
    from django.test import Client

    client = Client()
    client.force_login(users[Role.ADMIN])
    return client


def _invalid(response, field: str) -> dict:
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["code"] == "invalid" and list(body["fields"]) == [field], body
    return body


def test_a_word_where_an_id_goes_answers_400_naming_the_parameter(world, admin_client):
    body = _invalid(admin_client.get("/api/items/", {"chain": "abc"}), "chain")
    assert "'abc' is not an id" in body["fields"]["chain"][0]
    _invalid(admin_client.get("/api/chains/", {"image": "1.5"}), "image")
    _invalid(admin_client.get("/api/variants/", {"item": "x", "seed": "3"}), "item")
    _invalid(admin_client.get(f"/api/runs/{world['run']}/predictions/", {"correct": "maybe"}), "correct")
    _invalid(admin_client.get("/api/runs/", {"status": "exploded"}), "status")
    _invalid(admin_client.get("/api/adjudication/cases/", {"rule": "no-such-rule"}), "rule")


@pytest.mark.parametrize(("url", "name"), [("/api/items/", "chain"), ("/api/chains/", "image"),
                                           ("/api/variants/", "item"), ("/api/runs/{run}/predictions/", "endpoint")])
def test_an_id_past_bigint_answers_400_not_a_database_error(world, admin_client, url, name):
    url = url.format(run=world["run"])
    body = _invalid(admin_client.get(url, {name: HUGE}), name)
    assert "out of range" in body["fields"][name][0]
    assert admin_client.get(url, {name: str(2**63 - 1)}).status_code == 200      # the largest id: no match
    _invalid(admin_client.get(url, {name: "9" * 5000}), name)                     # past int()'s digit limit


def test_the_predictions_api_names_a_model_by_name_or_by_id(world, admin_client):
    from workers.models import ModelEndpoint

    url = f"/api/runs/{world['run']}/predictions/"
    every = admin_client.get(url).json()["count"]
    by_name = admin_client.get(url, {"endpoint": "oracle", "page_size": 500}).json()
    oracle = ModelEndpoint.objects.get(name="oracle").pk
    by_id = admin_client.get(url, {"endpoint": str(oracle), "page_size": 500}).json()
    assert 0 < by_name["count"] == by_id["count"] < every
    assert {p["endpoint"] for p in by_name["results"]} == {"oracle"}
    assert [p["id"] for p in by_name["results"]] == [p["id"] for p in by_id["results"]]
    assert admin_client.get(url, {"endpoint": "no-such-model"}).json()["count"] == 0


def test_filters_that_are_valid_still_filter(world, admin_client):
    from annotation.models import Chain

    chain = Chain.objects.order_by("pk").first()
    items = admin_client.get("/api/items/", {"chain": str(chain.pk), "all_versions": "true"}).json()
    assert items["count"] > 0 and {i["chain_id"] for i in items["results"]} == {chain.pk}
    chains = admin_client.get("/api/chains/", {"image": str(chain.image_id), "seed": str(chain.seed)}).json()
    assert chain.pk in [c["id"] for c in chains["results"]]


def test_an_unknown_api_url_answers_the_error_shape(world, admin_client):
    response = admin_client.get("/api/items/abc/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert admin_client.get("/no-such-page/").status_code == 404            # pages keep the HTML 404 page


def test_a_batch_of_images_that_do_not_exist_is_refused(world, admin_client):
    response = admin_client.post("/api/annotation-batches/", {"name": "x", "images": [2**62], "push": False},
                                 content_type="application/json")
    assert _invalid(response, "images")["fields"]["images"] == [f"no images with ids [{2**62}]"]
