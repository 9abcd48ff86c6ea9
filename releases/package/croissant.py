"""croissant.json: Croissant 1.0 metadata of a release (http://mlcommons.org/croissant/1.0).

`write_croissant(snapshot, out)` runs after the data writer (`releases.package.data.write_data`): every FileObject
carries the SHA-256 and size of `data/{split}.parquet` / `.jsonl` as written under `out`, so the metadata describes
exactly the bytes that ship (a missing data file is an error, not a guess). The images FileSet is a glob
(`images/*.png`) and is not hashed here (MANIFEST.sha256 covers every file).

What it holds: the dataset's identity (name, version, licence, url, datePublished = `snapshot.created`, citeAs),
`distribution` (a FileObject per `data/{split}.parquet` and `data/{split}.jsonl`, a FileSet for `images/*.png`),
one RecordSet per split reading the parquet columns (the image decoded from the `image` column's bytes), an
`images` RecordSet over the PNG FileSet, and the responsible-AI (`rai:`) fields taken from the snapshot.
Deterministic: sorted keys, lists in a fixed order, no clock but `snapshot.created`.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from releases.package.card import ANNOTATION_PROTOCOL, COLLECTION, INTENDED_USE, MISUSES, bibtex, limitations
from releases.package.snapshot import Snapshot

CONFORMS_TO = "http://mlcommons.org/croissant/1.0"

# The @context of Croissant 1.0, as mlcroissant expects it (the specification's, with equivalentProperty and
# samplingRate).
CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

PARQUET = "application/x-parquet"
JSONL = "application/jsonlines"
PNG = "image/png"
IMAGE_FILES = "image-files"

# (column, dataType, description) of each record-set field, in the parquet's column order. `image` is read from
# the column's `bytes`; list columns are repeated; `evidence_boxes` (a list of structs) is a repeated field with
# one sub-field per struct member.
FIELDS = [
    ("id", "sc:Text", "Stable variant id: <item_key>:v<item_version>:<variant_id>."),
    ("split", "sc:Text", "train, val or test (drawn per patient)."),
    ("group", "sc:Text", "Hashed patient/study key the split is drawn on."),
    ("chain_id", "sc:Integer", "The reasoning chain the item belongs to."),
    ("step", "sc:Integer", "Position of the item in its chain's reading order (1..)."),
    ("stage", "sc:Text", "Reasoning stage code (S1..S4)."),
    ("stage_name", "sc:Text", "Reasoning stage name."),
    ("category", "sc:Text", "Task category code."),
    ("category_name", "sc:Text", "Task category name."),
    ("answer_type", "sc:Text", "single_choice, yes_no, box, multi_choice or short_text."),
    ("item_id", "sc:Integer", "The frozen item version's id."),
    ("item_key", "sc:Text", "The item's identity across versions."),
    ("item_version", "sc:Integer", "The item's version number."),
    ("question", "sc:Text", "The item's question."),
    ("prompt", "sc:Text", "The prompt shown to a model (may carry a cue)."),
    ("options", "sc:Text", "Option texts in the order shown; letters A, B, ... by position."),
    ("answer", "sc:Text", "The expected answer, JSON-encoded (option text(s), yes/no, or a box [x0, y0, x1, y1])."),
    ("answer_letters", "sc:Text", "Letters of the answer among the options (empty when not a choice)."),
    ("evidence_boxes", None, "Boxes (pixels on the image) that ground the answer."),
    ("image", "sc:ImageObject", "The PNG the variant shows."),
    ("image_path", "sc:Text", "Release path of that PNG (images/<sha256>.png)."),
    ("width", "sc:Integer", "Image width in pixels."),
    ("height", "sc:Integer", "Image height in pixels."),
    ("modality", "sc:Text", "Imaging modality."),
    ("body_region", "sc:Text", "Body region."),
    ("source_dataset", "sc:Text", "The dataset the image comes from."),
    ("license", "sc:Text", "The licence of the source image."),
    ("variant_id", "sc:Integer", "The variant's id."),
    ("variant_kind", "sc:Text", "clean, or the perturbation kind."),
    ("parent_variant_id", "sc:Integer", "The clean variant a perturbation derives from (empty for a clean one)."),
    ("variant_params", "sc:Text", "The perturbation's parameters, JSON-encoded."),
    ("cue_letter", "sc:Text", "The option a cue points to (empty when there is no cue)."),
]
REPEATED = {"options", "answer_letters", "evidence_boxes"}
BOX_FIELDS = [("x0", "sc:Float", "Left edge, pixels."), ("y0", "sc:Float", "Top edge, pixels."),
              ("x1", "sc:Float", "Right edge, pixels."), ("y1", "sc:Float", "Bottom edge, pixels."),
              ("label", "sc:Text", "What the box shows.")]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _file_object(out: Path, rel: str, fmt: str, description: str) -> dict:
    path = out / rel
    if not path.is_file():
        raise FileNotFoundError(f"croissant.json describes {rel}, which is not written yet (run write_data first)")
    return {"@type": "cr:FileObject", "@id": rel, "name": rel, "description": description, "contentUrl": rel,
            "contentSize": f"{path.stat().st_size} B", "encodingFormat": fmt, "sha256": sha256_of(path)}


def distribution(snapshot: Snapshot, out: Path) -> list[dict]:
    files = []
    for split in snapshot.splits:
        n = snapshot.count_in(split)
        files.append(_file_object(out, f"data/{split}.parquet", PARQUET,
                                  f"The {split} split: {n} item variants, one per row, images embedded."))
        files.append(_file_object(out, f"data/{split}.jsonl", JSONL,
                                  f"The {split} split as JSON Lines: {n} item variants, images by path."))
    files.append({"@type": "cr:FileSet", "@id": IMAGE_FILES, "name": "images", "encodingFormat": PNG,
                  "includes": "images/*.png",
                  "description": f"The {len(snapshot.images)} de-identified images, each stored once as "
                                 "images/<sha256>.png."})
    return files


def _source(split: str, column: str, json_path: str | None = None) -> dict:
    source = {"fileObject": {"@id": f"data/{split}.parquet"}, "extract": {"column": column}}
    if json_path:
        source["transform"] = {"jsonPath": json_path}
    return source


def _field(split: str, column: str, data_type: str | None, description: str) -> dict:
    field = {"@type": "cr:Field", "@id": f"{split}/{column}", "name": column, "description": description}
    if column == "evidence_boxes":
        field["subField"] = [{"@type": "cr:Field", "@id": f"{split}/{column}/{name}", "name": name,
                              "description": desc, "dataType": typ, "source": _source(split, column, name)}
                             for name, typ, desc in BOX_FIELDS]
    else:
        field["dataType"] = data_type
        field["source"] = _source(split, column, "bytes" if column == "image" else None)
    if column in REPEATED:
        field["repeated"] = True
    return field


def _image_field(name: str, data_type: str, prop: str, description: str) -> dict:
    return {"@type": "cr:Field", "@id": f"images/{name}", "name": name, "description": description,
            "dataType": data_type, "source": {"fileSet": {"@id": IMAGE_FILES}, "extract": {"fileProperty": prop}}}


def record_sets(snapshot: Snapshot) -> list[dict]:
    """One RecordSet per split (the parquet rows), then `images` (every PNG of the FileSet, once)."""
    sets = [{"@type": "cr:RecordSet", "@id": split, "name": split,
             "description": f"The {split} split: one record per item variant ({snapshot.count_in(split)}).",
             "key": {"@id": f"{split}/id"},
             "field": [_field(split, *f) for f in FIELDS]} for split in snapshot.splits]
    sets.append({"@type": "cr:RecordSet", "@id": "images", "name": "images",
                 "description": f"The {len(snapshot.images)} images, each once.", "key": {"@id": "images/filename"},
                 "field": [_image_field("filename", "sc:Text", "filename", "<sha256>.png: the SHA-256 of the file."),
                           _image_field("content", "sc:ImageObject", "content", "The PNG.")]})
    return sets


def _sentences(record: dict) -> str:
    return "; ".join(f"{k}: {json.dumps(v, sort_keys=True, ensure_ascii=False) if isinstance(v, (dict, list)) else v}"
                     for k, v in sorted((record or {}).items()))


def rai(snapshot: Snapshot) -> dict:
    """The Croissant RAI fields, from the snapshot's records."""
    summary = snapshot.summary
    sources = sorted({(source, lic) for source, t in summary.sources.items() for lic in t.licenses})
    modalities = summary.modality_variants()
    ref = snapshot.reference_standard or {}
    roles = {k: v for k, v in sorted(ref.items()) if isinstance(v, int) and not isinstance(v, bool)}
    out = {
        "rai:dataCollection": COLLECTION + " Sources: " + "; ".join(f"{s} ({lic})" for s, lic in sources) + ".",
        "rai:dataCollectionType": ["Secondary Data Analysis", "Manual Human Curation"],
        "rai:dataPreprocessingProtocol": [
            "De-identification: " + (_sentences(snapshot.deidentification) or "no record") + ".",
            "Images re-rendered as PNG and stored once under images/<sha256>.png.",
        ],
        "rai:dataAnnotationProtocol": [ANNOTATION_PROTOCOL],
        "rai:dataAnnotationPlatform": ["Label Studio"],
        "rai:dataAnnotationAnalysis": ["Reference standard: " + (_sentences(ref) or "no record") + "."],
        "rai:annotatorDemographics": [
            "Roles and counts: " + (", ".join(f"{k} {v}" for k, v in roles.items()) or "not recorded")
            + ". No demographic attributes of annotators are recorded."],
        "rai:dataBiases": [
            "Case mix follows the source datasets, not a clinical population; modalities: "
            + ", ".join(f"{m} {n}" for m, n in sorted(modalities.items())) + " variants.",
            "Questions are generated from templates per category and may carry wording regularities; the shortcut "
            "audit measures how far blind baselines get: "
            + (_sentences(snapshot.shortcut_audit) if snapshot.shortcut_audit else "no audit recorded") + ".",
        ],
        "rai:dataLimitations": limitations(snapshot),
        "rai:dataUseCases": ["Intended: " + INTENDED_USE] + ["Out of scope: " + m for m in MISUSES],
        "rai:personalSensitiveInformation": [
            "Medical images of patients, de-identified before release: no DICOM header or source metadata is "
            "shipped, patient keys are one-way hashes, and every file passed a PHI check before packing. "
            "Re-identification attempts are prohibited."],
        "rai:dataSocialImpact": (
            "Meant to expose models that answer medical questions from shortcuts rather than image evidence; "
            "a high score is not evidence of clinical safety."),
        "rai:dataReleaseMaintenancePlan": (
            "Releases are immutable and signed (MANIFEST.sig over MANIFEST.sha256); corrections ship as a new "
            "semantic version with a CHANGELOG.md against the previous one."),
    }
    return out


def metadata(snapshot: Snapshot, out: Path) -> dict:
    lic = snapshot.license
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": snapshot.name,
        "alternateName": snapshot.title,
        "description": snapshot.description,
        "license": f"https://spdx.org/licenses/{lic}.html" if lic and not lic.startswith("LicenseRef-") else lic,
        "url": snapshot.homepage,
        "version": snapshot.version,
        "datePublished": snapshot.created,
        "citeAs": bibtex(snapshot),
        "inLanguage": "en",
        "isLiveDataset": False,
        "keywords": ["medical", "radiology", "grounding", "vqa", "visual question answering", "benchmark"],
        "distribution": distribution(snapshot, out),
        "recordSet": record_sets(snapshot),
        **rai(snapshot),
    }


def render_croissant(snapshot: Snapshot, out: Path) -> str:
    return json.dumps(metadata(snapshot, Path(out)), sort_keys=True, ensure_ascii=False, indent=2) + "\n"


def write_croissant(snapshot: Snapshot, out: Path) -> None:
    """Write `out/croissant.json`. Run after `write_data` (it hashes data/{split}.parquet and .jsonl)."""
    out = Path(out)
    (out / "croissant.json").write_text(render_croissant(snapshot, out), encoding="utf-8", newline="\n")
