"""The rows of a release: `data/{split}.jsonl` and `data/{split}.parquet`, one row per item variant, in
`snapshot.rows` order.

JSONL: one JSON object per line, exactly the `Row` fields (sorted keys, compact separators, UTF-8, "\\n"):
`evidence_boxes` as `[[x0, y0, x1, y1, label], ...]`, `image` the release path ("images/<sha256>.png"),
`answer` and `variant_params` as their native JSON values.

Parquet columns, in this order (the `Row` fields, with `image` widened and `image_path` added):

    id string, split string, group string, chain_id int64, step int64, stage string, stage_name string,
    category string, category_name string, answer_type string, item_id int64, item_key string,
    item_version int64, question string, prompt string, options list<string>,
    answer string            -- JSON-encoded (its type varies: a string, a list of strings, a box),
    answer_letters list<string>,
    evidence_boxes list<struct<x0 double, y0 double, x1 double, y1 double, label string>>,
    image struct<bytes binary, path string>   -- the PNG bytes and the release path: the storage of the
                                                 Hugging Face `Image` feature, so `datasets` decodes it,
    image_path string        -- the release path again, for readers that do not want the bytes,
    width int64, height int64, modality string, body_region string, source_dataset string, license string,
    variant_id int64, variant_kind string, parent_variant_id int64 (null for a clean variant),
    variant_params string    -- JSON-encoded,
    cue_letter string (null when no cue).

The schema's metadata carries `{"huggingface": {"info": {"features": {"image": {"_type": "Image"}}}}}`, so
`datasets` reads the `image` column as an `Image` feature even without a card; the other columns' features
follow from their Arrow types.

Determinism and memory: rows are written in row groups of at most `ROW_GROUP_ROWS` rows and about
`ROW_GROUP_BYTES` of distinct image bytes, with fixed writer options (zstd level 3 except the PNG bytes,
which are compressed already). The PNG bytes go to the writer as a dictionary column built per row group
(each image the group shows, once, in order of first use): Parquet stores an image shown by several
adjacent variants once per row group, and pyarrow writes that dictionary as it is instead of hashing
every row's bytes to find the repeats (3x faster on a release's images). The Arrow schema stored in the
file (`ARROW:schema`, which readers use to restore the types) is the plain `SCHEMA` above, serialised
exactly as pyarrow's own `store_schema` would (a test checks the bytes), so readers see `image.bytes`
as `binary`, never as a dictionary. Writing the same snapshot twice with the same pyarrow gives the
same bytes.
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from releases.package.files import ReleaseError
from releases.package.images import ImageSink
from releases.package.snapshot import Row, Snapshot

ROW_GROUP_ROWS = 10_000
ROW_GROUP_BYTES = 64 * 1024 * 1024
ROW_FIELDS = tuple(f.name for f in dataclasses.fields(Row))
_FIELD_SET = frozenset(ROW_FIELDS)
_IMAGE_NAME = re.compile(r"images/([0-9a-f]{64})\.png")

BOX = pa.struct([("x0", pa.float64()), ("y0", pa.float64()), ("x1", pa.float64()), ("y1", pa.float64()),
                 ("label", pa.string())])
IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
_TYPES = {
    "chain_id": pa.int64(), "step": pa.int64(), "item_id": pa.int64(), "item_version": pa.int64(),
    "width": pa.int64(), "height": pa.int64(), "variant_id": pa.int64(), "parent_variant_id": pa.int64(),
    "options": pa.list_(pa.string()), "answer_letters": pa.list_(pa.string()), "evidence_boxes": pa.list_(BOX),
    "image": IMAGE,
}
COLUMNS = tuple(c for name in ROW_FIELDS for c in ((name, "image_path") if name == "image" else (name,)))
HF_METADATA = {"huggingface": json.dumps({"info": {"features": {"image": {"_type": "Image"}}}}, sort_keys=True)}
SCHEMA = pa.schema([(c, _TYPES.get(c, pa.string())) for c in COLUMNS], metadata=HF_METADATA)
# what the writer is given: the same columns with the PNG bytes as a dictionary (see the module docstring)
WRITE_SCHEMA = pa.schema([(c, pa.struct([("bytes", pa.dictionary(pa.int32(), pa.binary())), ("path", pa.string())])
                          if c == "image" else SCHEMA.field(c).type) for c in COLUMNS])
# the file's key-value metadata, as pyarrow writes it with store_schema=True for SCHEMA
FILE_METADATA = {"ARROW:schema": base64.b64encode(SCHEMA.serialize().to_pybytes()).decode("ascii"), **HF_METADATA}
# zstd level 3 everywhere except the PNG bytes, which are compressed already (zstd would only cost time)
_CODECS = {leaf: "zstd" for leaf in [c for c in COLUMNS if c != "image"] + ["image.path"]}
WRITER_OPTIONS = dict(compression={**_CODECS, "image.bytes": "none"}, compression_level={k: 3 for k in _CODECS},
                      use_dictionary=True, write_statistics=True,
                      version="2.6", data_page_version="1.0", data_page_size=1024 * 1024,
                      dictionary_pagesize_limit=2 * ROW_GROUP_BYTES, store_schema=False)


# one encoder for every row: json.dumps with non-default options builds a new encoder per call
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ORJSON = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE


def _json(value) -> str:
    return _ENCODER.encode(value)


def _strict_json(row: Row, value) -> str:
    try:
        return _ENCODER.encode(value)
    except (ValueError, TypeError) as e:     # NaN/inf, or a value JSON cannot hold
        raise ReleaseError(f"row {row.id}: not valid JSON ({e})") from None


def _boxes(row: Row) -> list[list]:
    return [[float(b.x0), float(b.y0), float(b.x1), float(b.y1), b.label] for b in row.evidence_boxes]


def row_record(row: Row) -> dict:
    """The JSONL object of one row: the Row fields, boxes as lists."""
    record = {name: getattr(row, name) for name in ROW_FIELDS}
    record["evidence_boxes"] = _boxes(row)
    return record


_INT_LIMIT = 2 ** 53


def _same_in_orjson(value) -> bool:
    """Whether orjson writes `value` exactly as the standard library's strict encoder does: strings, booleans,
    None, integers within ±2**53, finite floats whose shortest form is not in exponent notation (0 or
    1e-4 <= |x| < 1e16: there Python's repr and orjson agree digit for digit; outside it "1e-05" vs "1e-5"),
    and lists and str-keyed dicts of those. Anything else (a NaN, a huge int, an odd key) goes through the
    standard library, which refuses what JSON cannot hold."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -_INT_LIMIT < value < _INT_LIMIT
    if kind is float:
        return value == 0.0 or 1e-4 <= abs(value) < 1e16
    if kind is list or kind is tuple:
        return all(map(_same_in_orjson, value))
    if kind is dict:
        return all(type(k) is str for k in value) and all(map(_same_in_orjson, value.values()))
    return False


def _fragment(row: Row, value):
    """`value` as orjson should take it: itself where orjson writes it as `json` would, else the standard
    library's strict encoding as a pre-encoded fragment."""
    return value if _same_in_orjson(value) else orjson.Fragment(_strict_json(row, value))


def jsonl_line(row: Row) -> bytes:
    """One JSONL line, the bytes `json.dumps(row_record(row), sort_keys=True, ensure_ascii=False,
    separators=(",", ":"), allow_nan=False) + "\\n"` would give in UTF-8, written by orjson (the row's
    strings and lists; several times the standard library's speed). The free values (the boxes, `answer`,
    `variant_params`) go in as they are where orjson writes them exactly as `json` does (`_same_in_orjson`),
    else as the standard library's strict encoding, so a NaN anywhere is refused, never written as null,
    and every float prints exactly as `json` prints it."""
    record = dict(row.__dict__) if row.__dict__.keys() == _FIELD_SET else row_record(row)
    record["evidence_boxes"] = _fragment(row, _boxes(row))
    record["answer"] = _fragment(row, row.answer)
    record["variant_params"] = _fragment(row, row.variant_params)
    try:
        return orjson.dumps(record, option=_ORJSON)
    except (orjson.JSONEncodeError, TypeError) as e:
        raise ReleaseError(f"row {row.id}: not valid JSON ({e})") from None


def _read_png(snapshot: Snapshot, path: str, sink: ImageSink | None = None) -> bytes:
    """The bytes of a release image, checked against the hash its name carries; handed to `sink` (which
    writes images/) when there is one, so the build reads each image file once."""
    image = snapshot.images.get(path)
    if image is None:
        raise ReleaseError(f"row image not in the snapshot: {path}")
    try:
        data = Path(image.source).read_bytes()
    except FileNotFoundError:
        raise ReleaseError(f"image file missing from storage: {image.source} (for {path})")
    m = _IMAGE_NAME.fullmatch(path)
    if m:
        digest = hashlib.sha256(data).hexdigest()
        if digest != m.group(1):
            raise ReleaseError(f"image file does not match its hash: {image.source} (for {path})")
        if sink is not None and image.path == path:
            sink.put(path, data, digest)
    return data


def _chunks(snapshot: Snapshot, rows: Iterable[Row],
            sink: ImageSink | None = None) -> Iterator[tuple[list[Row], dict[str, bytes]]]:
    """Rows in groups bounded in count and in distinct image bytes, each with the PNG bytes it needs."""
    chunk: list[Row] = []
    cache: dict[str, bytes] = {}
    size = 0
    for row in rows:
        data = cache.get(row.image)
        new = data is None
        if new:
            data = _read_png(snapshot, row.image, sink)
        if chunk and (len(chunk) >= ROW_GROUP_ROWS or (new and size + len(data) > ROW_GROUP_BYTES)):
            yield chunk, cache
            chunk, cache, size, new = [], {}, 0, True
        chunk.append(row)
        if new:
            cache[row.image] = data
            size += len(data)
    if chunk:
        yield chunk, cache


_PLAIN = tuple(c for c in ROW_FIELDS if c not in ("answer", "variant_params", "evidence_boxes", "image"))


def _table(rows: list[Row], pngs: dict[str, bytes], answers: list[str] | None = None,
           params: list[str] | None = None) -> pa.Table:
    """One row group, built column by column: the Row fields as Arrow columns, the image as a dictionary of
    `pngs` (in first-use order); `answers` / `params`: the rows' JSON-encoded answers and variant params."""
    arrays = {name: pa.array([getattr(r, name) for r in rows], SCHEMA.field(name).type) for name in _PLAIN}
    arrays["answer"] = pa.array(answers or [_strict_json(r, r.answer) for r in rows], pa.string())
    arrays["variant_params"] = pa.array(params or [_strict_json(r, r.variant_params) for r in rows], pa.string())
    arrays["evidence_boxes"] = pa.array(
        [[{"x0": float(b.x0), "y0": float(b.y0), "x1": float(b.x1), "y1": float(b.y1), "label": b.label}
          for b in r.evidence_boxes] for r in rows], SCHEMA.field("evidence_boxes").type)
    codes: dict[str, int] = {}
    image_codes = [codes.setdefault(r.image, len(codes)) for r in rows]
    paths = pa.array([r.image for r in rows], pa.string())
    arrays["image"] = pa.StructArray.from_arrays(
        [pa.DictionaryArray.from_arrays(pa.array(image_codes, pa.int32()),
                                        pa.array([pngs[p] for p in codes], pa.binary())), paths],
        fields=list(WRITE_SCHEMA.field("image").type))
    arrays["image_path"] = paths
    return pa.Table.from_arrays([arrays[c] for c in COLUMNS], schema=WRITE_SCHEMA)


def write_parquet_split(snapshot: Snapshot, split: str, out: Path, *, progress: Callable[[int], None] | None = None,
                        sink: ImageSink | None = None) -> int:
    """Write data/{split}.parquet; return the number of rows. With `sink`, each image read is written to
    images/ as well."""
    data = Path(out) / "data"
    data.mkdir(parents=True, exist_ok=True)
    done = 0
    with pq.ParquetWriter(data / f"{split}.parquet", WRITE_SCHEMA, **WRITER_OPTIONS) as writer:
        for chunk, pngs in _chunks(snapshot, snapshot.rows_in(split), sink):
            writer.write_table(_table(chunk, pngs), row_group_size=len(chunk))
            done += len(chunk)
            if progress:
                progress(done)
        writer.add_key_value_metadata(FILE_METADATA)
    return done


def jsonl_passing(snapshot: Snapshot, out: Path) -> Iterator[Row]:
    """Every row of the snapshot, in order, each after its line is written to data/{split}.jsonl: the JSONL
    writer as a pass-through, so another writer that reads every row (the VLMEvalKit TSV) writes both files
    in one pass over the spooled rows. The files are complete once the iterator is exhausted."""
    data = Path(out) / "data"
    data.mkdir(parents=True, exist_ok=True)
    for split in snapshot.splits:
        with open(data / f"{split}.jsonl", "wb") as f:
            lines: list[bytes] = []
            for row in snapshot.rows_in(split):
                lines.append(jsonl_line(row))
                if len(lines) >= 5000:
                    f.write(b"".join(lines))
                    lines.clear()
                yield row
            f.write(b"".join(lines))


def write_parquet(snapshot: Snapshot, out: Path, *, progress: Callable[[str, int, int], None] | None = None,
                  sink: ImageSink | None = None) -> None:
    """Every split's Parquet. `progress("data", rows done, rows)`. `sink`: see `write_parquet_split`."""
    total = len(snapshot.rows)
    before = 0
    for split in snapshot.splits:
        before += write_parquet_split(snapshot, split, out, sink=sink,
                                      progress=(lambda d, b=before: progress("data", b + d, total))
                                      if progress else None)


def write_jsonl(snapshot: Snapshot, out: Path) -> None:
    """Every split's JSONL (a build writes it with the VLMEvalKit TSV, in one pass: releases.package.side)."""
    for _ in jsonl_passing(snapshot, out):
        pass


def write_data(snapshot: Snapshot, out: Path, *, progress: Callable[[str, int, int], None] | None = None) -> None:
    """Both data formats of every split: Parquet, then JSONL (a build runs the two as separate writers)."""
    write_parquet(snapshot, out, progress=progress)
    write_jsonl(snapshot, out)
