"""The rescoring after a correction runs in a real Celery worker process (Redis broker, PostgreSQL)."""
from __future__ import annotations

import pytest

from accounts.roles import Role
from adjudication.models import AdjudicationCase

from ..workers.test_celery_worker import worker  # noqa: F401  (fixture)
from .test_facts import scored  # noqa: F401  (fixture)
from .test_verdicts import consensus_case  # noqa: F401  (fixture)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_worker_rescores_the_corrected_item_and_its_runs(consensus_case, worker,  # noqa: F811
                                                           django_capture_on_commit_callbacks):
    from adjudication.models import PredictionRescore
    from adjudication.services import case_verdict_submit
    from adjudication.tasks import rescore_task
    from workers.models import EvaluationRun, Prediction

    case, run = consensus_case["case"], consensus_case["run"]
    scored_at = EvaluationRun.objects.get(pk=run.pk).metrics["scored_at"]
    with django_capture_on_commit_callbacks(execute=False):   # the task goes to the test worker's queue below
        case_verdict_submit(case_id=case.pk, reader=consensus_case["users"][Role.ADJUDICATOR], verdict="corrected",
                            answer=consensus_case["new_gold"], expected_version=case.version)
    result = rescore_task.apply_async(args=[case.pk], queue=worker).get(timeout=120)
    assert result["changed"] > 0 and result["runs"] == [run.pk]
    assert PredictionRescore.objects.count() == result["changed"]
    assert Prediction.objects.filter(item=consensus_case["item"], endpoint__name="model-a", variant__kind="clean",
                                     correct=True).exists(), "model-a said the new gold: now correct"
    assert AdjudicationCase.objects.get(pk=case.pk).rescore["changed"] == result["changed"]
    assert EvaluationRun.objects.get(pk=run.pk).metrics["scored_at"] != scored_at, "leaderboard recomputed"
