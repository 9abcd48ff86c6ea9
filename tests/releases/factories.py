"""A synthetic release snapshot with real PNG files, for the writers' tests (no database)."""
from __future__ import annotations

import hashlib
import io
from pathlib import Path

from PIL import Image as PILImage

from releases.package.snapshot import Box, Change, ImageFile, Row, Snapshot

STAGES = [("S1", "Perception"), ("S2", "Detection & localization"), ("S3", "Characterization"), ("S4", "Diagnosis")]
CATEGORIES = [("organ", "Organ identification", "S1", "single_choice"),
              ("lesion_present", "Lesion presence", "S2", "yes_no"),
              ("lesion_box", "Lesion localization", "S2", "box"),
              ("margin", "Lesion margin", "S3", "single_choice"),
              ("diagnosis", "Diagnosis", "S4", "single_choice")]
KINDS = ["clean", "misleading_hint", "option_permutation", "wrong_visual_cue"]


def _png(path: Path, seed: int, size=(64, 48)) -> None:
    img = PILImage.new("L", size, color=(seed * 37) % 256)
    img.putpixel((seed % size[0], seed % size[1]), 255)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    path.write_bytes(buf.getvalue())


def make_snapshot(tmp_path: Path, *, n_chains: int = 6, version: str = "1.0.0",
                  previous: str | None = None) -> Snapshot:
    src = tmp_path / "store"
    src.mkdir(parents=True, exist_ok=True)
    images: dict[str, ImageFile] = {}
    rows: list[Row] = []
    splits = ["train", "train", "val", "test", "test", "test"]
    for c in range(n_chains):
        base = src / f"image{c}.png"
        _png(base, c)
        sha = hashlib.sha256(base.read_bytes()).hexdigest()
        image_path = f"images/{sha}.png"
        images[image_path] = ImageFile(image_path, base, 64, 48, {"method": "demo phantom", "burned_in": "NO"})
        split = splits[c % len(splits)]
        for step, (code, name, stage, answer_type) in enumerate(CATEGORIES, start=1):
            options = {"single_choice": ["liver", "spleen", "kidney", "lung"], "yes_no": ["yes", "no"],
                       "box": []}[answer_type]
            gold = options[(c + step) % len(options)] if options else [10.0, 8.0, 30.0, 28.0]
            item_id = 1000 * c + step
            for k, kind in enumerate(KINDS if options else ["clean"]):
                shown = list(reversed(options)) if kind == "option_permutation" else options
                vimage = image_path
                if kind == "wrong_visual_cue":
                    vsrc = src / f"image{c}_cue{step}.png"
                    _png(vsrc, 100 + 10 * c + step)
                    vsha = hashlib.sha256(vsrc.read_bytes()).hexdigest()
                    vimage = f"images/{vsha}.png"
                    images[vimage] = ImageFile(vimage, vsrc, 64, 48, {})
                letters = [chr(65 + shown.index(gold))] if shown else []
                cue = None
                if kind in ("misleading_hint", "wrong_visual_cue") and shown:
                    cue = chr(65 + (shown.index(gold) + 1) % len(shown))
                prompt = (f"A colleague thinks the answer is {cue}. " if kind == "misleading_hint" else "") + \
                    f"Question {step} about image {c}?"
                rows.append(Row(
                    id=f"key-{c}-{step}:v1:{item_id * 10 + k}", split=split, group=f"patient-{c}", chain_id=c + 1,
                    step=step, stage=stage, stage_name=dict(STAGES)[stage], category=code, category_name=name,
                    answer_type=answer_type, item_id=item_id, item_key=f"key-{c}-{step}", item_version=1,
                    question=f"Question {step} about image {c}?", prompt=prompt, options=shown, answer=gold,
                    answer_letters=letters, evidence_boxes=[Box(10.0, 8.0, 30.0, 28.0, "lesion")] if step > 1 else [],
                    image=vimage, width=64, height=48, modality="CT" if c % 2 else "MR",
                    body_region="ABDOMEN", source_dataset="Med-R2 synthetic phantoms", license="CC0-1.0",
                    variant_id=item_id * 10 + k, variant_kind=kind,
                    parent_variant_id=None if kind == "clean" else item_id * 10, variant_params={"seed": k},
                    cue_letter=cue))
    rows.sort(key=lambda r: (["train", "val", "test"].index(r.split), r.chain_id, r.step, r.variant_kind, r.variant_id))
    taxonomy = [{"stage": s, "stage_name": dict(STAGES)[s], "category": code, "category_name": name,
                 "answer_type": at} for code, name, s, at in CATEGORIES]
    return Snapshot(
        name="med-r2-test", version=version, title="Med-R2 test release", description="A synthetic release.",
        license="CC-BY-4.0", created="2026-12-01", homepage="https://example.org/med-r2", rows=rows,
        images=dict(sorted(images.items())), taxonomy=taxonomy, taxonomy_version="0" * 64,
        reference_standard={"annotators": 2, "adjudicators": 1, "agreement": {"organ": {"kappa": 0.81, "n": 12}},
                            "outcomes": {"confirmed": 3, "corrected": 1}},
        shortcut_audit={"seq": 1, "passed": True, "blind_accuracy": 0.31, "chance": 0.3},
        excluded={"rejected": 1, "ambiguous": 0, "open_case": 2, "included_anyway": {}},
        changes=[Change("added", "key-0-1", None, 1, "new item")] if previous else [],
        previous_version=previous, audit_head="a" * 64,
        deidentification={"profile": "DICOM PS3.15 Annex E Basic", "revision": "2024b"})
