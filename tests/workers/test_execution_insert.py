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
from workers.services.execution import COL, VARIANT_FIELDS, _insert, _json_text, _prediction

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
