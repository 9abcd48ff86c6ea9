"""The Hugging Face dataset card: `datasets.load_dataset(folder)` loads a built release unchanged, images included."""
from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from releases.package.card import hub_license, size_category, write_card
from releases.package.data import write_data
from releases.package.images import copy_images
from releases.package.snapshot import Snapshot
from tests.releases.factories import make_snapshot

# ---------------------------------------------------------------- a release folder (data + images) to describe

def build_folder(tmp_path: Path, edit: Callable[[Snapshot], Snapshot] | None = None,
                 **kwargs) -> tuple[Snapshot, Path]:
    """make_snapshot (then `edit`) + the data writer + images, in `tmp_path/release` (no card, no croissant)."""
    snapshot = make_snapshot(tmp_path, **kwargs)
    if edit:
        snapshot = edit(snapshot)
    out = tmp_path / "release"
    out.mkdir()
    write_data(snapshot, out)
    copy_images(snapshot, out)
    return snapshot, out


@pytest.fixture
def hf_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf" / "datasets"))
    import datasets.config

    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", Path(tmp_path / "hf" / "datasets"))
    return tmp_path / "hf" / "datasets"


def _front_matter(readme: Path) -> tuple[dict, str]:
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    header, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(header), body


# ---------------------------------------------------------------- tests

def test_load_dataset_reads_every_split_with_images(tmp_path, hf_offline):
    import datasets
    import pyarrow.parquet as pq
    from PIL import Image

    from releases.package.croissant import write_croissant

    snapshot, out = build_folder(tmp_path)
    write_croissant(snapshot, out)
    write_card(snapshot, out)
    # files of other shapes beside the data must not be picked up (the card's configs name the data files)
    for rel, text in (("sft/train.jsonl", '{"messages": []}\n'), ("vlmevalkit/x.tsv", "index\tquestion\n0\tq\n"),
                      ("CHANGELOG.md", "# Changelog\n"), ("MANIFEST.sha256", "")):
        (out / rel).parent.mkdir(exist_ok=True)
        (out / rel).write_text(text, encoding="utf-8")
    ds = datasets.load_dataset(str(out), cache_dir=str(hf_offline))
    assert sorted(ds) == sorted(snapshot.splits) == ["test", "train", "val"]
    columns = pq.read_schema(out / "data" / "test.parquet").names
    for split in snapshot.splits:
        rows = snapshot.rows_in(split)
        assert ds[split].num_rows == len(rows)
        assert ds[split].column_names == columns
        assert ds[split]["id"] == [r.id for r in rows]
    assert isinstance(ds["test"].features["image"], datasets.Image)
    first = snapshot.rows_in("test")[0]
    row = ds["test"][0]
    assert isinstance(row["image"], Image.Image)
    assert row["image"].size == (first.width, first.height)
    assert row["image_path"] == first.image
    assert row["options"] == first.options
    assert json.loads(row["answer"]) == first.answer
    assert row["variant_kind"] == first.variant_kind
    boxed = next(r for r in snapshot.rows_in("test") if r.evidence_boxes)
    got = ds["test"][snapshot.rows_in("test").index(boxed)]["evidence_boxes"]
    assert [[b["x0"], b["y0"], b["x1"], b["y1"], b["label"]] for b in got] == [b.as_list() for b in
                                                                             boxed.evidence_boxes]


def test_front_matter(tmp_path):
    snapshot, out = build_folder(tmp_path)
    write_card(snapshot, out)
    meta, body = _front_matter(out / "README.md")
    assert meta["license"] == "cc-by-4.0"
    assert meta["pretty_name"] == snapshot.title
    assert meta["annotations_creators"] == ["expert-generated"]
    assert meta["language"] == ["en"]
    assert "visual-question-answering" in meta["task_categories"]
    assert meta["size_categories"] == ["n<1K"]
    assert {"medical", "radiology", "grounding", "vqa"} <= set(meta["tags"])
    assert meta["configs"] == [{"config_name": "default", "data_files": [
        {"split": s, "path": f"data/{s}.parquet"} for s in ("train", "val", "test")]}]
    info = meta["dataset_info"]
    assert {"name": "image", "dtype": "image"} in info["features"]
    assert [f["name"] for f in info["features"]] == [
        f.name for f in __import__("pyarrow.parquet").parquet.read_schema(out / "data" / "train.parquet")]
    assert [(i["name"], i["num_examples"]) for i in info["splits"]] == [
        (s, len(snapshot.rows_in(s))) for s in ("train", "val", "test")]
    assert all(i["num_bytes"] > 0 for i in info["splits"])
    assert info["dataset_size"] == sum(i["num_bytes"] for i in info["splits"])
    sizes = [(out / "data" / f"{s}.parquet").stat().st_size for s in ("train", "val", "test")]
    assert info["download_size"] == sum(sizes)


def test_huggingface_hub_reads_the_card(tmp_path):
    from huggingface_hub import DatasetCard

    snapshot, out = build_folder(tmp_path)
    write_card(snapshot, out)
    card = DatasetCard.load(out / "README.md")
    assert card.data.license == "cc-by-4.0" and card.data.pretty_name == snapshot.title
    assert card.data.task_categories == ["visual-question-answering", "multiple-choice"]
    assert card.text.lstrip().startswith(f"# {snapshot.title}")


def test_features_parse_as_datasets_features(tmp_path):
    import datasets
    import pyarrow.parquet as pq

    snapshot, out = build_folder(tmp_path)
    write_card(snapshot, out)
    meta, _ = _front_matter(out / "README.md")
    features = datasets.Features._from_yaml_list(meta["dataset_info"]["features"])
    schema = pq.read_schema(out / "data" / "train.parquet")
    assert list(features) == schema.names
    assert features["evidence_boxes"] == datasets.List({n: datasets.Value("float64") for n in ("x0", "y0", "x1", "y1")}
                                                       | {"label": datasets.Value("string")})
    assert features["options"] == datasets.List(datasets.Value("string"))
    # the card's features are the data writer's schema, with the image column decoded
    from releases.package.data import SCHEMA

    expected = datasets.Features.from_arrow_schema(SCHEMA.remove_metadata())
    expected["image"] = datasets.Image()
    assert features == expected


def test_card_splits_are_enforced_by_datasets(tmp_path, hf_offline):
    """load_dataset verifies the card's num_examples: a card that miscounts a split does not load."""
    import datasets
    from datasets.exceptions import NonMatchingSplitsSizesError

    snapshot, out = build_folder(tmp_path)
    write_card(snapshot, out)
    readme = out / "README.md"
    n = len(snapshot.rows_in("val"))
    text = readme.read_text(encoding="utf-8")
    assert text.count("  - name: val\n    num_bytes: ") == 1
    head, rest = text.split("  - name: val\n", 1)
    readme.write_text(head + "  - name: val\n" + rest.replace(f"num_examples: {n}\n", f"num_examples: {n + 1}\n", 1),
                      encoding="utf-8")
    with pytest.raises(NonMatchingSplitsSizesError):
        datasets.load_dataset(str(out), cache_dir=str(hf_offline))


def test_needs_the_data_written_first(tmp_path):
    snapshot, out = build_folder(tmp_path)
    (out / "data" / "test.parquet").unlink()
    with pytest.raises(FileNotFoundError, match="data/test.parquet"):
        write_card(snapshot, out)
    assert not (out / "README.md").exists()


def test_datasheet_sections_and_counts(tmp_path):
    snapshot, out = build_folder(tmp_path, previous="0.9.0")
    write_card(snapshot, out)
    _, body = _front_matter(out / "README.md")
    for heading in ("## Motivation", "## Composition", "## Collection and de-identification",
                    "## Annotation and adjudication", "## Uses", "## Limitations", "## Shortcut audit", "## Files",
                    "## Version and changes", "## How to cite this release"):
        assert f"\n{heading}\n" in body, heading
    n_test = len(snapshot.rows_in("test"))
    assert f"| test | {n_test} |" in body
    n_clean = sum(r.variant_kind == "clean" for r in snapshot.rows)
    assert f"| clean | {n_clean} |" in body
    n_ct = sum(r.modality == "CT" for r in snapshot.rows)
    assert f"| CT | {n_ct} |" in body
    assert "| S1 | Perception |" in body
    assert "DICOM PS3.15 Annex E Basic" in body and "2024b" in body
    assert "| Med-R2 synthetic phantoms | CC0-1.0 |" in body
    assert "kappa" in body and "0.81" in body
    assert "blind_accuracy" in body and "0.31" in body
    assert "not a diagnostic device" in body and "test split" in body
    assert "a" * 64 in body and "Previous release: 0.9.0" in body and "1 added" in body
    for path in ("data/{split}.parquet", "data/{split}.jsonl", "images/", "croissant.json",
                 "vlmevalkit/med-r2-test.tsv", "sft/{split}.jsonl", "MANIFEST.sha256", "MANIFEST.sig", "release.pub",
                 "CHANGELOG.md"):
        assert path in body
    assert "@misc{med-r2-test_1_0_0," in body and snapshot.homepage in body
    assert "placeholder" not in body.lower() and "todo" not in body.lower()


def test_no_shortcut_audit_and_other_license(tmp_path):
    snapshot, out = build_folder(tmp_path)
    snapshot = dataclasses.replace(snapshot, shortcut_audit=None, license="LicenseRef-Med-R2")
    write_card(snapshot, out)
    meta, body = _front_matter(out / "README.md")
    assert meta["license"] == "other" and meta["license_name"] == "licenseref-med-r2"
    assert meta["license_link"] == snapshot.homepage
    assert "No shortcut audit was recorded" in body


def test_deterministic(tmp_path):
    snapshot, out = build_folder(tmp_path)
    write_card(snapshot, out)
    first = (out / "README.md").read_bytes()
    write_card(snapshot, out)
    assert (out / "README.md").read_bytes() == first
    other = make_snapshot(tmp_path / "again")
    again = tmp_path / "again" / "release"
    again.mkdir()
    shutil.copytree(out / "data", again / "data")
    write_card(other, again)
    assert (again / "README.md").read_bytes() == first
    assert b"\r\n" not in first


def test_helpers():
    assert hub_license("CC0-1.0") == "cc0-1.0"
    assert size_category(999) == "n<1K" and size_category(1000) == "1K<n<10K"
    assert size_category(1_000_000) == "1M<n<10M"
