"""Variant and chain writes by COPY (PostgreSQL, the test database) against the bulk_create path (the
demo's SQLite): the same rows, the same content hashes, parents, audit events, idempotency."""
from __future__ import annotations

import json
import math
import random

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotation.chains.types import VariantSpec
from annotation.models import Chain, QAItem, Variant
from annotation.services import chains as chains_service, variants as variants_service
from annotation.services.bulkwrite import copy_escape, copy_escape_json, encode_json, encode_json_bytes, reserve_ids
from annotation.services.chains import chains_generate
from annotation.services.variants import _encoded, _variant_hash, variants_generate
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db

VARIANT_VALUES = ("item_id", "kind", "params", "seed", "prompt", "options", "expected_answer", "image_recipe",
                  "content_hash", "parent__kind")


def _stored_variants() -> list[tuple]:
    rows = Variant.objects.order_by("item_id", "id").values_list(*VARIANT_VALUES)
    return [tuple(json.dumps(v, sort_keys=True) for v in r) for r in rows]


def _items(images, seed=0):
    chains_generate(image_ids=[i.pk for i in images], actor=None, seed=seed)
    return list(QAItem.objects.filter(is_current=True).order_by("pk").values_list("pk", flat=True))


def test_copy_supported_on_the_test_database():
    assert connection.vendor == "postgresql"      # else the tests below would test bulk_create twice


@pytest.mark.parametrize("value", [
    {"b": 1, "a": [0.5, 1e-3, 2.5e-7, 1e-05, 1.5e16, -0.0, 123456.789]}, "caf\u00e9 \u2192 \x7f \x01\n\t\"\\",
    {"organ": "left kidney", "box": [10, 20.25, 30, 40]}, [2 ** 70, -(2 ** 63)], {1: "int key"}, None, True,
    ("tuple", 1), {"nested": {"z": None, "y": [{"x": 0.0001}, {"w": 0.00012}]}},
    "a well-defined 0.0000 e-5 mass", "", "line\r\nbreak \u2028 \ud83e\udec1", 7, -(2 ** 70), 0, False,
])
def test_encode_json_is_the_standard_librarys_text(value):
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    assert encode_json(value) == text and encode_json_bytes(value) == text.encode()
    # JSON text never holds a raw tab, newline or carriage return: doubling backslashes is its COPY escape
    assert copy_escape_json(encode_json_bytes(value)) == copy_escape(text).encode()


@pytest.mark.parametrize("n,size", [(9207, 1000), (1000, 1000), (1001, 1000), (2500, 1000), (40, 4), (7, 3),
                                    (5000, 500), (300, 256), (600, 256), (1200, 255), (0, 1000), (1, 1000)])
def test_batches_ramp_up_and_down_and_cover_every_item_once_in_order(n, size):
    items = list(range(100, 100 + n))
    sizes = [len(b) for b in variants_service._batches(items, size)]
    assert [i for b in variants_service._batches(items, size) for i in b] == items
    assert all(0 < s <= size for s in sizes)
    if size < 256 or n <= size:                      # small batches, or one: plain chunks
        assert sizes == [len(b) for b in chains_service.chunked(items, size)]
    else:                                            # the first batch is 1/8, the last at most about 1/4
        assert sizes[0] == size // 8 and sizes[-1] <= size // 4 + 1


def test_encode_json_agrees_on_random_floats():
    rnd = random.Random(3)
    for _ in range(20000):
        x = rnd.uniform(-1, 1) * 10 ** rnd.randint(-12, 20)
        assert encode_json([x, {"v": x}]) == json.dumps([x, {"v": x}], sort_keys=True, separators=(",", ":"))
    assert encode_json(math.pi) == json.dumps(math.pi)


def test_encoded_columns_and_hash_match_the_reference_hash():
    spec = VariantSpec(kind="wrong_visual_cue", params={"label": "n\u00e9vus", "iou": 1e-05, "box": [1, 2.5, 3, 4]},
                       seed=7, prompt="Is there a mass?\nA. yes\nB. no", options=["yes", "no"],
                       expected_answer={"value": "no", "letter": "B"},
                       image_recipe={"base": {"image_id": 3}, "draw": [{"box": [1, 2, 3, 4], "label": None}]},
                       parent_kind="clean")
    params, options, expected, recipe, digest = _encoded(spec)
    assert digest == _variant_hash(spec)
    assert (json.loads(params), json.loads(options), json.loads(expected), json.loads(recipe)) == (
        spec.params, spec.options, spec.expected_answer, spec.image_recipe)
    clean = VariantSpec(kind="clean", params={}, seed=0, prompt="q", options=[], expected_answer={"value": "x"},
                        image_recipe=None, parent_kind=None)
    assert _encoded(clean)[3] is None and _encoded(clean)[4] == _variant_hash(clean)


def test_copy_writes_what_bulk_create_writes(phantom_images, monkeypatch):
    """The same items through both write paths: identical rows, hashes and parent links."""
    ids = _items(phantom_images(3))
    summary = variants_generate(items=ids, actor=None, seed=0, batch_size=4)
    copied = _stored_variants()
    assert summary.variants == len(copied) > 50
    for v in Variant.objects.select_related("parent"):
        assert (v.parent is None) == (v.kind == "clean")
        assert v.parent is None or (v.parent.item_id == v.item_id and v.parent.kind == "clean")
    sample = Variant.objects.order_by("?")[:40]
    assert all(v.content_hash == _variant_hash(v) for v in sample)   # VariantSpec and Variant share the fields
    _delete_variants()
    monkeypatch.setattr(variants_service, "copy_supported", lambda: False)
    again = variants_generate(items=ids, actor=None, seed=0, batch_size=4)
    assert again.variants == summary.variants and _stored_variants() == copied


def _delete_variants():
    Variant.objects.filter(parent__isnull=False).delete()
    Variant.objects.all().delete()


def test_batches_and_pipelining_do_not_change_the_output(phantom_images):
    """Generation runs one batch ahead in a helper thread; the premise balance sees items in order, so
    one batch or many give the same variants. Inside a transaction (this test's) no process is forked."""
    ids = _items(phantom_images(4))
    variants_generate(items=ids, actor=None, seed=0, batch_size=1000)
    whole = _stored_variants()
    _delete_variants()
    variants_generate(items=ids, actor=None, seed=0, batch_size=3)
    assert _stored_variants() == whole
    with pytest.raises(ValueError, match="inside a transaction"):
        variants_generate(items=ids, actor=None, seed=0, batch_size=3, processes=True)


@pytest.mark.django_db(transaction=True)
def test_a_generation_process_writes_what_a_thread_writes(phantom_images):
    """The forked child reads and generates batches in order, up to AHEAD ahead: the same rows as one
    batch in a thread; the parent's connection still works afterwards."""
    ids = _items(phantom_images(4))
    variants_generate(items=ids, actor=None, seed=0, batch_size=1000, processes=False)
    whole = _stored_variants()
    events = AuditEvent.objects.filter(action="annotation.variant.generate_batch")
    for processes in (True, None):          # None: more than one batch, autocommit, PostgreSQL -> a process
        _delete_variants()
        before = events.count()
        summary = variants_generate(items=[*ids, ids[0]], actor=None, seed=0, batch_size=2, processes=processes)
        assert summary.items == len(ids) and summary.variants == len(whole)
        assert _stored_variants() == whole, processes
        assert events.count() - before == (len(ids) + 1) // 2       # one audit event per batch of 2
    again = variants_generate(items=ids, actor=None, seed=0, batch_size=2, processes=True)
    assert again.skipped_existing == len(ids) and again.variants == 0


@pytest.mark.django_db(transaction=True)
def test_a_failure_in_the_generation_process_is_raised_and_a_rerun_resumes(phantom_images, monkeypatch):
    """The child's exception reaches the caller; the batches written before it stay, and a rerun
    generates the rest and nothing twice."""
    ids = _items(phantom_images(3))
    variants_generate(items=ids, actor=None, seed=0, batch_size=1000, processes=False)
    whole = _stored_variants()
    _delete_variants()
    real = variants_service.generate_variants

    def failing(item, **kwargs):
        if item.item_id == ids[7]:
            raise ValueError("a broken rule")
        return real(item, **kwargs)

    monkeypatch.setattr(variants_service, "generate_variants", failing)   # inherited by the forked child
    with pytest.raises(ValueError, match="a broken rule"):
        variants_generate(items=ids, actor=None, seed=0, batch_size=3, processes=True)
    assert set(Variant.objects.values_list("item_id", flat=True)) == set(ids[:6])
    monkeypatch.setattr(variants_service, "generate_variants", real)
    again = variants_generate(items=ids, actor=None, seed=0, batch_size=3, processes=True)
    assert again.skipped_existing == 6 and _stored_variants() == whole


def test_resume_skips_done_items_and_each_batch_is_audited(phantom_images):
    ids = _items(phantom_images(2))
    first = variants_generate(items=ids[:3], actor=None, seed=0, batch_size=2)
    events = list(AuditEvent.objects.filter(action="annotation.variant.generate_batch").order_by("seq"))
    assert len(events) == 2
    for event in events:
        clean = Variant.objects.get(pk=int(event.object_id))
        assert clean.kind == "clean" and clean.item_id == event.after["item_ids"][0]
    again = variants_generate(items=[*ids, ids[0], ids[1]], actor=None, seed=0, batch_size=2)   # repeats count once
    assert again.items == len(ids) and again.skipped_existing == 3
    assert first.variants + again.variants == Variant.objects.count()
    assert variants_generate(items=ids, actor=None, seed=0).variants == 0


def test_a_duplicate_row_fails_the_whole_copy(phantom_images):
    """The unique (item, kind, content hash) constraint holds under COPY: the batch raises Django's
    IntegrityError and writes nothing."""
    ids = _items(phantom_images(1))[:1]
    variants_generate(items=ids, actor=None, seed=0)
    before = Variant.objects.count()
    spec = VariantSpec(kind="clean", params={}, seed=0, prompt="p", options=[], expected_answer={"value": 1},
                       image_recipe=None, parent_kind=None)
    with pytest.raises(IntegrityError), transaction.atomic():
        tail = variants_service._copy_tail(b"%d" % ids[0], spec, timezone.now().isoformat().encode())
        variants_service._write_variants([(ids[0], (0, 1), [tail, tail])], seed=0, actor=None)
    assert Variant.objects.count() == before


def test_reserved_ids_are_fresh_and_ordinary_inserts_follow_them(phantom_images):
    ids = _items(phantom_images(1))
    reserved = reserve_ids(Chain, 5)
    assert reserved == sorted(reserved) and len(set(reserved)) == 5
    assert Chain.objects.order_by("-pk").first().pk < reserved[0]
    variants_generate(items=ids, actor=None, seed=0)
    assert reserve_ids(Variant, 1)[0] > Variant.objects.order_by("-pk").first().pk


def test_copy_column_lists_cover_every_column():
    """A new column would otherwise be left to its database default (or fail as NULL)."""
    for model, columns in ((Variant, variants_service.VARIANT_COLUMNS), (Chain, chains_service.CHAIN_COLUMNS),
                           (QAItem, chains_service.ITEM_COLUMNS)):
        assert sorted(columns) == sorted(f.column for f in model._meta.concrete_fields), model
    through = QAItem.evidence_boxes.through
    assert sorted(chains_service.EVIDENCE_COLUMNS) == sorted(
        f.column for f in through._meta.concrete_fields if not f.primary_key)


def _stored_chains() -> list[tuple]:
    rows = []
    for it in QAItem.objects.select_related("chain").prefetch_related("evidence_boxes").order_by("chain__image_id",
                                                                                                  "step"):
        rows.append((it.chain.image_id, it.chain.seed, it.step, it.stage_id, it.category_id, it.question,
                     json.dumps(it.options), json.dumps(it.gold_answer), it.status, it.content_hash, it.version,
                     it.is_current, it.previous_id, it.change_reason, it.image_necessary,
                     sorted(b.pk for b in it.evidence_boxes.all())))
    return rows


def test_chains_by_copy_equal_chains_by_bulk_create(phantom_images, monkeypatch):
    images = phantom_images(3)
    summary = chains_generate(image_ids=[i.pk for i in images], actor=None, seed=0, batch_size=2)
    copied = _stored_chains()
    keys = list(QAItem.objects.values_list("item_key", flat=True))
    assert summary.items == len(copied) > 5 and len(set(keys)) == len(keys)
    event = AuditEvent.objects.filter(action="annotation.chain.generate_batch").order_by("seq").first()
    assert Chain.objects.get(pk=int(event.object_id)).image_id == event.after["image_ids"][0]
    QAItem.evidence_boxes.through.objects.all().delete()
    QAItem.objects.all().delete()
    Chain.objects.all().delete()
    monkeypatch.setattr(chains_service, "copy_supported", lambda: False)
    again = chains_generate(image_ids=[i.pk for i in images], actor=None, seed=0, batch_size=2)
    assert again.items == summary.items and _stored_chains() == copied


def test_shared_options_are_reused_only_where_they_are_the_same_json():
    """An item's options are encoded once for the variants that show them unchanged; options that are not
    all strings are never shared (1 == 1.0 == True as list items, not as JSON)."""
    assert variants_service._shared_options([1, "a"]) is None and variants_service._shared_options(None) is None
    shared = variants_service._shared_options(["cyst", "mass \\\\ x"])
    for options in (["cyst", "mass \\\\ x"], ["mass \\\\ x", "cyst"], [1.0, True], []):
        spec = VariantSpec(kind="option_permutation", params={"rotation": 1}, seed=3, prompt="q\tA. cyst",
                           options=options, expected_answer={"value": "cyst"}, image_recipe=None, parent_kind="clean")
        assert _encoded(spec, shared) == _encoded(spec)
        assert _encoded(spec)[4] == _variant_hash(spec)
