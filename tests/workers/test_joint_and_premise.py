"""Workers-side support for two item kinds: joint answer + box items (the option and the lesion's box
in one response) and true-premise variants (the control of false premise)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from django.utils import timezone

from adjudication.services.rescoring import expected_under
from workers.parsing import parse_answer, parse_answer_with_box
from workers.results import premise_rows, robustness_rows
from workers.scoring import score_prediction
from workers.scoring.metrics import PredictionTable, cell_table, model_metrics

OPTS = ["cyst", "mass", "abscess", "The premise is false: there is no cyst in the spleen"]
BOX = [10, 20, 50, 60]
JOINT = {"value": "mass", "letter": "B", "evidence_box": BOX}


# ----------------------------------------------------------------- parsing joint answers
@pytest.mark.parametrize("text, letter, box", [
    ("B (10, 20, 50, 60)", "B", BOX),
    ("Answer: B. Box: [10,20,50,60]", "B", BOX),
    ("[10, 20, 50, 60]", None, BOX),
    ("B", "B", None),
    ("The answer is (C); the lesion is at x0=10, y0=20, x1=50, y1=60.", "C", BOX),
    ("A. cyst [0.1, 0.2, 0.5, 0.6]", "A", BOX),            # 0-1 units scaled with the image size
    ("Not sure.", None, None),
])
def test_joint_parse_reads_the_option_and_the_box_independently(text, letter, box):
    choice, parsed_box = parse_answer_with_box(text, answer_type="single_choice", options=OPTS, image_size=(100, 100))
    assert choice.value == letter and (choice.outcome == "answered") == (letter is not None)
    assert parsed_box.value == ([float(v) for v in box] if box else None)


def test_coordinates_would_disturb_a_plain_choice_parse_but_not_the_joint_one():
    assert parse_answer("B (10, 20, 50, 60)", answer_type="single_choice", options=OPTS).outcome == "unparseable"
    choice, _ = parse_answer_with_box("B (10, 20, 50, 60)", answer_type="single_choice", options=OPTS)
    assert choice.value == "B"
    # option letters are never coordinates, and a yes/no answer keeps its word
    choice, box = parse_answer_with_box("Yes, at (12, 22, 48, 58)", answer_type="yes_no", options=["yes", "no"],
                                        image_size=(100, 100))
    assert (choice.value, box.value) == ("A", [12.0, 22.0, 48.0, 58.0])
    _, box = parse_answer_with_box("A or B", answer_type="single_choice", options=OPTS)
    assert box.outcome == "unparseable"
    with pytest.raises(ValueError, match="joint"):
        parse_answer_with_box("B", answer_type="box")


# ----------------------------------------------------------------- scoring
@pytest.mark.parametrize("outcome, value, box, correct, iou", [
    ("answered", "B", BOX, True, 1.0),
    ("answered", "B", None, True, 0.0),                    # letter only: right choice, no evidence
    ("unparseable", None, [10, 20, 50, 40], False, 0.5),   # box only: IoU 800/1600
    ("answered", "A", [30, 40, 70, 80], False, 400 / 2800),
    ("error", None, None, False, 0.0),
])
def test_joint_items_are_correct_by_the_choice_and_carry_the_box_iou(outcome, value, box, correct, iou):
    s = score_prediction(answer_type="single_choice", kind="clean", expected=JOINT, params={}, options=OPTS,
                         outcome=outcome, value=value, box=box)
    assert s.correct is correct and s.iou == pytest.approx(iou)
    plain = score_prediction(answer_type="single_choice", kind="clean", expected={"letter": "B"}, params={},
                             options=OPTS, outcome=outcome, value=value, box=box)
    assert plain.iou is None     # no evidence box asked: no IoU


def test_a_box_with_no_right_answer_is_parsed_and_kept_but_not_judged():
    """false_premise / negation variants of joint items ask for a box too, but the lesion they name does
    not exist: "evidence_box" is None, so the box is parsed (the choice is not disturbed) but has no IoU."""
    from workers.backends import GenerationResult
    from workers.models import ModelEndpoint
    from workers.services.execution import _prediction

    expected = {"value": OPTS[3], "letter": "D", "rejects_premise": True, "answer_with_box": True,
                "evidence_box": None}
    row = {"pk": 7, "item_id": 3, "kind": "false_premise", "prompt": "q", "options": OPTS, "expected_answer": expected,
           "params": {"rejecting_letter": "D"}, "item__category__answer_type": "single_choice",
           "item__category__code": "margin", "item__chain__image__width": 100, "item__chain__image__height": 100}
    endpoint = ModelEndpoint(pk=1, name="m", backend="null", box_format="auto")
    got = _prediction(9, endpoint, row, GenerationResult(key=7, text="D (10, 20, 50, 60)"))
    from workers.services.execution import COL

    assert got[COL["parsed"]] == "D" and got[COL["correct"]] is True
    assert got[COL["box"]] == [10.0, 20.0, 50.0, 60.0] and got[COL["iou"]] is None
    assert got[COL["cue_adopted"]] is False


@pytest.mark.parametrize("kind, chosen, correct, cue", [
    ("true_premise", "B", True, False),     # the gold
    ("true_premise", "D", False, True),     # rejected a true premise: a false rejection
    ("true_premise", "A", False, False),
    ("false_premise", "D", True, False),    # rejected the false premise
    ("false_premise", "B", False, True),    # accepted it
])
def test_true_premise_is_scored_against_the_gold_and_flags_false_rejections(kind, chosen, correct, cue):
    expected = ({"value": "mass", "letter": "B", "rejects_premise": False} if kind == "true_premise"
                else {"value": OPTS[3], "letter": "D", "rejects_premise": True})
    s = score_prediction(answer_type="single_choice", kind=kind, expected=expected,
                         params={"rejecting_letter": "D"}, options=OPTS, outcome="answered", value=chosen)
    assert (s.correct, s.cue_adopted) == (correct, cue)
    unanswered = score_prediction(answer_type="single_choice", kind=kind, expected=expected,
                                  params={"rejecting_letter": "D"}, options=OPTS, outcome="abstained", value=None)
    assert unanswered.cue_adopted is False and unanswered.correct is False


def test_rescoring_moves_true_premise_to_the_new_gold_and_keeps_false_premise():
    true_p = {"value": "mass", "letter": "B", "rejects_premise": False}
    assert expected_under(true_p, OPTS, "abscess", "single_choice")["letter"] == "C"
    false_p = {"value": OPTS[3], "letter": "D", "rejects_premise": True}
    assert expected_under(false_p, OPTS, "abscess", "single_choice") == false_p
    # a joint variant follows a corrected evidence box (the new box overlapping the old one most)
    moved = expected_under(JOINT, OPTS, "mass", "single_choice", [[200, 200, 240, 240], [12, 22, 52, 62]])
    assert moved["evidence_box"] == [12, 22, 52, 62] and moved["letter"] == "B"
    assert expected_under(JOINT, OPTS, "mass", "single_choice", [BOX, [0, 0, 5, 5]])["evidence_box"] == BOX


# ----------------------------------------------------------------- metrics on a tiny table
def _table(rows):
    cols = ("endpoint", "variant", "item", "chain", "stage", "step", "category", "kind", "answer_type", "outcome",
            "correct", "iou", "cue_adopted")
    return PredictionTable.from_rows(rows, cols)


def test_grounded_correct_and_box_hit_by_hand():
    nan = math.nan
    rows = [  # endpoint 1; items 1-4 joint (S3), item 5 a box item (S2), item 6 a plain choice (S4)
        (1, 10, 1, 1, 3, 3, "margin", "clean", "single_choice", "answered", True, 0.8, nan),    # grounded
        (1, 20, 2, 2, 3, 3, "margin", "clean", "single_choice", "answered", True, 0.2, nan),    # right, wrong box
        (1, 30, 3, 3, 3, 3, "margin", "clean", "yes_no", "answered", False, 0.9, nan),          # wrong, box hit
        (1, 40, 4, 4, 3, 3, "margin", "clean", "single_choice", "unparseable", False, 0.0, nan),
        (1, 50, 5, 5, 2, 2, "lesion-box", "clean", "box", "answered", True, 0.7, nan),
        (1, 60, 6, 6, 4, 4, "diagnosis", "clean", "single_choice", "answered", True, nan, nan),
        (1, 41, 4, 4, 3, 3, "margin", "misleading_hint", "single_choice", "answered", True, 0.6, 0.0),
    ]
    m = model_metrics(_table(rows))[1]["answer_box"]
    assert m["n"] == 4 and m["mean_iou"] == pytest.approx((0.8 + 0.2 + 0.9 + 0.0) / 4)
    assert (m["grounded_correct"]["k"], m["grounded_correct"]["n"]) == (1, 4)
    assert (m["box_hit_rate"]["k"], m["box_hit_rate"]["n"]) == (2, 4)
    assert m["right_answer_wrong_box"] == 1
    by_stage = {c["stage"]: c for c in cell_table(_table(rows), ["endpoint", "stage"])}
    s3 = by_stage[3]    # every kind counts in the cell table: 5 joint rows, grounded: items 1 and 4 (hint)
    assert (s3["grounded_n"], s3["grounded_correct"], s3["box_hits"]) == (5, 2, 3)
    assert s3["grounded_correct_rate"] == pytest.approx(0.4) and s3["box_hit_rate"] == pytest.approx(0.6)
    assert by_stage[2]["grounded_n"] == 0 and by_stage[2]["grounded_correct_rate"] is None
    assert by_stage[4]["grounded_n"] == 0


def test_premise_discrimination_and_side_by_side_robustness_by_hand():
    nan = math.nan
    rows = []
    for item in range(1, 5):   # clean right on every item
        rows.append((1, item * 10, item, item, 3, 3, "margin", "clean", "single_choice", "answered", True, nan, nan))
    # false premise: rejected on items 1-3 (correct), accepted on 4; true premise: falsely rejected on 1-2
    for item in range(1, 5):
        fp_ok = item <= 3
        rows.append((1, item * 10 + 1, item, item, 3, 3, "margin", "false_premise", "single_choice", "answered",
                     fp_ok, nan, 0.0 if fp_ok else 1.0))
        tp_reject = item <= 2
        rows.append((1, item * 10 + 2, item, item, 3, 3, "margin", "true_premise", "single_choice", "answered",
                     not tp_reject, nan, 1.0 if tp_reject else 0.0))
    rows.append((1, 99, 4, 4, 3, 3, "margin", "misleading_hint", "single_choice", "answered", True, nan, 0.0))
    metrics = model_metrics(_table(rows))
    p = metrics[1]["premise"]
    assert p["false_premise_rejection"]["value"] == pytest.approx(0.75)
    assert p["true_premise_false_rejection"]["value"] == pytest.approx(0.5)
    assert p["true_premise_accuracy"]["value"] == pytest.approx(0.5)
    assert p["discrimination"]["value"] == pytest.approx(0.25)
    assert metrics[1]["robustness"]["true_premise"]["cue_adoption_rate"]["value"] == pytest.approx(0.5)
    stored = {"endpoints": {"1": "m"}, "models": {"1": metrics[1]}}
    kinds = [r["kind"] for r in robustness_rows(stored)]
    assert kinds == ["misleading_hint", "false_premise", "true_premise"]   # false and true premise side by side
    assert premise_rows(stored)[0]["discrimination"]["value"] == pytest.approx(0.25)


def test_tables_without_a_split_column_still_build():
    t = _table([(1, 1, 1, 1, 1, 1, "m", "clean", "single_choice", "answered", True, math.nan, math.nan)])
    assert t.split.tolist() == [""] and np.asarray(t.take(np.array([0])).split).tolist() == [""]


# ----------------------------------------------------------------- end to end: a batch of joint items
@pytest.mark.django_db
def test_a_run_of_joint_items_stores_the_box_its_iou_and_the_grounded_metrics(eval_content, make_endpoint, users):
    from django.test import Client

    from accounts.roles import Role
    from annotation.models import Variant
    from tests.workers.backends.openai_loopback import OpenAILoopback
    from workers.models import EvaluationRun, Prediction
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create, run_finalize

    eval_content(2, kinds=["clean", "option_permutation"])
    joint = list(Variant.objects.filter(item__category__answer_type__in=["single_choice", "yes_no"])
                 .order_by("pk"))
    assert len(joint) >= 5
    patterns = [  # (answer template, choice right?, box given?)
        ("{gold} (10, 20, 50, 60)", True, True), ("Answer: {gold}. Box: [10,20,50,60]", True, True),
        ("[10, 20, 50, 60]", False, True), ("{gold}", True, False), ("{wrong} [10, 20, 50, 60]", False, True)]
    answers, want = {}, {}
    for i, v in enumerate(joint):
        v.expected_answer = {**v.expected_answer, "evidence_box": BOX}
        gold = v.expected_answer["letter"]
        wrong = "A" if gold != "A" else "B"
        template, right, boxed = patterns[i % len(patterns)]
        if v.prompt in answers:          # two variants with one prompt get one answer: skip the second
            continue
        answers[v.prompt] = template.format(gold=gold, wrong=wrong)
        want[v.pk] = (right, boxed)
    Variant.objects.bulk_update(joint, ["expected_answer"])
    with OpenAILoopback(answers=answers, default_answer="A") as server:
        endpoint = make_endpoint("api", "openai-compatible", parameters={"base_url": server.base_url,
                                                                         "model": "tiny-vlm"})
        run = run_create(name="joint", endpoints=[endpoint], actor=None, split="all", batch_size=500, start=False)
        EvaluationRun.objects.filter(pk=run.pk).update(status="running", started_at=timezone.now())
        for batch_id in run.batches.values_list("pk", flat=True):
            batch_execute(batch_id=batch_id)
        run_finalize(run_id=run.pk)
    preds = {p.variant_id: p for p in Prediction.objects.filter(run=run, variant_id__in=want)}
    assert len(preds) == len(want)
    for vid, (right, boxed) in want.items():
        p = preds[vid]
        assert p.correct is right, p.raw_output
        assert p.box == ([10.0, 20.0, 50.0, 60.0] if boxed else None), p.raw_output
        assert p.iou == pytest.approx(1.0 if boxed else 0.0), p.raw_output
        assert "box:" in p.parse_detail
    run.refresh_from_db()
    m = run.metrics["models"][str(endpoint.pk)]["answer_box"]
    clean = [vid for vid in want if Variant.objects.get(pk=vid).kind == "clean"]
    assert m["n"] == Prediction.objects.filter(run=run, variant__kind="clean", iou__isnull=False,
                                               item__category__answer_type__in=["single_choice", "yes_no"]).count()
    # every clean joint prediction counts, also one skipped above whose prompt repeats another's (same answer)
    scored = list(Prediction.objects.filter(run=run, variant__kind="clean", iou__isnull=False)
                  .values_list("correct", "iou"))
    assert {vid for vid in clean} <= set(Prediction.objects.filter(run=run).values_list("variant_id", flat=True))
    assert m["grounded_correct"]["k"] == sum(c and iou >= 0.5 for c, iou in scored)
    assert m["right_answer_wrong_box"] == sum(c and iou < 0.5 for c, iou in scored)
    client = Client()
    client.force_login(users[Role.CURATOR])
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Grounded-correct (answer + box)" in page and 'id="grounded"' in page
    header = client.get(f"/runs/{run.pk}/results.csv").content.decode().splitlines()[0]
    assert header.endswith("grounded_n,grounded_correct_rate,box_hit_rate")
