"""Fixtures for the model report: a real scored run (phantom images → chains → variants → a run of three
models executed by the real batch code → `run_score`), and a model row whose parameters hold secrets and
server paths the way a row written before `endpoint_create` refused them would."""
from __future__ import annotations

import pytest

SECRET_KEY_VALUE = "sk-live-7f3a9c1d2e8b4a6f"
SECRET_PATH = "/srv/hospital-models/secret-weights-v3"
SECRET_URL = "http://10.20.30.40:8000/v1"
NESTED_SECRET = "Bearer tok-55aa66bb77cc"
# three models, as a demo run has: a strong one, a cue follower and a blind baseline
MODELS = (("oracle", "oracle", {}), ("follower", "cue_follower", {"p": 0.5, "accuracy": 0.7, "seed": 1}),
          ("chance", "random", {"seed": 2}))


@pytest.fixture
def scored_run(phantom_images):
    """A completed, scored run of three models over every variant kind of a few phantom chains (all splits)."""

    def _make(images: int = 4, seed: int = 1, models=MODELS, split: str = "all"):
        from django.utils import timezone

        from annotation.models import QAItem
        from annotation.services.chains import chains_generate
        from annotation.services.variants import variants_generate
        from workers.models import EvaluationRun
        from workers.services.endpoints import endpoint_create
        from workers.services.execution import batch_execute
        from workers.services.runs import run_create, run_finalize

        made = phantom_images(images, seed=seed)
        chains_generate(image_ids=[i.pk for i in made], actor=None, seed=0)
        QAItem.objects.filter(is_current=True).update(status=QAItem.Status.APPROVED)
        variants_generate(items=list(QAItem.objects.filter(is_current=True).values_list("pk", flat=True)),
                          actor=None, seed=0)
        endpoints = [endpoint_create(name=name, backend=backend, parameters=params, actor=None)
                     for name, backend, params in models]
        run = run_create(name="report", endpoints=endpoints, actor=None, split=split, batch_size=1000, start=False)
        EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING,
                                                       started_at=timezone.now())
        for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
            batch_execute(batch_id=batch_id)
        run_finalize(run_id=run.pk)
        return EvaluationRun.objects.get(pk=run.pk)

    return _make


@pytest.fixture
def run_with_secrets(scored_run):
    """A scored run whose `chance` model row (and the run's provenance snapshot of it) holds an API key, a
    local weights path, a server URL and a bearer token nested in a dict: what an admin-edited or legacy
    row can hold even though `endpoint_create` refuses secret-looking names today."""
    from workers.models import EvaluationRun, ModelEndpoint

    run = scored_run()
    leaked = {"seed": 2, "api_key": SECRET_KEY_VALUE, "weights_path": SECRET_PATH, "base_url": SECRET_URL,
              "extra_body": {"headers": {"authorization": NESTED_SECRET}, "top_k": 5}}
    endpoint = ModelEndpoint.objects.get(name="chance")
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(parameters=leaked)
    provenance = dict(run.provenance)
    provenance["endpoints"][str(endpoint.pk)]["parameters"] = leaked
    EvaluationRun.objects.filter(pk=run.pk).update(provenance=provenance)
    return EvaluationRun.objects.get(pk=run.pk)


# --- the report's lifecycle (reports.services) ---------------------------------------------------------------
CRITERIA = [{"metric": "step_accuracy", "model": "*", "op": ">=", "threshold": 0.5},
            {"metric": "chain_accuracy", "model": "oracle", "op": ">=", "threshold": 0.9, "on": "lo"}]


@pytest.fixture
def platform_key(settings):
    """The platform's Ed25519 key (MEDR2_SIGNING_KEY): every report version writes a signed audit checkpoint."""
    from common.signing import generate_signing_key

    settings.MEDR2_SIGNING_KEY = generate_signing_key()
    return settings.MEDR2_SIGNING_KEY


@pytest.fixture
def report_sent(monkeypatch):
    """The report tasks' sends, (task name, args): the broker is never reached."""
    from reports.tasks import report_version_build_task, signed_copy_build_task

    calls = []
    for task in (report_version_build_task, signed_copy_build_task):
        monkeypatch.setattr(task, "apply_async", lambda args=None, kwargs=None, _name=task.name, **options:
                            calls.append((_name, tuple(args or ()))))
    return calls


@pytest.fixture
def ready_version(scored_run, users, platform_key, report_sent):
    """A report of a scored run, generated and built (ready) by an auditor: (report, version)."""
    from accounts.roles import Role
    from reports.services import report_create, report_generate, report_version_build

    def _make(images: int = 3, criteria=CRITERIA, run=None, actor=None):
        actor = actor or users[Role.AUDITOR]
        run = run or scored_run(images=images)
        report = report_create(actor=actor, title="Board report", runs=[run], criteria=criteria,
                               scope="Triage support, research use", limitations="Phantoms only.")
        version = report_generate(report=report, actor=actor)
        return report, report_version_build(version_id=version.pk, actor=actor)

    return _make
