"""Models with planted behaviour (workers/backends/planted.py): their answers parse back to what was
planted, their rates match their parameters, and execution hands the variant's truth to them only."""
from __future__ import annotations

import math
from collections import Counter

import pytest

from workers.backends import BackendError, GenerationRequest, backend_class, load_backend
from workers.backends.planted import (
    BoxShifterBackend,
    CueFollowerBackend,
    OracleBackend,
    StageDecayBackend,
    TextOnlyBackend,
    shifted_box,
)
from workers.parsing import parse_answer, parse_answer_with_box
from workers.scoring import score_prediction
from workers.scoring.item import box_iou

PLANTED = ("oracle", "cue_follower", "text_only", "box_shifter", "stage_decay")
OPTS = ("cyst", "mass", "abscess", "hematoma")
SIZE = (200, 160)
GOLD_BOX = [40, 30, 90, 70]
JOINT_BOX = [120, 50, 160, 100]


def req(key: int, answer_type: str = "single_choice", *, options=OPTS, kind: str = "clean", params=None,
        expected=None, stage: int = 1, item=None, prompt: str | None = None, size=SIZE, truth: bool = True):
    """A hand-made request with the truth execution would attach."""
    options = tuple(options) if answer_type not in ("box", "short_text") else ()
    if expected is None:
        expected = {"box": {"value": GOLD_BOX, "letter": None},
                    "multi_choice": {"value": [OPTS[0], OPTS[2]], "letter": ["A", "C"]},
                    "short_text": {"value": "mass", "letter": None}}.get(answer_type)
        expected = expected or {"value": options[1], "letter": "B"}
    t = {"kind": kind, "params": params or {}, "expected": expected, "stage": stage, "options": list(options),
         "item": key if item is None else item}
    return GenerationRequest(key=key, prompt=prompt if prompt is not None else f"question {key}", image=None,
                             answer_type=answer_type, options=options, category="c", image_size=size,
                             truth=t if truth else None)


def parsed(request: GenerationRequest, text: str):
    """(choice value or box, box of a joint answer or None), read back through the platform's parser."""
    expected = request.truth["expected"]
    if request.answer_type in ("single_choice", "yes_no") and "evidence_box" in expected:
        choice, box = parse_answer_with_box(text, answer_type=request.answer_type, options=request.options,
                                            image_size=request.image_size)
        return choice.value, box.value
    answer = parse_answer(text, answer_type=request.answer_type, options=request.options,
                          image_size=request.image_size)
    assert answer.outcome == "answered", (text, answer)
    return answer.value, None


def score(request: GenerationRequest, text: str):
    value, box = parsed(request, text)
    t = request.truth
    if request.answer_type == "box":
        box = value
    return score_prediction(answer_type=request.answer_type, kind=t["kind"], expected=t["expected"],
                            params=t["params"], options=list(request.options), outcome="answered", value=value, box=box)


def within(k: int, n: int, p: float, z: float = 4.0) -> bool:
    """k of n is within z binomial standard errors of p."""
    return abs(k / n - p) <= z * math.sqrt(max(p * (1 - p), 1e-9) / n) + 1e-12


def one(backend, request) -> str:
    result = backend.generate([request])[0]
    assert not result.error, result.error
    return result.text


# ----------------------------------------------------------------- contract
def test_planted_models_read_truth_and_real_models_never_do():
    for name in PLANTED:
        cls = backend_class(name)
        assert cls.needs_truth is True and cls.uses_image is False, name
    for name in ("transformers", "openai-compatible", "random", "prior", "null"):
        assert backend_class(name).needs_truth is False, name
    assert isinstance(load_backend("cue_follower", {"p": 0.3, "seed": 1}, cache_size=0), CueFollowerBackend)


def test_a_request_without_truth_is_an_item_error_not_a_crash():
    results = OracleBackend().generate([req(1, truth=False), req(2)])
    assert "truth" in results[0].error and results[0].text == ""
    assert results[1].text == "B" and not results[1].error
    assert "truth" not in repr(req(3))          # the answer never shows up in logs of requests


@pytest.mark.parametrize("kwargs, message", [
    ({"p": 1.5}, "p must be a number in \\[0, 1\\]"),
    ({"p": -0.1}, "p must be"),
    ({"accuracy": "high"}, "accuracy must be"),
    ({"accuracy": True}, "accuracy must be"),
    ({"seed": "x"}, "seed must be an integer"),
    ({"bogus": 1}, "unknown parameter"),
])
def test_cue_follower_refuses_bad_parameters(kwargs, message):
    with pytest.raises(BackendError, match=message):
        CueFollowerBackend(**kwargs)


@pytest.mark.parametrize("cls, kwargs, message", [
    (TextOnlyBackend, {"accuracy": 2}, "accuracy must be a number in \\[0, 1\\]"),
    (BoxShifterBackend, {"iou": 0}, "iou must be a number in \\(0, 1\\]"),
    (BoxShifterBackend, {"iou": 1.2}, "iou must be"),
    (BoxShifterBackend, {"iou": float("nan")}, "iou must be"),
    (StageDecayBackend, {"accuracies": [0.9, 0.8, 0.7]}, "accuracies must be a list of 4 numbers"),
    (StageDecayBackend, {"accuracies": 0.5}, "accuracies must be a list"),
    (StageDecayBackend, {"accuracies": [0.9, 0.8, 0.7, 1.5]}, "accuracies\\[3\\] must be"),
    (OracleBackend, {"seed": 1}, "unknown parameter"),
])
def test_planted_models_refuse_bad_parameters(cls, kwargs, message):
    with pytest.raises(BackendError, match=message):
        cls(**kwargs)


# ----------------------------------------------------------------- oracle
ORACLE_CASES = [
    req(1),
    req(2, "yes_no", options=("yes", "no"), expected={"value": "no", "letter": "B"}),
    req(3, "multi_choice"),
    req(4, "box"),
    req(5, "short_text"),
    req(6, expected={"value": OPTS[2], "letter": "C", "answer_with_box": True, "evidence_box": JOINT_BOX}),
    req(7, kind="false_premise", options=(*OPTS, "The premise is false"), params={"rejecting_letter": "E"},
        expected={"value": "The premise is false", "letter": "E", "rejects_premise": True, "answer_with_box": True,
                  "evidence_box": None}),
    req(8, expected={"value": OPTS[3]}),        # no stored letter: found from the value
]


@pytest.mark.parametrize("request_", ORACLE_CASES, ids=lambda r: f"{r.key}-{r.answer_type}")
def test_oracle_gives_the_expected_answer_in_the_prompted_format(request_):
    text = one(OracleBackend(), request_)
    s = score(request_, text)
    assert s.correct is True, text
    if request_.answer_type == "box" or request_.truth["expected"].get("evidence_box"):
        assert s.iou == 1.0, text
    assert {1: "B", 2: "B", 3: "A, C", 4: "[40, 30, 90, 70]", 6: "C (120, 50, 160, 100)", 7: "E",
            8: "D"}.get(request_.key, text) == text


# ----------------------------------------------------------------- cue follower
def test_cue_follower_with_p_one_takes_every_decidable_cue():
    backend = CueFollowerBackend(p=1.0, accuracy=1.0)
    joint = {"value": OPTS[1], "letter": "B", "answer_with_box": True, "evidence_box": JOINT_BOX}
    wrong_box = [10, 100, 60, 140]
    dose = [55, 30, 105, 70]
    cases = [  # (request, the answer that adopts the cue)
        (req(1, kind="misleading_hint", params={"hinted_letter": "D"}), ("D", None)),
        (req(2, kind="correct_hint", params={"hinted_letter": "B"}), ("B", None)),
        (req(3, "multi_choice", kind="misleading_hint", params={"hinted_letter": ["A", "B", "C"]}),
         (["A", "B", "C"], None)),
        (req(4, kind="wrong_visual_cue", params={"cue": "mislabeled", "cue_letter": "C", "label": "abscess"}),
         ("C", None)),
        (req(5, kind="wrong_visual_cue", params={"cue": "wrong_region", "cue_letter": "A", "box": wrong_box}),
         ("A", None)),
        (req(6, "box", kind="wrong_visual_cue", params={"cue": "wrong_region", "box": wrong_box}),
         ([10.0, 100.0, 60.0, 140.0], None)),
        (req(7, kind="wrong_visual_cue", params={"cue": "wrong_region", "box": wrong_box}, expected=joint),
         ("B", [10.0, 100.0, 60.0, 140.0])),
        (req(8, "box", kind="box_dose_response", params={"target_iou": 0.5, "box": dose}),
         ([55.0, 30.0, 105.0, 70.0], None)),
        (req(9, kind="box_dose_response", params={"target_iou": 0.5, "box": dose}, expected=joint),
         ("B", [55.0, 30.0, 105.0, 70.0])),
        (req(10, kind="misleading_hint", params={"hinted_letter": "A"}, expected=joint),
         ("A", [120.0, 50.0, 160.0, 100.0])),
    ]
    for request, want in cases:
        text = one(backend, request)
        assert parsed(request, text) == want, (request.key, text)
    # no cue to follow: the base answer (accuracy 1: the gold)
    no_cue = [req(11, kind="wrong_visual_cue", params={"cue": "mislabeled", "label": "x"}),   # no cue_letter
              req(12, "box", kind="wrong_visual_cue", params={"cue": "mislabeled", "box": GOLD_BOX}),
              req(13, kind="box_dose_response", params={"box": dose}),                      # plain choice item
              req(14, kind="premise_injection"), req(15, kind="clean")]
    for request in no_cue:
        assert score(request, one(backend, request)).correct, request.key
    never = CueFollowerBackend(p=0.0, accuracy=1.0)
    for request, _ in cases:
        assert score(request, one(never, request)).correct, request.key


def test_cue_follower_shares_the_base_answer_of_an_item_and_adopts_at_rate_p():
    """Per item: a clean variant, a misleading-hint variant and a rotated variant. The hint variant
    answers the hinted letter or exactly the clean answer (the base is drawn per item), so the
    chance-corrected adoption — adopted under the hint among pairs whose clean answer does not adopt —
    recovers p; the base accuracy recovers `accuracy`."""
    p, accuracy, n = 0.3, 0.6, 3000
    backend = CueFollowerBackend(p=p, accuracy=accuracy, seed=5)
    right = followed = open_pairs = clean_adopts = 0
    for item in range(n):
        hinted = "ABCD"[item % 4] if item % 4 != 1 else "C"      # gold is B: always a wrong letter
        clean = req(3 * item, item=item)
        hint = req(3 * item + 1, item=item, kind="misleading_hint", params={"hinted_letter": hinted})
        rotated = req(3 * item + 2, item=item, kind="option_permutation", params={"rotation": 1},
                      options=OPTS[1:] + OPTS[:1], expected={"value": OPTS[1], "letter": "A"})
        a_clean, a_hint, a_rot = (one(backend, r) for r in (clean, hint, rotated))
        assert a_hint in (hinted, a_clean)
        # a rotation has no cue: the same option TEXT as the clean answer
        assert rotated.options["ABCD".index(a_rot)] == clean.options["ABCD".index(a_clean)]
        right += a_clean == "B"
        clean_adopts += a_clean == hinted
        if a_clean != hinted:
            open_pairs += 1
            followed += a_hint == hinted
    assert within(right, n, accuracy)
    assert within(clean_adopts, n, (1 - accuracy) / 3)          # a wrong base picks each wrong option alike
    assert within(followed, open_pairs, p)


def test_cue_follower_wrong_base_answers_are_wrong_and_uniform():
    backend = CueFollowerBackend(p=0.0, accuracy=0.0, seed=2)
    letters = Counter(one(backend, req(k)) for k in range(1200))
    assert set(letters) == {"A", "C", "D"} and all(within(c, 1200, 1 / 3) for c in letters.values())
    subsets = Counter(one(backend, req(k, "multi_choice")) for k in range(3000))
    assert "A, C" not in subsets and len(subsets) == 2 ** 4 - 2     # every non-empty wrong subset
    assert all(within(c, 3000, 1 / 14) for c in subsets.values())
    for k in range(200):
        request = req(k, "box")
        value, _ = parsed(request, one(backend, request))
        assert box_iou(value, GOLD_BOX) == 0.0
        assert 0 <= value[0] < value[2] <= SIZE[0] and 0 <= value[1] < value[3] <= SIZE[1]
    short = req(1, "short_text")
    assert parse_answer(one(backend, short), answer_type="short_text").outcome == "answered"
    assert not score(short, one(backend, short)).correct
    # a gold box that fills the image: the wrong box is the largest strip beside it, still disjoint
    big = req(2, "box", expected={"value": [30, 0, 200, 160], "letter": None})
    assert box_iou(parsed(big, one(backend, big))[0], [30, 0, 200, 160]) == 0.0


# ----------------------------------------------------------------- text only
def test_text_only_answers_from_the_prompt_alone():
    backend = TextOnlyBackend(accuracy=0.7, seed=3)
    n, right = 3000, 0
    for k in range(n):
        prompt = f"Which finding is shown? case {k}"
        clean = req(2 * k, prompt=prompt, item=k)
        ablated = req(2 * k + 1, prompt=prompt, item=k, kind="image_ablation", params={"ablation": "noise"},
                      size=(64, 64))
        a, b = one(backend, clean), one(backend, ablated)
        assert a == b
        right += score(clean, a).correct
    assert within(right, n, 0.7)
    # another prompt can change the answer; another seed too
    answers = {one(backend, req(0, prompt=f"p{k}")) for k in range(50)}
    assert len(answers) > 1
    other = TextOnlyBackend(accuracy=0.7, seed=4)
    assert [one(backend, req(0, prompt=f"p{k}")) for k in range(50)] != \
        [one(other, req(0, prompt=f"p{k}")) for k in range(50)]


# ----------------------------------------------------------------- box shifter
@pytest.mark.parametrize("iou", [1.0, 0.7, 0.6, 0.5, 0.3, 0.05])
@pytest.mark.parametrize("gold", [
    [40, 30, 90, 70],          # room on every side: shifted along +x
    [150, 30, 200, 70],        # at the right edge: shifted along -x
    [0, 20, 200, 60],          # the image's full width: shifted along y
    [0, 0, 200, 160],          # the whole image: a box inside it of iou times its area
    [17, 23, 24, 30],          # 7 px wide: the shift is fractional
])
def test_box_shifter_boxes_land_at_the_planted_iou(iou, gold):
    backend = BoxShifterBackend(iou=iou)
    request = req(1, "box", expected={"value": gold, "letter": None})
    box, _ = parsed(request, one(backend, request))
    assert 0 <= box[0] < box[2] <= SIZE[0] and 0 <= box[1] < box[3] <= SIZE[1]
    width = min(gold[2] - gold[0], gold[3] - gold[1])
    # the parser keeps four decimals: a shift off by 5e-5 moves the IoU by at most 1e-4 / side
    assert box_iou(box, gold) == pytest.approx(iou, abs=1e-4 / width + 1e-9)
    assert box_iou(shifted_box(tuple(map(float, gold)), iou, SIZE), gold) == pytest.approx(iou, abs=1e-4 / width + 1e-9)


def test_box_shifter_answers_choices_right_and_shifts_joint_boxes():
    backend = BoxShifterBackend(iou=0.5)
    joint = req(1, expected={"value": OPTS[1], "letter": "B", "answer_with_box": True, "evidence_box": JOINT_BOX})
    s = score(joint, one(backend, joint))
    assert s.correct and s.iou == pytest.approx(0.5, abs=1e-5)
    no_box = req(2, expected={"value": OPTS[1], "letter": "B", "answer_with_box": True, "evidence_box": None})
    assert one(backend, no_box) == "B"
    assert one(backend, req(3, "multi_choice")) == "A, C"


# ----------------------------------------------------------------- stage decay
def test_stage_decay_is_right_at_the_planted_rate_of_each_stage():
    accuracies = [0.95, 0.7, 0.5, 0.2]
    backend = StageDecayBackend(accuracies=accuracies, seed=9)
    n = 2000
    for stage, acc in enumerate(accuracies, start=1):
        requests = [req(10_000 * stage + k, stage=stage) for k in range(n)]
        texts = [r.text for r in backend.generate(requests)]
        assert set(texts) <= set("ABCD")
        right = sum(score(r, t).correct for r, t in zip(requests, texts))
        assert within(right, n, acc), (stage, right / n)
    box = req(1, "box", stage=1)
    assert StageDecayBackend(accuracies=[1, 1, 1, 1]).generate([box])[0].text == "[40, 30, 90, 70]"
    assert "stage" in StageDecayBackend().generate([req(1, stage=5)])[0].error


def test_planted_models_are_deterministic_per_seed_and_key():
    requests = [req(k, ["single_choice", "multi_choice", "box"][k % 3], kind="misleading_hint",
                    params={"hinted_letter": "A" if k % 3 == 0 else ["A"]}, stage=1 + k % 4) for k in range(60)]
    for cls, kwargs in [(CueFollowerBackend, {"p": 0.5, "accuracy": 0.5}), (TextOnlyBackend, {}),
                        (StageDecayBackend, {}), (BoxShifterBackend, {"iou": 0.4})]:
        first = [r.text for r in cls(**kwargs, seed=1).generate(requests)]
        assert first == [r.text for r in cls(**kwargs, seed=1).generate(requests[::-1])][::-1], cls
        if cls is not BoxShifterBackend:      # the box shifter draws nothing
            assert first != [r.text for r in cls(**kwargs, seed=2).generate(requests)], cls


# ----------------------------------------------------------------- through execution
@pytest.mark.django_db
def test_an_oracle_run_is_right_on_every_variant_because_execution_hands_it_the_truth(eval_content, make_endpoint):
    from django.utils import timezone

    from annotation.models import Variant
    from workers.models import EvaluationRun, Prediction
    from workers.services.execution import VARIANT_FIELDS, _requests, batch_execute
    from workers.services.runs import run_create, run_finalize

    eval_content(3)
    oracle = make_endpoint("oracle", "oracle")
    run = run_create(name="oracle", endpoints=[oracle], actor=None, split="all", batch_size=200, start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
    for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    run_finalize(run_id=run.pk)
    preds = list(Prediction.objects.filter(run=run).select_related("variant"))
    assert len(preds) == run.n_variants > 0
    kinds = Counter(p.variant.kind for p in preds)
    assert {"clean", "misleading_hint", "false_premise", "wrong_visual_cue", "box_dose_response"} <= set(kinds)
    wrong = [(p.variant.kind, p.raw_output, p.parse_method) for p in preds if not p.correct]
    assert not wrong
    assert all(p.iou == 1.0 for p in preds if p.iou is not None)
    assert any(p.box for p in preds)
    # a real model's requests carry no truth; a planted one's carry the variant's record
    rows = list(Variant.objects.order_by("pk").values(*VARIANT_FIELDS)[:5])
    plain, _ = _requests(rows, oracle, False)
    planted, _ = _requests(rows, oracle, False, needs_truth=True)
    assert all(r.truth is None for r in plain)
    first = Variant.objects.select_related("item__stage").get(pk=rows[0]["pk"])
    assert planted[0].truth == {"kind": first.kind, "params": first.params, "expected": first.expected_answer,
                                "stage": first.item.stage.order, "options": [str(o) for o in first.options],
                                "item": first.item_id}
