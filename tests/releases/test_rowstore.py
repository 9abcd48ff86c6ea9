"""RowStore: a snapshot's rows spooled to disk, read back a chunk at a time; a build from it is the same
release as a build from the list."""
from __future__ import annotations

import dataclasses
import pickle
import tracemalloc

import pytest

from releases.package.build import build_release
from releases.package.snapshot import RowStore, sort_key
from tests.releases.factories import make_snapshot

KEY = bytes(range(32))


@pytest.fixture
def snapshot(tmp_path):
    return make_snapshot(tmp_path / "src")


def test_the_store_gives_back_the_rows_in_order_split_by_split(snapshot, tmp_path):
    store = RowStore.create(iter(snapshot.rows), tmp_path / "rows.pickle", chunk_rows=7)
    assert list(store) == snapshot.rows and len(store) == len(snapshot.rows)
    for split in ("train", "val", "test"):
        assert list(store.in_split(split)) == [r for r in snapshot.rows if r.split == split]
        assert store.count(split) == sum(r.split == split for r in snapshot.rows)
    assert all(len(chunks) >= 1 for chunks in store.chunks.values())
    again = pickle.loads(pickle.dumps(store))          # what a worker or the bench hands on: a path and an index
    assert list(again) == snapshot.rows


def test_rows_out_of_order_are_refused(snapshot, tmp_path):
    rows = list(reversed(snapshot.rows))
    with pytest.raises(ValueError, match="out of order"):
        RowStore.create(rows, tmp_path / "rows.pickle")
    with pytest.raises(ValueError, match="unknown split"):
        RowStore.create([dataclasses.replace(snapshot.rows[0], split="holdout")], tmp_path / "rows2.pickle")


def test_a_build_from_the_store_is_byte_identical_to_one_from_the_list(snapshot, tmp_path):
    store = RowStore.create(snapshot.rows, tmp_path / "rows.pickle", chunk_rows=5)
    spooled = dataclasses.replace(snapshot, rows=store)
    assert spooled.splits == snapshot.splits and spooled.count_in("test") == snapshot.count_in("test")
    a = build_release(snapshot, tmp_path / "a" / "med-r2-1.0.0", signing_key=KEY)
    b = build_release(spooled, tmp_path / "b" / "med-r2-1.0.0", signing_key=KEY)
    assert a.digest == b.digest
    assert a.archive.read_bytes() == b.archive.read_bytes()


def test_iterating_the_store_holds_one_chunk(snapshot, tmp_path):
    rows = [dataclasses.replace(snapshot.rows[0], id=f"r{n:06d}", variant_id=n, prompt="x" * 500)
            for n in range(20_000)]
    rows.sort(key=sort_key)
    store = RowStore.create(rows, tmp_path / "rows.pickle", chunk_rows=500)
    del rows
    tracemalloc.start()
    try:
        n = sum(1 for _ in store)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == 20_000
    assert peak < 5 * 1024 * 1024, f"{peak / 2**20:.1f} MiB to iterate 20,000 rows"


def test_the_store_counts_its_rows_while_spooling_as_one_pass_would(snapshot, tmp_path):
    from releases.package.summary import summarise

    store = RowStore.create(snapshot.rows, tmp_path / "rows.pickle", chunk_rows=4)
    assert dataclasses.replace(snapshot, rows=store).summary is store.summary
    assert store.summary == summarise(snapshot.rows)
    assert store.summary.rows == len(snapshot.rows) and store.summary.rotation_groups > 0


def test_the_clean_variants_are_read_on_their_own(snapshot, tmp_path):
    store = RowStore.create(snapshot.rows, tmp_path / "rows.pickle", chunk_rows=3)
    spooled = dataclasses.replace(snapshot, rows=store)
    for split in ("train", "val", "test"):
        expected = [r for r in snapshot.rows if r.split == split and r.variant_kind == "clean"]
        assert expected and list(spooled.clean_rows_in(split)) == expected == snapshot.clean_rows_in(split)
    assert sum(n for chunks in store.clean.values() for _, _, n in chunks) < len(snapshot.rows)
