"""data/{split}.jsonl and data/{split}.parquet: contents, schema, determinism, bounded row groups."""
from __future__ import annotations

import dataclasses
import json
import math

import pyarrow.parquet as pq
import pytest

from releases.package import data as data_mod
from releases.package.data import COLUMNS, ROW_FIELDS, jsonl_line, write_data
from releases.package.files import ReleaseError
from releases.package.snapshot import Box
from tests.releases.factories import make_snapshot


@pytest.fixture
def snapshot(tmp_path):
    return make_snapshot(tmp_path / "src")


def test_jsonl_one_canonical_line_per_row(snapshot, tmp_path):
    write_data(snapshot, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out" / "data").iterdir()) == sorted(
        f"{s}.{ext}" for s in ("train", "val", "test") for ext in ("jsonl", "parquet"))
    for split in snapshot.splits:
        rows = snapshot.rows_in(split)
        raw = (tmp_path / "out" / "data" / f"{split}.jsonl").read_bytes()
        assert raw.endswith(b"\n") and b"\r" not in raw
        lines = raw.decode("utf-8").splitlines()
        assert len(lines) == len(rows)
        for line, row in zip(lines, rows):
            obj = json.loads(line)
            assert line == json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            assert set(obj) == set(ROW_FIELDS)
            assert obj["id"] == row.id and obj["image"] == row.image and obj["image"].startswith("images/")
            assert obj["evidence_boxes"] == [b.as_list() for b in row.evidence_boxes]
            assert obj["answer"] == row.answer and obj["variant_params"] == row.variant_params
            assert obj["options"] == row.options and obj["cue_letter"] == row.cue_letter


def test_parquet_columns_rows_and_values(snapshot, tmp_path):
    write_data(snapshot, tmp_path / "out")
    for split in snapshot.splits:
        rows = snapshot.rows_in(split)
        table = pq.read_table(tmp_path / "out" / "data" / f"{split}.parquet")
        assert tuple(table.column_names) == COLUMNS
        assert table.num_rows == len(rows)
        hf = json.loads(table.schema.metadata[b"huggingface"])
        assert hf == {"info": {"features": {"image": {"_type": "Image"}}}}
        for rec, row in zip(table.to_pylist(), rows):
            assert rec["id"] == row.id and rec["chain_id"] == row.chain_id and rec["step"] == row.step
            assert rec["options"] == row.options and rec["answer_letters"] == row.answer_letters
            assert json.loads(rec["answer"]) == row.answer
            assert json.loads(rec["variant_params"]) == row.variant_params
            assert rec["evidence_boxes"] == [dataclasses.asdict(b) for b in row.evidence_boxes]
            assert rec["image_path"] == row.image == rec["image"]["path"]
            assert rec["image"]["bytes"] == snapshot.images[row.image].source.read_bytes()
            assert rec["parent_variant_id"] == row.parent_variant_id and rec["cue_letter"] == row.cue_letter


def test_two_writes_are_byte_identical(snapshot, tmp_path):
    write_data(snapshot, tmp_path / "a")
    write_data(snapshot, tmp_path / "b")
    for f in sorted((tmp_path / "a" / "data").iterdir()):
        assert f.read_bytes() == (tmp_path / "b" / "data" / f.name).read_bytes(), f.name


def test_row_groups_are_bounded_in_rows_and_bytes(snapshot, tmp_path, monkeypatch):
    monkeypatch.setattr(data_mod, "ROW_GROUP_ROWS", 7)
    write_data(snapshot, tmp_path / "rows")
    for split in snapshot.splits:
        meta = pq.ParquetFile(tmp_path / "rows" / "data" / f"{split}.parquet").metadata
        n = len(snapshot.rows_in(split))
        assert meta.num_row_groups == math.ceil(n / 7)
        assert max(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) <= 7
    monkeypatch.setattr(data_mod, "ROW_GROUP_ROWS", 10_000)
    monkeypatch.setattr(data_mod, "ROW_GROUP_BYTES", 300)   # each test PNG is ~100 bytes: 3 distinct images a group
    write_data(snapshot, tmp_path / "bytes")
    file = pq.ParquetFile(tmp_path / "bytes" / "data" / "train.parquet")
    assert file.metadata.num_row_groups > 1
    for i in range(file.metadata.num_row_groups):
        shown = set(file.read_row_group(i, columns=["image_path"]).column("image_path").to_pylist())
        assert sum(snapshot.images[p].source.stat().st_size for p in shown) <= 300 or len(shown) == 1
    assert pq.read_table(tmp_path / "bytes" / "data" / "train.parquet").num_rows == len(snapshot.rows_in("train"))


def test_repeated_image_is_stored_once_per_row_group(snapshot, tmp_path):
    """Dictionary encoding: a PNG shown by the many variants of one chain does not inflate the file."""
    write_data(snapshot, tmp_path / "out")
    rows = snapshot.rows_in("test")
    raw = sum(snapshot.images[r.image].source.stat().st_size for r in rows)
    assert raw > 3000
    meta = pq.ParquetFile(tmp_path / "out" / "data" / "test.parquet").metadata
    image_bytes_col = [meta.row_group(0).column(i) for i in range(meta.row_group(0).num_columns)
                       if meta.row_group(0).column(i).path_in_schema == "image.bytes"][0]
    unique = sum(snapshot.images[p].source.stat().st_size for p in {r.image for r in rows})
    assert image_bytes_col.total_uncompressed_size < unique + raw // 2


def test_missing_image_file_is_refused(snapshot, tmp_path):
    next(iter(snapshot.images.values())).source.unlink()
    with pytest.raises(ReleaseError, match="image file missing from storage"):
        write_data(snapshot, tmp_path / "out")


def test_image_bytes_not_matching_their_name_are_refused(snapshot, tmp_path):
    image = next(iter(snapshot.images.values()))
    image.source.write_bytes(image.source.read_bytes() + b"x")
    with pytest.raises(ReleaseError, match="does not match its hash"):
        write_data(snapshot, tmp_path / "out")


def test_nan_in_a_box_is_refused(snapshot, tmp_path):
    bad = dataclasses.replace(snapshot.rows[0], evidence_boxes=[Box(float("nan"), 0.0, 1.0, 1.0, "x")])
    snap = dataclasses.replace(snapshot, rows=[bad] + snapshot.rows[1:])
    with pytest.raises(ReleaseError, match=bad.id):
        write_data(snap, tmp_path / "out")


def test_datasets_decodes_the_image_column(snapshot, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    datasets = pytest.importorskip("datasets")
    write_data(snapshot, tmp_path / "out")
    ds = datasets.load_dataset("parquet", data_files={"val": str(tmp_path / "out" / "data" / "val.parquet")},
                               cache_dir=str(tmp_path / "hf-cache"))["val"]
    assert isinstance(ds.features["image"], datasets.Image)
    assert len(ds) == len(snapshot.rows_in("val"))
    first = ds[0]
    assert first["image"].size == (64, 48)
    assert first["image_path"] == snapshot.rows_in("val")[0].image


def test_the_stored_arrow_schema_is_the_plain_one_pyarrow_would_store(snapshot, tmp_path):
    """The writer is given the PNG bytes as a dictionary column; the file must still say `binary` (and carry
    the Hugging Face features) exactly as a plain `store_schema` write of SCHEMA would."""
    import pyarrow as pa

    write_data(snapshot, tmp_path / "out")
    ours = pq.read_metadata(tmp_path / "out" / "data" / "train.parquet").metadata
    pq.write_table(pa.Table.from_pylist([], schema=data_mod.SCHEMA), tmp_path / "plain.parquet")
    plain = pq.read_metadata(tmp_path / "plain.parquet").metadata
    assert ours[b"ARROW:schema"] == plain[b"ARROW:schema"]
    assert ours[b"huggingface"] == plain[b"huggingface"]
    schema = pq.read_schema(tmp_path / "out" / "data" / "train.parquet")
    assert schema.field("image").type == pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    assert schema.equals(pq.read_schema(tmp_path / "plain.parquet"), check_metadata=True)


def test_jsonl_lines_are_the_bytes_the_standard_library_would_write(snapshot):
    """orjson writes the lines (data.jsonl_line); every value orjson would print differently (floats in exponent
    form, huge ints, non-string keys) goes through the standard library, so the bytes are json.dumps's."""
    import random

    encoder = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    rng = random.Random(0)
    texts = ['a"b', "back\\slash", "new\nline\ttab\r\b\f", "ctl\x00\x01\x1f\x7f", "uni é 中文 😀", "\u2028", ""]
    floats = [0.0, -0.0, 1e-7, 9.99e-5, 1e-4, 0.5, 1e15, 1e16, 1e300, 12.25, 1 / 3, 2.0 ** 53]
    ints = [0, -1, 2 ** 53 - 1, 2 ** 53, 2 ** 64, -2 ** 63, 10 ** 30]
    for row in snapshot.rows[:20]:
        for _ in range(40):
            text = rng.choice(texts)
            changed = dataclasses.replace(
                row, question=text, evidence_boxes=[Box(rng.choice(floats), rng.choice(floats), 3.0, 4.5, text)],
                variant_params=rng.choice([{}, {"rotation": rng.choice(ints)}, {"z": text, "a": [rng.choice(floats)]},
                                           {"target_iou": rng.choice(floats)}, {1: "an int key"}]),
                answer=rng.choice([text, [text, "x"], {"value": text, "letter": "A"}, [rng.choice(floats)] * 4,
                                   rng.choice(ints), True]))
            record = {name: getattr(changed, name) for name in ROW_FIELDS}
            record["evidence_boxes"] = [[float(b.x0), float(b.y0), float(b.x1), float(b.y1), b.label]
                                        for b in changed.evidence_boxes]
            assert jsonl_line(changed) == (encoder.encode(record) + "\n").encode("utf-8")


@pytest.mark.parametrize("field", ["evidence_boxes", "answer", "variant_params"])
def test_nan_anywhere_in_a_row_is_refused_not_written_as_null(snapshot, field):
    value = {"evidence_boxes": [Box(float("inf"), 0.0, 1.0, 1.0, "x")], "answer": [float("nan")] * 4,
             "variant_params": {"target_iou": float("nan")}}[field]
    row = dataclasses.replace(snapshot.rows[0], **{field: value})
    with pytest.raises(ReleaseError, match=f"row {row.id}: not valid JSON"):
        jsonl_line(row)
