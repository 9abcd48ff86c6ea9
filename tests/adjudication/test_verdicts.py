"""Verdicts and their effects: correction -> new item version -> rescoring of exactly the right
predictions -> leaderboards; optimistic locking; double reading with a third reader; who may read."""
from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from accounts.roles import Role
from adjudication.models import AdjudicationCase, CaseReading
from annotation.models import QAItem, Variant

from .test_facts import scored  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def _letter(options, text):
    return chr(65 + options.index(text))


@pytest.fixture
def consensus_case(scored, users):  # noqa: F811
    """A single-choice item with every variant kind; model-a and model-b answer option X (not the gold)
    on every variant, model-c answers the gold; all scored; one open case."""
    from adjudication.services import cases_sync
    from annotation.services.variants import variants_generate
    from workers.models import Prediction
    from workers.scoring.item import score_prediction
    from workers.services.scoring import run_score

    item = QAItem.objects.filter(category__answer_type="single_choice").order_by("pk").first()
    variants_generate(items=[item.pk], actor=None, seed=1)    # every kind (the fixture made clean only)
    new_gold = next(o for o in item.options if o != item.gold_answer)
    a, b, c = scored["endpoints"]
    rows = []
    for v in Variant.objects.filter(item=item):
        for endpoint, text in ((a, new_gold), (b, new_gold), (c, item.gold_answer)):
            letter = _letter(v.options, text) if text in v.options else "A"
            s = score_prediction(answer_type="single_choice", kind=v.kind, expected=v.expected_answer,
                                 params=v.params, options=v.options, outcome="answered", value=letter)
            rows.append(Prediction(run=scored["run"], endpoint=endpoint, variant=v, item=item, outcome="answered",
                                   parsed=letter, parse_method="letter_bare", correct=s.correct, iou=s.iou,
                                   cue_adopted=s.cue_adopted))
    Prediction.objects.bulk_create(rows)
    run_score(run=scored["run"], actor=None)
    cases_sync(run_ids=[scored["run"].pk])
    case = AdjudicationCase.objects.get(key=f"item:{item.item_key}")
    return {**scored, "item": item, "new_gold": new_gold, "case": case, "users": users}


def test_a_corrected_gold_flips_exactly_the_predictions_it_should(consensus_case, django_capture_on_commit_callbacks):
    from adjudication.models import PredictionRescore
    from adjudication.services import case_verdict_submit
    from adjudication.tasks import rescore_task
    from audit.models import AuditEvent
    from workers.models import EvaluationRun, Prediction

    ctx = consensus_case
    item, case, run = ctx["item"], ctx["case"], ctx["run"]
    before = {p.pk: (p.correct, p.endpoint.name, p.variant) for p in
              Prediction.objects.filter(item=item).select_related("endpoint", "variant")}
    old_metrics = EvaluationRun.objects.get(pk=run.pk).metrics
    reader = ctx["users"][Role.ADJUDICATOR]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        case_verdict_submit(case_id=case.pk, reader=reader, verdict="corrected", answer=ctx["new_gold"],
                            expected_version=case.version, comment="models are right", time_spent_s=42.5)
    assert callbacks, "the rescoring is queued after commit"
    case.refresh_from_db()
    new = QAItem.objects.get(item_key=item.item_key, is_current=True)
    assert (new.version, new.gold_answer, case.result_item_id) == (item.version + 1, ctx["new_gold"], new.pk)
    assert case.status == "resolved" and case.outcome == "corrected" and case.outcome_answer == ctx["new_gold"]
    assert Variant.objects.filter(item=new).exists(), "the new version gets its own variants"

    summary = rescore_task(case.pk)      # what the Celery worker runs

    after = {p.pk: p.correct for p in Prediction.objects.filter(item=item)}
    flipped = {pk for pk in after if after[pk] != before[pk][0]}
    expected_flips = set()
    for pk, (was, model, v) in before.items():
        keeps = v.expected_answer.get("rejects_premise") or v.expected_answer.get("absent_finding")
        if not keeps and model in ("model-a", "model-b", "model-c") and v.kind != "false_premise":
            # under the new gold, a/b (who said new_gold) are right and c (old gold) is wrong
            if was != (model != "model-c"):
                expected_flips.add(pk)
    assert flipped == expected_flips and flipped
    assert summary["changed"] == len(flipped) == PredictionRescore.objects.count()
    assert summary["flipped_to_correct"] > 0 and summary["flipped_to_wrong"] > 0
    history = PredictionRescore.objects.select_related("gold_item").first()
    assert history.gold_item_id == new.pk and history.case_id == case.pk
    assert history.correct_before != history.correct_after

    new_metrics = EvaluationRun.objects.get(pk=run.pk).metrics
    assert new_metrics["scored_at"] != old_metrics["scored_at"], "the leaderboard was recomputed"
    assert new_metrics["models"] != old_metrics["models"]
    again = rescore_task(case.pk)
    assert again["changed_now"] == 0 and again["runs_rescored"] == [], "a second delivery changes nothing"
    assert again["changed"] == summary["changed"], "and the case still reports what its correction changed"
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"adjudication.reading.submit", "adjudication.case.resolve", "annotation.qa_item.revise",
            "workers.predictions.rescore", "workers.run.score"} <= actions
    reading = CaseReading.objects.get(case=case)
    assert (reading.reader_id, reading.verdict, reading.time_spent_s) == (reader.pk, "corrected", 42.5)


def test_the_second_adjudicator_gets_a_conflict_and_nothing_is_overwritten(consensus_case, make_user):
    from adjudication.services import CaseConflict, case_verdict_submit

    case = consensus_case["case"]
    first, second = make_user(Role.ADJUDICATOR), make_user(Role.ADJUDICATOR)
    opened = case.version                                     # both opened the page at this version
    case_verdict_submit(case_id=case.pk, reader=first, verdict="confirmed", expected_version=opened)
    with pytest.raises(CaseConflict) as err:
        case_verdict_submit(case_id=case.pk, reader=second, verdict="flawed", expected_version=opened)
    assert first.username in err.value.message and "not saved" in err.value.message
    case.refresh_from_db()
    assert case.outcome == "confirmed" and case.resolved_by_id == first.pk
    assert not CaseReading.objects.filter(reader=second).exists()
    assert QAItem.objects.get(pk=consensus_case["item"].pk).status == "approved", "flawed was not applied"


def test_stale_version_is_refused_even_before_resolution(consensus_case, make_user, users):
    from adjudication.services import CaseConflict, case_assign, case_verdict_submit

    case = consensus_case["case"]
    reader = make_user(Role.ADJUDICATOR)
    opened = case.version
    case_assign(case=case, readers=[reader], actor=users[Role.CURATOR])     # assignment bumps the version
    with pytest.raises(CaseConflict):
        case_verdict_submit(case_id=case.pk, reader=reader, verdict="confirmed", expected_version=opened)
    case.refresh_from_db()
    case_verdict_submit(case_id=case.pk, reader=reader, verdict="confirmed", expected_version=case.version)


def test_double_reading_disagreement_goes_to_a_third_reader_who_decides(consensus_case, make_user, users):
    from adjudication.services import case_assign, case_verdict_submit

    case = consensus_case["case"]
    r1, r2, r3 = (make_user(Role.ADJUDICATOR, f"dr-{n}") for n in "xyz")
    case_assign(case=case, readers=[r1, r2], actor=users[Role.CURATOR], double_read=True)
    case.refresh_from_db()
    version = case.version
    case_verdict_submit(case_id=case.pk, reader=r1, verdict="confirmed", expected_version=version)
    case.refresh_from_db()
    assert case.status == "in_progress" and case.version == version, "the second reading is still wanted"
    case_verdict_submit(case_id=case.pk, reader=r2, verdict="ambiguous", expected_version=version)
    case.refresh_from_db()
    assert case.status == "tie"
    third = CaseReading.objects.get(case=case, role="tiebreak")
    assert third.reader_id not in (r1.pk, r2.pk)
    third_user = third.reader
    case_verdict_submit(case_id=case.pk, reader=third_user, verdict="ambiguous", expected_version=case.version)
    case.refresh_from_db()
    assert case.status == "resolved" and case.outcome == "ambiguous" and case.resolved_by_id == third_user.pk
    assert QAItem.objects.get(pk=consensus_case["item"].pk).status == "ambiguous"
    assert r3  # an extra eligible adjudicator existed


def test_double_reading_agreement_resolves_without_a_third_reader(consensus_case, make_user, users):
    from adjudication.services import case_assign, case_verdict_submit

    case = consensus_case["case"]
    r1, r2 = make_user(Role.ADJUDICATOR), make_user(Role.ADJUDICATOR)
    case_assign(case=case, readers=[r1, r2], actor=users[Role.CURATOR], double_read=True)
    case.refresh_from_db()
    for r in (r1, r2):
        case_verdict_submit(case_id=case.pk, reader=r, verdict="flawed", expected_version=case.version)
    case.refresh_from_db()
    assert case.status == "resolved" and case.outcome == "flawed"
    assert not CaseReading.objects.filter(case=case, role="tiebreak").exists()
    assert QAItem.objects.get(pk=consensus_case["item"].pk).status == "rejected"


def test_a_reader_cannot_adjudicate_an_item_they_annotated(consensus_case, make_user, users):
    from adjudication.services import case_assign, case_verdict_submit, cases_assign_round_robin
    from annotation.services.findings import finding_create

    case = consensus_case["case"]
    annotator_reader, other = make_user(Role.ADJUDICATOR, "dr-drew"), make_user(Role.ADJUDICATOR, "dr-other")
    finding_create(image=case.image, kind="lesion", label="nodule", actor=annotator_reader, source="label_studio",
                   box=(1, 1, 5, 5))
    with pytest.raises(PermissionDenied, match="annotated"):
        case_verdict_submit(case_id=case.pk, reader=annotator_reader, verdict="confirmed",
                            expected_version=case.version)
    with pytest.raises(ValidationError, match="annotated"):
        case_assign(case=case, readers=[annotator_reader], actor=users[Role.CURATOR])
    summary = cases_assign_round_robin(case_ids=[case.pk], actor=users[Role.CURATOR],
                                       readers=[annotator_reader, other])
    assert summary.cases == 1 and CaseReading.objects.get(case=case).reader_id == other.pk


def test_an_annotator_without_the_adjudicator_role_is_refused(consensus_case, users):
    from adjudication.services import case_verdict_submit

    case = consensus_case["case"]
    for role in (Role.ANNOTATOR, Role.CURATOR, Role.AUDITOR):
        with pytest.raises(PermissionDenied):
            case_verdict_submit(case_id=case.pk, reader=users[role], verdict="confirmed",
                                expected_version=case.version)


def test_bad_corrections_are_refused_with_a_clear_message(consensus_case, users):
    from adjudication.services import case_verdict_submit

    case, item = consensus_case["case"], consensus_case["item"]
    reader = users[Role.ADJUDICATOR]
    for answer, message in (("not an option", "options"), (item.gold_answer, "current gold"), (None, "options")):
        with pytest.raises(ValidationError, match=message):
            case_verdict_submit(case_id=case.pk, reader=reader, verdict="corrected", answer=answer,
                                expected_version=case.version)
    with pytest.raises(ValidationError, match="unknown verdict"):
        case_verdict_submit(case_id=case.pk, reader=reader, verdict="maybe", expected_version=case.version)
    case.refresh_from_db()
    assert case.status == "open" and not CaseReading.objects.exists()


def test_a_redrawn_box_becomes_the_new_gold_and_evidence(scored, users):  # noqa: F811
    from adjudication.services import case_verdict_submit
    from annotation.models import GroundingBox

    item = QAItem.objects.filter(category__answer_type="box").order_by("pk").first()
    case = AdjudicationCase.objects.create(key=f"item:{item.item_key}", item=item, item_key=item.item_key,
                                           image=item.chain.image, stage=item.stage, category=item.category,
                                           rules=",right_answer_wrong_evidence,", hits=[], priority=0.5)
    reader = users[Role.ADJUDICATOR]
    w, h = item.chain.image.width, item.chain.image.height
    with pytest.raises(ValidationError, match="outside"):
        case_verdict_submit(case_id=case.pk, reader=reader, verdict="corrected", answer=[0, 0, w + 5, h],
                            expected_version=case.version)
    case_verdict_submit(case_id=case.pk, reader=reader, verdict="corrected", answer=[2, 3, 20.5, 30],
                        expected_version=case.version)
    new = QAItem.objects.get(item_key=item.item_key, is_current=True)
    assert new.gold_answer == [2, 3, 20.5, 30]
    box = GroundingBox.objects.get(source="adjudication")
    assert box.author_id == reader.pk and box in new.evidence_boxes.all()
    assert [box.x0, box.y0, box.x1, box.y1] == [2, 3, 20.5, 30]


def test_assign_cases_command_round_robins_and_refuses_unknown_readers(consensus_case, make_user):
    from io import StringIO

    from django.core.management import CommandError, call_command

    a, b = make_user(Role.ADJUDICATOR, "dr-one"), make_user(Role.ADJUDICATOR, "dr-two")
    out = StringIO()
    call_command("assign_cases", "--readers", "dr-one,dr-two", "--double-read", stdout=out)
    n = AdjudicationCase.objects.count()
    assert f"assigned {n} case(s), {2 * n} reading(s)" in out.getvalue()
    assert CaseReading.objects.filter(reader=a).count() == CaseReading.objects.filter(reader=b).count() == n
    with pytest.raises(CommandError, match="no such users: dr-nobody"):
        call_command("assign_cases", "--readers", "dr-nobody")


def test_detection_after_a_correction_judges_old_predictions_by_the_corrected_gold(consensus_case):
    from adjudication.facts import run_facts
    from adjudication.services import case_verdict_submit

    case, item = consensus_case["case"], consensus_case["item"]
    before = {f.item_id: f.gold for f in run_facts(run_ids=[consensus_case["run"].pk])[0]}
    assert before[item.pk] == item.gold_answer
    case_verdict_submit(case_id=case.pk, reader=consensus_case["users"][Role.ADJUDICATOR], verdict="corrected",
                        answer=consensus_case["new_gold"], expected_version=case.version)
    after = {f.item_id: f.gold for f in run_facts(run_ids=[consensus_case["run"].pk])[0]}
    assert after[item.pk] == consensus_case["new_gold"], "the rules see what rescoring scored against"
    assert {k: v for k, v in after.items() if k != item.pk} == {k: v for k, v in before.items() if k != item.pk}


def test_a_correction_made_while_the_broker_is_down_is_kept_and_rescored_by_the_sweep(
        consensus_case, monkeypatch, django_capture_on_commit_callbacks):
    """The publish fails as Celery reports an unreachable Redis (kombu OperationalError)."""
    from kombu.exceptions import OperationalError as BrokerDown

    from adjudication import tasks
    from adjudication.services import case_verdict_submit

    def down(*args, **kwargs):
        raise BrokerDown("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.rescore_task, "apply_async", down)
    case = consensus_case["case"]
    with django_capture_on_commit_callbacks(execute=True):
        case_verdict_submit(case_id=case.pk, reader=consensus_case["users"][Role.ADJUDICATOR], verdict="corrected",
                            answer=consensus_case["new_gold"], expected_version=case.version)
    case.refresh_from_db()
    assert case.status == "resolved" and case.result_item_id and case.rescore is None, "the verdict is kept"

    sent = []
    monkeypatch.setattr(tasks.rescore_task, "apply_async", lambda args, kwargs: sent.append(args[0]))
    assert tasks.rescore_pending_task(older_than_s=3600) == [], "a fresh correction is left to its own task"
    assert tasks.rescore_pending_task(older_than_s=0) == [case.pk] and sent == [case.pk]
    tasks.rescore_task(case.pk)                                    # what the worker then runs
    case.refresh_from_db()
    assert case.rescore["changed"] > 0
    assert tasks.rescore_pending_task(older_than_s=0) == [], "nothing left once rescored"


def test_a_worker_killed_between_rescoring_and_run_scoring_is_caught_up_on_redelivery(consensus_case):
    from adjudication.services import case_verdict_submit
    from adjudication.services.rescoring import predictions_rescore
    from adjudication.tasks import rescore_task
    from workers.models import EvaluationRun

    case, run = consensus_case["case"], consensus_case["run"]
    case_verdict_submit(case_id=case.pk, reader=consensus_case["users"][Role.ADJUDICATOR], verdict="corrected",
                        answer=consensus_case["new_gold"], expected_version=case.version)
    scored_at = EvaluationRun.objects.get(pk=run.pk).scored_at
    first = predictions_rescore(item_key=case.item_key, actor=None, reason="killed before run scoring",
                                case=case, rescore_runs=False)
    assert first.changed > 0 and first.runs == [run.pk]
    assert EvaluationRun.objects.get(pk=run.pk).scored_at == scored_at       # the worker died here
    redelivered = rescore_task(case.pk)
    assert redelivered["changed_now"] == 0 and redelivered["runs_rescored"] == [run.pk]
    assert EvaluationRun.objects.get(pk=run.pk).scored_at > scored_at, "the leaderboard is recomputed anyway"
    assert redelivered["changed"] == first.changed
