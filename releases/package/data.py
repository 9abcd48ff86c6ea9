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

import pyarrow as pa
import pyarrow.parquet as pq

from releases.package.files import ReleaseError
from releases.package.snapshot import Row, Snapshot

ROW_GROUP_ROWS = 10_000
ROW_GROUP_BYTES = 64 * 1024 * 1024
ROW_FIELDS = tuple(f.name for f in dataclasses.fields(Row))
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


def _json(value) -> str:
    return _ENCODER.encode(value)


def row_record(row: Row) -> dict:
    """The JSONL object of one row: the Row fields, boxes as lists."""
    record = {name: getattr(row, name) for name in ROW_FIELDS}
    record["evidence_boxes"] = [[float(b.x0), float(b.y0), float(b.x1), float(b.y1), b.label]
                                for b in row.evidence_boxes]
    return record


def jsonl_line(row: Row) -> str:
    try:
        return _json(row_record(row)) + "\n"
    except ValueError as e:     # NaN/inf
        raise ReleaseError(f"row {row.id}: not valid JSON ({e})")


def _read_png(snapshot: Snapshot, path: str) -> bytes:
    """The bytes of a release image, checked against the hash its name carries."""
    image = snapshot.images.get(path)
    if image is None:
        raise ReleaseError(f"row image not in the snapshot: {path}")
    try:
        data = Path(image.source).read_bytes()
    except FileNotFoundError:
        raise ReleaseError(f"image file missing from storage: {image.source} (for {path})")
    m = _IMAGE_NAME.fullmatch(path)
    if m and hashlib.sha256(data).hexdigest() != m.group(1):
        raise ReleaseError(f"image file does not match its hash: {image.source} (for {path})")
    return data


def _chunks(snapshot: Snapshot, rows: Iterable[Row]) -> Iterator[tuple[list[Row], dict[str, bytes]]]:
    """Rows in groups bounded in count and in distinct image bytes, each with the PNG bytes it needs."""
    chunk: list[Row] = []
    cache: dict[str, bytes] = {}
    size = 0
    for row in rows:
        data = cache.get(row.image)
        new = data is None
        if new:
            data = _read_png(snapshot, row.image)
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


def _table(rows: list[Row], pngs: dict[str, bytes]) -> pa.Table:
    """One row group, built column by column: the Row fields as Arrow columns, the image as a dictionary of
    `pngs` (in first-use order)."""
    arrays = {name: pa.array([getattr(r, name) for r in rows], SCHEMA.field(name).type) for name in _PLAIN}
    arrays["answer"] = pa.array([_json(r.answer) for r in rows], pa.string())
    arrays["variant_params"] = pa.array([_json(r.variant_params) for r in rows], pa.string())
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


def write_split(snapshot: Snapshot, split: str, out: Path, *, progress: Callable[[int], None] | None = None) -> int:
    """Write data/{split}.jsonl and data/{split}.parquet; return the number of rows."""
    rows = snapshot.rows_in(split)
    data = Path(out) / "data"
    data.mkdir(parents=True, exist_ok=True)
    done = 0
    with open(data / f"{split}.jsonl", "w", encoding="utf-8", newline="\n") as jf, \
            pq.ParquetWriter(data / f"{split}.parquet", WRITE_SCHEMA, **WRITER_OPTIONS) as writer:
        for chunk, pngs in _chunks(snapshot, rows):
            jf.write("".join(jsonl_line(r) for r in chunk))
            writer.write_table(_table(chunk, pngs), row_group_size=len(chunk))
            done += len(chunk)
            if progress:
                progress(done)
        writer.add_key_value_metadata(FILE_METADATA)
    return done


def write_data(snapshot: Snapshot, out: Path, *, progress: Callable[[str, int, int], None] | None = None) -> None:
    """The data writer: every split of the snapshot, JSONL and Parquet. `progress("data", rows done, rows)`."""
    total = len(snapshot.rows)
    before = 0
    for split in snapshot.splits:
        n = write_split(snapshot, split, out,
                        progress=(lambda d, b=before: progress("data", b + d, total)) if progress else None)
        before += n
