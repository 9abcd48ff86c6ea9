"""README.md: the release's Hugging Face dataset card (YAML header + datasheet sections).

`write_card(snapshot, out)` runs after the data writer (`releases.package.data.write_data`): the card's
`dataset_info` is read from the written `data/{split}.parquet` files (features from the schema, so
`datasets.load_dataset(folder)` casts to exactly what is on disk; row counts and sizes from the footers), and the
`image` column, an HF Image struct<bytes, path>, is declared `dtype: image`, which makes `datasets` decode it to
PIL images. A missing data file is an error.

Deterministic: every count comes from `snapshot.summary` (one pass over the rows) in a fixed order, and
nothing but `snapshot.created` carries a date.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import yaml

from releases.package.snapshot import Snapshot

# Licence ids the Hub accepts as they are; anything else is declared `other` with its name and a link.
HUB_LICENSES = frozenset({
    "apache-2.0", "mit", "cc0-1.0", "cc-by-2.0", "cc-by-2.5", "cc-by-3.0", "cc-by-4.0", "cc-by-sa-3.0",
    "cc-by-sa-4.0", "cc-by-nc-2.0", "cc-by-nc-3.0", "cc-by-nc-4.0", "cc-by-nd-4.0", "cc-by-nc-nd-3.0",
    "cc-by-nc-nd-4.0", "cc-by-nc-sa-2.0", "cc-by-nc-sa-3.0", "cc-by-nc-sa-4.0", "odbl", "odc-by", "pddl",
    "cdla-permissive-1.0", "cdla-permissive-2.0", "cdla-sharing-1.0", "bsd-2-clause", "bsd-3-clause",
    "gpl-3.0", "lgpl-3.0", "agpl-3.0", "mpl-2.0", "unlicense", "openrail", "c-uda", "etalab-2.0",
})

_SIZES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
          (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]

FILES = [
    ("data/{split}.parquet", "one row per item variant (the columns above); the `image` column holds the PNG"),
    ("data/{split}.jsonl", "the same rows as JSON Lines, the image as its release path"),
    ("images/<sha256>.png", "every de-identified image, stored once, named by its SHA-256"),
    ("croissant.json", "Croissant 1.0 metadata with sha256 file objects, record sets and responsible-AI fields"),
    ("vlmevalkit/{name}.tsv", "VLMEvalKit multiple-choice TSV (base64 images; rotations share a CircularEval group)"),
    ("sft/{split}.jsonl", "stepwise supervised fine-tuning chats (train and val splits only), each answer grounded "
     "in its evidence boxes"),
    ("sft/{split}.answer_only.jsonl", "the same chats with answers only, for comparison"),
    ("CHANGELOG.md", "items added, removed and changed against the previous release, each with its reason"),
    ("MANIFEST.sha256", "every file with its size and SHA-256; its own SHA-256 is the release's content digest"),
    ("MANIFEST.sig", "an Ed25519 signature over MANIFEST.sha256"),
    ("release.pub", "the Ed25519 public key that verifies MANIFEST.sig"),
    ("README.md", "this card"),
]


def hub_license(spdx: str) -> str:
    """The Hub's licence id for an SPDX id: lower case ("CC-BY-4.0" -> "cc-by-4.0")."""
    return (spdx or "").strip().lower()


def size_category(n: int) -> str:
    for bound, label in _SIZES:
        if n < bound:
            return label
    return "n>1B"


def _pa_feature(name: str, typ) -> dict:
    import pyarrow as pa

    if name == "image" and pa.types.is_struct(typ) and {typ.field(i).name for i in range(typ.num_fields)} == {
            "bytes", "path"}:
        return {"name": name, "dtype": "image"}
    return {"name": name, **_pa_type(typ)}


def _pa_type(typ) -> dict:
    import pyarrow as pa

    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        inner = _pa_type(typ.value_type)
        return {"list": inner["dtype"] if set(inner) == {"dtype"} else inner.get("struct", inner)}
    if pa.types.is_struct(typ):
        return {"struct": [{"name": typ.field(i).name, **_pa_type(typ.field(i).type)} for i in range(typ.num_fields)]}
    if pa.types.is_large_string(typ):
        return {"dtype": "large_string"}
    if pa.types.is_string(typ):
        return {"dtype": "string"}
    if pa.types.is_floating(typ):
        return {"dtype": {pa.float16(): "float16", pa.float32(): "float32"}.get(typ, "float64")}
    return {"dtype": str(typ)}  # int64, int32, bool, binary, ... share their arrow names with the HF dtypes


def parquet_path(out: Path, split: str) -> Path:
    path = Path(out) / "data" / f"{split}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"the card describes data/{split}.parquet, which is not written yet "
                                "(run write_data first)")
    return path


def features_for(out: Path, split: str) -> list[dict]:
    """HF YAML features of the written data/{split}.parquet."""
    import pyarrow.parquet as pq

    return [_pa_feature(f.name, f.type) for f in pq.read_schema(parquet_path(out, split))]


def split_info(out: Path, split: str, num_examples: int) -> dict:
    """The split's YAML entry: num_bytes is the parquet's uncompressed data size (from its footer, not a read)."""
    import pyarrow.parquet as pq

    meta = pq.read_metadata(parquet_path(out, split))
    if meta.num_rows != num_examples:
        raise ValueError(f"data/{split}.parquet has {meta.num_rows} rows, the snapshot {num_examples}")
    num_bytes = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return {"name": split, "num_bytes": num_bytes, "num_examples": num_examples}


def front_matter(snapshot: Snapshot, out: Path) -> dict:
    splits = snapshot.splits
    lic = hub_license(snapshot.license)
    meta: dict = {"license": lic if lic in HUB_LICENSES else "other"}
    if meta["license"] == "other":
        meta["license_name"] = lic or "unknown"
        meta["license_link"] = snapshot.homepage
    meta.update({
        "pretty_name": snapshot.title,
        "annotations_creators": ["expert-generated"],
        "language_creators": ["expert-generated"],
        "language": ["en"],
        "multilinguality": ["monolingual"],
        "source_datasets": ["original"],
        "task_categories": ["visual-question-answering", "multiple-choice"],
        "task_ids": ["visual-question-answering", "multiple-choice-qa"],
        "size_categories": [size_category(snapshot.summary.rows)],
        "tags": ["medical", "radiology", "grounding", "vqa"],
        "configs": [{"config_name": "default",
                     "data_files": [{"split": s, "path": f"data/{s}.parquet"} for s in splits]}],
    })
    infos = [split_info(out, s, snapshot.count_in(s)) for s in splits]
    meta["dataset_info"] = {
        "features": features_for(out, splits[0]),
        "splits": infos,
        "download_size": sum(parquet_path(out, s).stat().st_size for s in splits),
        "dataset_size": sum(i["num_bytes"] for i in infos),
    }
    return meta


# ---------------------------------------------------------------- markdown helpers

def _cell(value) -> str:
    if isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, (dict, list)):
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    elif value is None:
        text = "—"
    else:
        text = str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines + [""]


def _render(record: dict) -> list[str]:
    """A free-form record: scalars as a list, dicts of scalars as key/value tables, dicts of dicts as tables."""
    lines: list[str] = []
    scalars = [(k, v) for k, v in sorted(record.items()) if not isinstance(v, dict)]
    for key, value in scalars:
        lines.append(f"- **{_cell(key)}**: {_cell(value)}")
    if scalars:
        lines.append("")
    for key, value in sorted((k, v) for k, v in record.items() if isinstance(v, dict)):
        lines.append(f"**{_cell(key)}**")
        lines.append("")
        if not value:
            lines += ["(none)", ""]
        elif all(isinstance(v, dict) for v in value.values()):
            cols = sorted({c for v in value.values() for c in v})
            lines += _table([""] + cols, [[k] + [v.get(c) for c in cols] for k, v in sorted(value.items())])
        else:
            lines += _table(["", "value"], [[k, v] for k, v in sorted(value.items())])
    return lines


# ---------------------------------------------------------------- sections

def _summary(s: Snapshot) -> list[str]:
    items = len(s.summary.items)
    chains = len(s.summary.chains)
    return [
        f"# {s.title}", "", s.description, "",
        f"**{s.name} {s.version}** ({s.created}): {s.summary.rows} item variants of {items} approved question items "
        f"in {chains} stepwise reasoning chains over {len(s.images)} de-identified images, split by patient into "
        f"{', '.join(f'{sp} ({t.variants})' for sp, t in s.summary.splits.items())}. Each chain walks an image "
        "through four stages (perception, detection and localization, characterization, diagnosis); each question "
        "carries its gold answer and the evidence boxes (pixels) that ground it, and each item ships with its clean "
        "form and adversarial variants (perturbed options, misleading hints, wrong visual cues) linked to it by "
        "lineage.", "",
        f"Homepage: {s.homepage}", "",
    ]


def _motivation(s: Snapshot) -> list[str]:
    return [
        "## Motivation", "",
        "Medical vision-language models are scored on final answers, which hides whether they looked at the right "
        "place and reasoned in the right order. This benchmark asks for the intermediate steps a radiologist takes, "
        "grounds each one in image evidence, and pairs every item with perturbed variants, so that a model that "
        "answers from shortcuts (option position, hints, text priors) is caught rather than rewarded.", "",
    ]


def _composition(s: Snapshot) -> list[str]:
    summary = s.summary
    lines = ["## Composition", ""]
    lines += ["### Splits", "", "Drawn at patient level: no patient's images appear in two splits.", ""]
    split_rows = []
    for sp, t in summary.splits.items():
        split_rows.append([sp, t.variants, len(t.items), len(t.chains), len(t.images), len(t.patients)])
    lines += _table(["split", "variants", "items", "chains", "images", "patients"], split_rows)
    stage_order = [t["stage"] for t in s.taxonomy]
    names = summary.stage_names
    lines += ["### Stages", ""]
    lines += _table(["stage", "name", "variants", "items"],
                    [[k, names.get(k, ""), v, i] for k, v, i in summary.counts("stage", stage_order)])
    cats = {t["category"]: t for t in s.taxonomy}
    lines += ["### Categories", "", f"Taxonomy version `{s.taxonomy_version}`.", ""]
    cat_rows = []
    for k, v, i in summary.counts("category", [t["category"] for t in s.taxonomy]):
        t = cats.get(k) or summary.categories.get(k, {})
        cat_rows.append([k, t.get("category_name", ""), t.get("stage", ""), t.get("answer_type", ""), v, i])
    lines += _table(["category", "name", "stage", "answer type", "variants", "items"], cat_rows)
    lines += ["### Modalities", ""]
    mod_images = summary.modality_images
    lines += _table(["modality", "variants", "items", "images"],
                    [[k, v, i, len(mod_images[k])] for k, v, i in summary.counts("modality")])
    lines += ["### Body regions", ""]
    lines += _table(["body region", "variants", "items"], [list(c) for c in summary.counts("body_region")])
    lines += ["### Variant kinds", "",
              "`clean` is the item as written; every other kind is a perturbation whose `parent_variant_id` names "
              "the clean variant it derives from, with its parameters in `variant_params`.", ""]
    lines += _table(["variant kind", "variants", "items"],
                    [list(c) for c in summary.counts("variant_kind", ["clean"])])
    ex = s.excluded or {}
    lines += ["### Left out", "",
              "Approved, current items only. Items left out of this release (they are counted, not shipped):", ""]
    lines += _table(["reason", "items"], [[k, ex.get(k, 0)] for k in ("rejected", "ambiguous", "open_case")])
    anyway = ex.get("included_anyway") or {}
    if any(anyway.values()):
        lines += ["Included anyway by the release's author:", ""]
        lines += _table(["reason", "items"], [[k, v] for k, v in sorted(anyway.items())])
    return lines


def _collection(s: Snapshot) -> list[str]:
    lines = ["## Collection and de-identification", "", COLLECTION, ""]
    lines += ["### De-identification", ""]
    lines += _render(s.deidentification or {}) or ["(no record)", ""]
    lines += ["### Sources", ""]
    lines += _table(["source dataset", "licence", "images", "items", "variants"],
                    [[k, ", ".join(sorted(d.licenses)), len(d.images), len(d.items), d.variants]
                     for k, d in sorted(s.summary.sources.items())])
    return lines


ANNOTATION_PROTOCOL = (
    "Questions are generated per chain from the taxonomy's category rules, then reviewed by curators (an edit is a "
    "new item version). Radiologist readers annotate answers and evidence boxes in Label Studio; disagreements "
    "between readers, or between readers and models, open adjudication cases that an adjudicator settles with a "
    "verdict (confirm, correct, reject). Only approved, current item versions are released.")
COLLECTION = (
    "Images come from the source datasets listed per row (source_dataset, license), each under its own licence. "
    "Every image was decoded, de-identified under the recorded profile, and re-rendered as a PNG: no DICOM header "
    "or other source metadata is shipped, patient keys (group) are one-way hashes, and a PHI check ran on every "
    "file of the release before it was packed.")


def _annotation(s: Snapshot) -> list[str]:
    return ["## Annotation and adjudication", "", ANNOTATION_PROTOCOL + " Inter-reader agreement is reported below.",
            "", "### Reference standard", ""] + (_render(s.reference_standard or {}) or ["(no record)", ""])


INTENDED_USE = ("evaluating whether vision-language models reason about medical images in grounded steps "
                "(per-stage accuracy, localization against the evidence boxes, robustness to the adversarial "
                "variants); supervised fine-tuning research on the train split only.")
MISUSES = [
    "Clinical use of any kind: this is a research benchmark, not a diagnostic device, and scores on it say nothing "
    "about safety in care.",
    "Training or tuning on the test split (or the validation split, for reported results): it voids the benchmark "
    "for everyone.",
    "Attempts to re-identify patients or link images back to their sources' records.",
    "Redistributing images against the licence of their source dataset.",
]


def limitations(s: Snapshot) -> list[str]:
    """The known limitations, one sentence each (the card's and croissant.json's rai:dataLimitations)."""
    mods = sorted(s.summary.by["modality"])
    regions = sorted(s.summary.by["body_region"])
    return [
        f"Coverage: modalities {', '.join(mods)}; body regions {', '.join(regions)}. Other modalities, regions, "
        "populations and scanners are not represented, and the case mix follows the source datasets, not a "
        "clinical population.",
        "Single images: each chain reads one 2D image (a rendered slice), not a full study, prior exams or "
        "clinical history.",
        "Gold answers are a reference standard set by a small number of readers and adjudicators; some items "
        "remain arguable, and box extents vary between readers.",
        "English only. Questions are generated from templates and read less naturally than clinical text.",
        "Variant kinds probe known shortcuts only; passing them does not prove a model is free of others.",
    ]


def _uses(s: Snapshot) -> list[str]:
    return ["## Uses", "", f"**Intended**: {INTENDED_USE}", "", "**Out of scope and misuse**:", ""] + \
        [f"- {m}" for m in MISUSES] + [""]


def _limitations(s: Snapshot) -> list[str]:
    return ["## Limitations", ""] + [f"- {m}" for m in limitations(s)] + [""]


def _shortcut(s: Snapshot) -> list[str]:
    lines = ["## Shortcut audit", ""]
    if not s.shortcut_audit:
        return lines + ["No shortcut audit was recorded on these items.", ""]
    return lines + ["Blind baselines (models given the question without the image) on these items: a benchmark "
                    "that can be passed without looking scores near chance here.", ""] + _render(s.shortcut_audit)


def _files(s: Snapshot) -> list[str]:
    lines = ["## Files", ""]
    lines += [f"- `{path.replace('{name}', s.name)}`: {what}" for path, what in FILES]
    lines += ["", "Load it with `datasets.load_dataset(\"<this folder>\")` (the `image` column decodes to PIL "
              "images) or with `mlcroissant.Dataset(jsonld=\"croissant.json\")`. Check it with "
              "`manage.py release_verify <this folder>`.", ""]
    return lines


def _version(s: Snapshot) -> list[str]:
    kinds = Counter(c.kind for c in s.changes)
    lines = ["## Version and changes", "",
             f"- Version: {s.version} (semantic: a major version when items are removed or their golds change, "
             "a minor version when items are added, a patch version for metadata only)",
             f"- Previous release: {s.previous_version or 'none (first release)'}",
             f"- Created: {s.created}",
             f"- Audit-chain head at release time: `{s.audit_head}`",
             f"- Taxonomy version: `{s.taxonomy_version}`",
             "- Content digest: the SHA-256 of `MANIFEST.sha256`", ""]
    if s.previous_version:
        lines += [f"Against {s.previous_version}: " + ", ".join(f"{kinds.get(k, 0)} {k}"
                                                                 for k in ("added", "removed", "changed"))
                  + " (see `CHANGELOG.md`).", ""]
    return lines


def bibtex(s: Snapshot) -> str:
    key = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in s.name) + "_" + s.version.replace(".", "_")
    return "\n".join([
        f"@misc{{{key},",
        f"  title        = {{{{{s.title}}}}},",
        f"  howpublished = {{\\url{{{s.homepage}}}}},",
        f"  version      = {{{s.version}}},",
        f"  year         = {{{s.created[:4]}}},",
        f"  note         = {{Dataset release {s.name} {s.version}, created {s.created}}},",
        "}",
    ])


def _citation(s: Snapshot) -> list[str]:
    return ["## How to cite this release", "",
            "Cite the exact version you evaluated on:", "", "```bibtex", bibtex(s), "```", ""]


SECTIONS = [_summary, _motivation, _composition, _collection, _annotation, _uses, _limitations, _shortcut,
            _files, _version, _citation]


def render_card(snapshot: Snapshot, out: Path) -> str:
    header = yaml.safe_dump(front_matter(snapshot, out), sort_keys=False, allow_unicode=True,
                            default_flow_style=False, width=1_000_000)
    body = [line for section in SECTIONS for line in section(snapshot)]
    return "---\n" + header + "---\n\n" + "\n".join(body).rstrip("\n") + "\n"


def write_card(snapshot: Snapshot, out: Path) -> None:
    """Write `out/README.md`. Run after `write_data` (the card declares the written parquet's schema)."""
    out = Path(out)
    (out / "README.md").write_text(render_card(snapshot, out), encoding="utf-8", newline="\n")

