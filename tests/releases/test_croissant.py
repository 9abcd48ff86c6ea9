"""croissant.json: Croissant 1.0 that mlcroissant validates (no errors, no warnings) and reads records from."""
from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from releases.package.croissant import CONFORMS_TO, CONTEXT, FIELDS, write_croissant
from releases.package.snapshot import Box
from tests.releases.test_card import build_folder

RAI = ("rai:dataCollection", "rai:dataCollectionType", "rai:dataPreprocessingProtocol", "rai:dataAnnotationProtocol",
       "rai:dataAnnotationPlatform", "rai:dataAnnotationAnalysis", "rai:annotatorDemographics", "rai:dataBiases",
       "rai:dataLimitations", "rai:dataUseCases", "rai:personalSensitiveInformation", "rai:dataSocialImpact",
       "rai:dataReleaseMaintenancePlan")


def _two_boxes(snapshot):
    """Give one test row two evidence boxes, so repeated sub-fields are exercised."""
    rows = list(snapshot.rows)
    i = next(i for i, r in enumerate(rows) if r.split == "test" and r.evidence_boxes)
    rows[i] = dataclasses.replace(rows[i], evidence_boxes=[Box(1.0, 2.0, 3.0, 4.0, "a"), Box(5.5, 6, 7, 8, "b|c")])
    return dataclasses.replace(snapshot, rows=rows)


@pytest.fixture
def release(tmp_path):
    snapshot, out = build_folder(tmp_path, edit=_two_boxes)
    write_croissant(snapshot, out)
    return snapshot, out


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def test_mlcroissant_validates_without_issues(release):
    import mlcroissant as mlc

    snapshot, out = release
    ds = mlc.Dataset(jsonld=str(out / "croissant.json"))
    issues = ds.metadata.ctx.issues
    assert not issues.errors and not issues.warnings, issues.report()
    m = ds.metadata
    assert m.name == snapshot.name and m.version == snapshot.version and m.url == snapshot.homepage
    assert m.date_published.date().isoformat() == snapshot.created
    assert m.license == ["https://spdx.org/licenses/CC-BY-4.0.html"]
    assert snapshot.name in m.cite_as and snapshot.version in m.cite_as and snapshot.homepage in m.cite_as
    assert m.data_collection and "DICOM PS3.15 Annex E Basic" in " ".join(m.data_preprocessing_protocol)
    assert "Med-R2 synthetic phantoms (CC0-1.0)" in m.data_collection
    assert m.data_annotation_protocol and m.data_biases and m.data_limitations and m.data_use_cases
    assert m.personal_sensitive_information and m.annotator_demographics
    assert "kappa" in " ".join(m.data_annotation_analysis)
    assert "blind_accuracy" in " ".join(m.data_biases)
    assert any("not a diagnostic device" in u for u in m.data_use_cases)


def test_json_shape(release):
    snapshot, out = release
    doc = json.loads((out / "croissant.json").read_text(encoding="utf-8"))
    assert doc["conformsTo"] == CONFORMS_TO == "http://mlcommons.org/croissant/1.0"
    assert doc["@context"] == CONTEXT and doc["@type"] == "sc:Dataset"
    assert doc["datePublished"] == snapshot.created and doc["version"] == snapshot.version
    for key in RAI:
        assert doc[key], key
    files = {d["@id"]: d for d in doc["distribution"]}
    for split in ("train", "val", "test"):
        for ext, fmt in (("parquet", "application/x-parquet"), ("jsonl", "application/jsonlines")):
            rel = f"data/{split}.{ext}"
            data = (out / rel).read_bytes()
            assert files[rel]["@type"] == "cr:FileObject" and files[rel]["encodingFormat"] == fmt
            assert files[rel]["sha256"] == hashlib.sha256(data).hexdigest()
            assert files[rel]["contentSize"] == f"{len(data)} B"
    assert files["image-files"] == {**files["image-files"], "@type": "cr:FileSet", "includes": "images/*.png",
                                    "encodingFormat": "image/png"}
    assert [r["@id"] for r in doc["recordSet"]] == ["train", "val", "test", "images"]
    test = doc["recordSet"][2]
    columns = [f["source"]["extract"]["column"] for f in test["field"] if "source" in f]
    for column in ("id", "split", "stage", "category", "question", "prompt", "options", "answer", "image_path",
                   "variant_kind"):
        assert column in columns
        assert next(f for f in test["field"] if f["name"] == column)["source"]["fileObject"] == {
            "@id": "data/test.parquet"}


def test_records_of_a_split(release):
    import mlcroissant as mlc
    from PIL import Image

    snapshot, out = release
    ds = mlc.Dataset(jsonld=str(out / "croissant.json"))
    rows = snapshot.rows_in("test")
    records = list(ds.records(record_set="test"))
    assert len(records) == len(rows)
    assert set(records[0]) == {f"test/{name}" for name, _, _ in FIELDS}
    for record, row in zip(records, rows):
        assert _text(record["test/id"]) == row.id
        assert _text(record["test/split"]) == "test"
        assert _text(record["test/stage"]) == row.stage and _text(record["test/category"]) == row.category
        assert _text(record["test/question"]) == row.question and _text(record["test/prompt"]) == row.prompt
        assert [_text(o) for o in record["test/options"]] == row.options
        assert [_text(o) for o in record["test/answer_letters"]] == row.answer_letters
        assert json.loads(_text(record["test/answer"])) == row.answer
        assert _text(record["test/image_path"]) == row.image
        assert _text(record["test/variant_kind"]) == row.variant_kind
        assert record["test/parent_variant_id"] == row.parent_variant_id
        assert _text(record["test/cue_letter"]) == row.cue_letter
        assert record["test/step"] == row.step and record["test/width"] == row.width
        boxes = [[b[f"test/evidence_boxes/{k}"] for k in ("x0", "y0", "x1", "y1")]
                 + [_text(b["test/evidence_boxes/label"])] for b in record["test/evidence_boxes"]]
        assert boxes == [b.as_list() for b in row.evidence_boxes]
        assert isinstance(record["test/image"], Image.Image)
        assert record["test/image"].size == (row.width, row.height)
    assert any(len(r["test/evidence_boxes"]) == 2 for r in records)


def test_images_record_set(release):
    import mlcroissant as mlc

    snapshot, out = release
    ds = mlc.Dataset(jsonld=str(out / "croissant.json"))
    records = list(ds.records(record_set="images"))
    assert sorted("images/" + _text(r["images/filename"]) for r in records) == sorted(snapshot.images)
    assert all(r["images/content"].size == (64, 48) for r in records)


def test_deterministic(release, tmp_path):
    snapshot, out = release
    first = (out / "croissant.json").read_bytes()
    write_croissant(snapshot, out)
    assert (out / "croissant.json").read_bytes() == first
    assert first.endswith(b"\n") and b"\r\n" not in first
    text = first.decode("utf-8")
    assert json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False, indent=2) + "\n" == text


def test_needs_the_data_written_first(tmp_path):
    snapshot, out = build_folder(tmp_path)
    (out / "data" / "val.parquet").unlink()
    with pytest.raises(FileNotFoundError, match="data/val.parquet"):
        write_croissant(snapshot, out)
    assert not (out / "croissant.json").exists()
