"""The instant-backend path of batch execution: variant rows read with a plain cursor, inputs kept per
process for the next model, the garbage collector paused, and predictions sent as COPY text formatted
once per distinct value. Each is checked against the plain way of doing the same thing."""
from __future__ import annotations

import gc
import math
import random
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import TextField
from django.db.models.functions import Cast
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Variant
from workers.models import EvaluationRun, Prediction, RunBatch
from workers.services import execution, prediction_copy
from workers.services.execution import IMAGE_FIELDS, JSON_VARIANT_FIELDS, VARIANT_FIELDS, batch_execute
from workers.services.prediction_copy import PREDICTION_COLUMNS, copy_text, predictions_insert

pytestmark = pytest.mark.django_db


def test_variant_rows_read_with_a_cursor_equal_django_values(eval_content):
    eval_content(images=2)
    ids = list(Variant.objects.order_by("pk").values_list("pk", flat=True))
    fields = VARIANT_FIELDS + IMAGE_FIELDS
    rows = execution._variant_rows(ids, fields)
    assert sorted(rows) == ids
    json_fields = [f for f in fields if f in JSON_VARIANT_FIELDS]
    expected = Variant.objects.filter(pk__in=ids).values(*fields)
    texts = {r["pk"]: r for r in Variant.objects.filter(pk__in=ids).annotate(
        **{f"t_{f}": Cast(f, TextField()) for f in json_fields}).values("pk", *(f"t_{f}" for f in json_fields))}
    for want in expected:
        got = dict(rows[want["pk"]])
        assert got.pop("raw") == tuple(texts[want["pk"]][f"t_{f}"] for f in json_fields)
        assert got == want


TRICKY = ["A", "tab\there", "line\nbreak", "cr\rreturn", "back\\slash \\N", "\\", "", "é ü 中文 🩻",
          'quote " and \\" escaped', "trailing\\"]


def _tricky_rows(run, endpoint, variants):
    """Prediction rows whose every column carries a value COPY text must escape or type exactly."""
    now = timezone.now()
    values = [("A", True), (1, False), (1.0, False), ({"k": "v\t\n\\"}, True), (["A", "C"], False), (None, True),
              (2 ** 70, True), (-0.0, False), ("B\nC", False), (True, True)]
    rows = []
    for k, v in enumerate(variants):
        parsed, correct = values[k % len(values)]
        text = TRICKY[k % len(TRICKY)]
        iou = [None, 0.0, 1.0, 0.123456789012345, 1e-300, math.nan, -0.0][k % 7]
        box = [None, [1, 2, 30, 40], [0.5, 0.25, 0.75, 1.0]][k % 3]
        rows.append((run.pk, endpoint.pk, v.pk, v.item_id, text, "answered", parsed, "letter", text[::-1], correct,
                     iou, box, [None, True, False][k % 3], 0.0 if k % 2 else 12.5, None if k % 2 else k,
                     None if k % 2 else 2 * k, "" if k % 3 else text, now - timedelta(microseconds=k)))
    return rows


def test_copy_text_writes_every_value_as_it_was(eval_content, make_endpoint):
    """The rows written from COPY text read back exactly: text with tabs, newlines, backslashes and every
    script; JSON (nested escapes, 70-bit integers, True beside 1 in one column); floats incl. -0.0 and NaN;
    NULLs; times to the microsecond."""
    eval_content(images=2)
    endpoint = make_endpoint("m", "null")
    run = EvaluationRun.objects.create(name="r", status=EvaluationRun.Status.RUNNING)
    variants = list(Variant.objects.order_by("pk")[:60])
    rows = _tricky_rows(run, endpoint, variants)
    with transaction.atomic():
        assert predictions_insert(rows) == len(rows)
    stored = {p["variant_id"]: p for p in Prediction.objects.filter(run=run).values(*PREDICTION_COLUMNS)}
    for row in rows:
        want = dict(zip(PREDICTION_COLUMNS, row))
        got = stored[want["variant_id"]]
        for column in PREDICTION_COLUMNS:
            a, b = got[column], want[column]
            if isinstance(b, float) and math.isnan(b):
                assert math.isnan(a), column
            else:
                assert a == b and type(a) is type(b), (column, a, b)
                if isinstance(b, float) and column not in prediction_copy.JSON_COLUMNS:   # jsonb keeps no -0
                    assert math.copysign(1, a) == math.copysign(1, b), column


def test_copy_text_equals_psycopg_write_row(eval_content, make_endpoint):
    """The text is what psycopg's own COPY writer stores, row for row (both into a temporary table)."""
    eval_content(images=1)
    endpoint = make_endpoint("m", "null")
    run = EvaluationRun.objects.create(name="r", status=EvaluationRun.Status.RUNNING)
    rows = _tricky_rows(run, endpoint, list(Variant.objects.order_by("pk")[:30]))
    json_at = [PREDICTION_COLUMNS.index(c) for c in prediction_copy.JSON_COLUMNS]
    table, cols = Prediction._meta.db_table, ", ".join(PREDICTION_COLUMNS)
    with transaction.atomic(), connection.cursor() as cur:
        for name in ("t_ours", "t_psycopg"):
            cur.execute(f"CREATE TEMP TABLE {name} ON COMMIT DROP AS SELECT {cols} FROM {table} WITH NO DATA")
        with cur.cursor.copy(f"COPY t_ours ({cols}) FROM STDIN") as copy:
            copy.write(copy_text(rows, json_at))
        with cur.cursor.copy(f"COPY t_psycopg ({cols}) FROM STDIN") as copy:
            for r in rows:
                r = list(r)
                for i in json_at:
                    r[i] = prediction_copy.json_text(r[i])
                copy.write_row(r)
        cur.execute(f"SELECT count(*) FROM (SELECT {cols} FROM t_ours EXCEPT ALL SELECT {cols} FROM t_psycopg) d")
        assert cur.fetchone()[0] == 0
        cur.execute("SELECT count(*) FROM t_ours")
        assert cur.fetchone()[0] == len(rows)


def test_prediction_text_equals_copy_text_on_random_rows():
    """The prediction fast path (ids joined, repeating spans formatted once) writes the very text of the plain
    one: values equal across types (True, 1, 1.0), -0.0 beside 0.0, NaN, tuples, lists and dicts, in any mix,
    the same objects repeated or equal ones made afresh."""
    rng = random.Random(0)
    now = timezone.now()
    pool = {
        4: ["A", "B", "a\tb\\c\nd", "", "\x01"], 5: ["answered", "error"],
        6: [None, "A", True, 1, 1.0, 0.0, -0.0, [1, 2], {"a": [True]}, (True,), (1,), 2 ** 70, "x\\y"],
        7: ["letter", "box"], 8: ["", "d\te"], 9: [None, True, False, 1, 0],
        10: [None, 0.0, -0.0, 1.0, 1, math.nan, math.inf, 0.5],
        11: [None, [1, 2, 3, 4], [0.5, 0.25, 0.75, 1.0], (1, 2)],
        12: [None, True, False], 13: [0.0, -0.0, 12.5, 0, 3, math.nan, True], 14: [None, 5, True], 15: [None, 7, 0],
        16: ["", "err\n"], 17: [now, now - timedelta(microseconds=3)],
    }
    json_at = [PREDICTION_COLUMNS.index(c) for c in prediction_copy.JSON_COLUMNS]
    for trial in range(120):
        rows = []
        for _ in range(200):
            row = [rng.choice([1, 2]), rng.choice([3, True]) if trial % 7 == 0 else 3, rng.randrange(10 ** 6),
                   rng.randrange(10 ** 6)]
            for column in range(4, len(PREDICTION_COLUMNS)):
                choices = pool[column][:rng.randint(1, len(pool[column]))]
                value = rng.choice(choices)
                if trial % 2 and type(value) is float:
                    value = float(repr(value))      # an equal float, another object
                row.append(value)
            rows.append(tuple(row))
        assert prediction_copy.prediction_text(rows) == copy_text(rows, json_at), trial


def test_copy_text_refuses_an_unknown_type():
    with pytest.raises(TypeError, match="no COPY text"):
        copy_text([(object(),)], [])


def _run_batches(endpoints, ids):
    run = EvaluationRun.objects.create(name="r", status=EvaluationRun.Status.RUNNING)
    return [RunBatch.objects.create(run=run, endpoint=e, index=k, variant_ids=ids, size=len(ids))
            for k, e in enumerate(endpoints)]


def _variant_reads(queries) -> int:
    return sum(Variant._meta.db_table in q["sql"] and "prompt" in q["sql"] for q in queries)


def test_the_next_model_reuses_the_inputs_and_writes_the_same_predictions(eval_content, make_endpoint):
    eval_content(images=2)
    ids = list(Variant.objects.order_by("pk").values_list("pk", flat=True))
    first, second = make_endpoint("m1", "null"), make_endpoint("m2", "null")
    execution._INPUTS.clear()
    b1, b2 = _run_batches([first, second], ids)
    with CaptureQueriesContext(connection) as q1:
        batch_execute(batch_id=b1.pk)
    with CaptureQueriesContext(connection) as q2:
        batch_execute(batch_id=b2.pk)
    assert _variant_reads(q1.captured_queries) == 1
    assert _variant_reads(q2.captured_queries) == 0          # kept from the first model's batch
    columns = ("variant_id", "raw_output", "outcome", "parsed", "correct", "box", "iou")
    mine = sorted(Prediction.objects.filter(run=b2.run, endpoint=second).values_list(*columns))
    execution._INPUTS.clear()                                    # the same batch, inputs read afresh
    (again,) = _run_batches([second], ids)
    batch_execute(batch_id=again.pk)
    assert sorted(Prediction.objects.filter(run=again.run).values_list(*columns)) == mine
    assert len(mine) == len(ids)


def test_a_batch_never_reads_the_runs_json(eval_content, make_endpoint):
    """A scored run's metrics are megabytes at the paper's scale; a batch of a resumed run must not read them."""
    eval_content(images=1)
    ids = list(Variant.objects.order_by("pk").values_list("pk", flat=True))
    (batch,) = _run_batches([make_endpoint("m", "null")], ids)
    EvaluationRun.objects.filter(pk=batch.run_id).update(metrics={"big": "x" * 100_000}, provenance={"p": 1})
    with CaptureQueriesContext(connection) as q:
        assert batch_execute(batch_id=batch.pk).status == "done"
    run_reads = [x["sql"] for x in q.captured_queries if '"workers_evaluationrun"."' in x["sql"]]
    assert run_reads and not any(f'"workers_evaluationrun"."{c}"' in sql for sql in run_reads
                                 for c in ("metrics", "provenance", "item_filters", "variant_kinds"))
    assert Prediction.objects.filter(run_id=batch.run_id).count() == len(ids)


def test_kept_inputs_expire_and_are_dropped_on_an_error(eval_content, make_endpoint, monkeypatch):
    eval_content(images=1)
    ids = list(Variant.objects.order_by("pk").values_list("pk", flat=True))
    endpoint = make_endpoint("m1", "null")
    execution._INPUTS.clear()
    batch_execute(batch_id=_run_batches([endpoint], ids)[0].pk)
    assert len(execution._INPUTS) == 1
    monkeypatch.setattr(execution, "INPUTS_TTL_S", -1.0)        # expired: read again
    with CaptureQueriesContext(connection) as q:
        batch_execute(batch_id=_run_batches([endpoint], ids)[0].pk)
    assert _variant_reads(q.captured_queries) == 1
    monkeypatch.setattr(execution, "predictions_insert", lambda rows: (_ for _ in ()).throw(RuntimeError("disk full")))
    with pytest.raises(RuntimeError, match="disk full"):
        batch_execute(batch_id=_run_batches([endpoint], ids)[0].pk)
    assert not execution._INPUTS


def test_kept_inputs_are_bounded(eval_content, make_endpoint, monkeypatch):
    eval_content(images=1)
    ids = list(Variant.objects.order_by("pk").values_list("pk", flat=True))
    endpoint = make_endpoint("m1", "null")
    monkeypatch.setattr(execution, "INPUTS_MAX", 2)
    execution._INPUTS.clear()
    for k in range(4):
        batch_execute(batch_id=_run_batches([endpoint], ids[k::4])[0].pk)
    assert [key[0] for key in execution._INPUTS] == [tuple(ids[2::4]), tuple(ids[3::4])]


def test_the_collector_is_paused_for_instant_backends_only(eval_content, make_endpoint, monkeypatch):
    eval_content(images=1)
    ids = list(Variant.objects.order_by("pk").values_list("pk", flat=True))[:5]
    seen = []
    real = execution._batch_run

    def spy(batch, backend, chunk_size):
        seen.append(gc.isenabled())
        return real(batch, backend, chunk_size)

    monkeypatch.setattr(execution, "_batch_run", spy)
    assert gc.isenabled()
    batch_execute(batch_id=_run_batches([make_endpoint("n", "null")], ids)[0].pk)
    assert seen == [False] and gc.isenabled()
    looking = execution.load_backend("null", {})
    looking.uses_image = True   # a model that reads images (its batch is not read from images here: spied)
    monkeypatch.setattr(execution, "load_backend", lambda name, params: looking)
    monkeypatch.setattr(execution, "_batch_run", lambda batch, backend, chunk_size: seen.append(gc.isenabled()))
    batch_execute(batch_id=_run_batches([make_endpoint("t", "null")], ids)[0].pk)
    assert seen == [False, True] and gc.isenabled()
