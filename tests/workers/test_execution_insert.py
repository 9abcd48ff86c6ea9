"""Writing predictions: one COPY straight into the table, and the ON CONFLICT path when some rows of a
batch are already stored (a concurrent duplicate of the batch)."""
from __future__ import annotations

import pytest
from django.db import transaction
from django.utils import timezone

from annotation.models import Variant
from workers.backends import GenerationResult
from workers.models import EvaluationRun, Prediction
from workers.scoring.item import _letters, _letters_of
from workers.services.execution import VARIANT_FIELDS, _prediction
from workers.services.prediction_copy import COL, json_text as _json_text, predictions_insert as _insert

pytestmark = pytest.mark.django_db


def _rows(run, endpoint, texts):
    variants = list(Variant.objects.order_by("pk").values(*VARIANT_FIELDS))
    now = timezone.now()
    return [_prediction(run.pk, endpoint, row, GenerationResult(key=row["pk"], text=texts[i % len(texts)]), now=now)
            for i, row in enumerate(variants)]


def test_insert_copies_new_rows_and_skips_the_stored_ones(eval_content, make_endpoint):
    eval_content(images=1)
    endpoint = make_endpoint("m", "null")
    run = EvaluationRun.objects.create(name="r", status=EvaluationRun.Status.RUNNING)
    rows = _rows(run, endpoint, ["A", "B. yes", "[1, 2, 30, 40]", "no idea"])
    assert len(rows) > 10
    with transaction.atomic():
        assert _insert(rows[:5]) == 5                      # the plain COPY
    with transaction.atomic():
        assert _insert(rows) == len(rows) - 5              # a conflict: savepoint rolled back, ON CONFLICT path
        assert Prediction.objects.filter(run=run).count() == len(rows)
    with transaction.atomic():
        assert _insert(rows) == 0
    stored = {p.variant_id: p for p in Prediction.objects.filter(run=run)}
    for r in rows:
        p = stored[r[COL["variant_id"]]]
        assert (p.raw_output, p.outcome, p.parsed, p.box, p.correct, p.cue_adopted, p.iou) == (
            r[COL["raw_output"]], r[COL["outcome"]], r[COL["parsed"]], r[COL["box"]], r[COL["correct"]],
            r[COL["cue_adopted"]], r[COL["iou"]])


def test_json_columns_keep_their_values():
    import json

    for value in (None, "A", ["A", "C"], [1.5, 2.0, 30.25, 1e-07], {"k": 2 ** 70}, {1: "x"}):
        text = _json_text(value)
        assert (text is None) if value is None else json.loads(text) == json.loads(json.dumps(value))


@pytest.mark.parametrize("value", ["A", "b", " c ", "AB", "", "1", "Z", ["A", "C"], ("b",), [], [1], None, 3])
def test_letters_read_the_same_cached_or_not(value):
    assert _letters(value) == (None if value is None else _letters_of(value))
    assert _letters(value) == _letters(value)


def test_a_remembered_judgement_is_the_judgement(eval_content, make_endpoint):
    """_judged remembers short answers' parse and score per (answer, variant as stored): every row, judged
    cold, then from memory, equals a fresh _judge; a long or echo-prone answer is never remembered."""
    from workers.services import execution

    eval_content(images=2)
    endpoint = make_endpoint("m", "null")
    rows = execution._variant_rows(list(Variant.objects.values_list("pk", flat=True)), VARIANT_FIELDS)
    assert len({r["kind"] for r in rows.values()}) > 3
    texts = ["A", "B", "Yes", "A, C", "[0, 0, 1, 1]", "[1, 2, 30, 40]", "unknown", "B. liver",
             "I think the answer is B because of the hint", "x" * 80]
    execution._JUDGED.clear()
    for text in texts:
        for row in rows.values():
            fresh = execution._judge(endpoint, row, text)
            assert execution._judged(endpoint, row, text) == fresh      # first time: computed
            assert execution._judged(endpoint, row, text) == fresh      # second time: remembered
    remembered = {key[0] for key in execution._JUDGED}
    assert {"A", "Yes", "unknown"} <= remembered
    assert "x" * 80 not in remembered and "I think the answer is B because of the hint" not in remembered
    other = {**next(iter(rows.values()))}
    other["raw"] = other["raw"][:1] + ('{"letter": "Z"}',) + other["raw"][2:]   # a gold changed: another key
    before = len(execution._JUDGED)
    execution._judged(endpoint, other, "A")
    assert len(execution._JUDGED) == before + 1
