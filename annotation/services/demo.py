"""Demo data: synthetic phantoms with known lesions (ground-truth findings and boxes) plus the
real DICOM / NIfTI images that ship inside pydicom and nibabel. Idempotent: running it again
skips what is already imported."""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.ingest import iter_sources
from annotation.models import Finding, Image, ImportBatch
from annotation.phantoms import write_phantoms
from annotation.services.findings import finding_create
from annotation.services.images import (
    BytesSource,
    ImportDefaults,
    image_assign,
    image_import_source,
    image_metadata_update,
    import_batch_finish,
    import_batch_start,
)

PHANTOM_DATASET = "Med-R2 synthetic phantoms"
PHANTOM_LICENSE = "CC0-1.0 (generated)"
_SUMMARY_KEY = {"imported": "{kind}_imported", "duplicate": "duplicates", "failed": "failed"}
# image-level ground truth copied into Image.metadata (plane only where ingest did not read it)
IMAGE_FACTS = ("image_quality", "contrast_phase", "plane")


@dataclass(frozen=True)
class PackagedImage:
    path: str
    source_dataset: str
    license: str
    modality: str = ""
    body_region: str = ""


def packaged_images() -> list[PackagedImage]:
    """Real medical images bundled with the pydicom and nibabel packages (no download)."""
    from nibabel.testing import data_path
    from pydicom.data import get_testdata_file

    return [
        PackagedImage(get_testdata_file("CT_small.dcm"), "pydicom test data", "pydicom package data (MIT)",
                      body_region="CHEST"),
        PackagedImage(get_testdata_file("MR_small.dcm"), "pydicom test data", "pydicom package data (MIT)",
                      body_region="HEAD"),
        PackagedImage(os.path.join(data_path, "anatomical.nii"), "nibabel test data", "nibabel package data (MIT)",
                      modality="MR", body_region="HEAD"),
    ]


def demo_load(*, phantoms: int, seed: int = 0, actor=None, progress: Callable[[str], None] | None = None,
              assign_to: list[str] = ()) -> dict:
    say = progress or (lambda msg: None)
    summary = {"phantoms_imported": 0, "findings_created": 0, "packaged_imported": 0, "duplicates": 0, "failed": 0}

    with tempfile.TemporaryDirectory(prefix="medr2-phantoms-") as tmp:
        say(f"generating {phantoms} synthetic phantoms (seed {seed}) ...")
        paths = write_phantoms(Path(tmp), phantoms, seed=seed)
        defaults = ImportDefaults(source_dataset=PHANTOM_DATASET, license=PHANTOM_LICENSE)
        batch = import_batch_start(actor=actor, source=ImportBatch.Source.DEMO, defaults=defaults)
        for path in paths:
            source = BytesSource(path.name, path.read_bytes())
            result = image_import_source(batch=batch, source=source, actor=actor, defaults=defaults)
            summary[_SUMMARY_KEY[result.status].format(kind="phantoms")] += 1
            if result.status == "imported":
                truth = json.loads(path.with_suffix(".json").read_text())
                for image in result.images.all():
                    summary["findings_created"] += _ground_truth_findings(image, truth, actor)
        import_batch_finish(batch=batch, actor=actor)
        say(f"phantoms: {summary['phantoms_imported']} imported, {summary['findings_created']} ground-truth findings")
        phantom_images = Image.objects.filter(source_dataset=PHANTOM_DATASET)
        for user in get_user_model().objects.filter(username__in=assign_to):
            image_assign(images=phantom_images, user=user, actor=actor)
            say(f"assigned {phantom_images.count()} phantom images to {user.get_username()}")

    for item in packaged_images():
        defaults = ImportDefaults(source_dataset=item.source_dataset, license=item.license,
                                  modality=item.modality, body_region=item.body_region)
        batch = import_batch_start(actor=actor, source=ImportBatch.Source.DEMO, defaults=defaults)
        for source in iter_sources([item.path], max_file_bytes=settings.MEDR2_MAX_FILE_BYTES):
            result = image_import_source(batch=batch, source=source, actor=actor, defaults=defaults)
            summary[_SUMMARY_KEY[result.status].format(kind="packaged")] += 1
        import_batch_finish(batch=batch, actor=actor)
    say(f"packaged real images: {summary['packaged_imported']} file(s) imported")
    return summary


def _ground_truth_findings(image: Image, truth: dict, actor) -> int:
    """Phantom organs become anatomy findings, lesions become lesion findings (severity, grade and
    enhancement among their attributes), each with its box; image quality and contrast phase (and the
    plane, if ingest did not record it) go into Image.metadata."""
    created = 0
    with transaction.atomic():
        facts = {k: truth[k] for k in IMAGE_FACTS if truth.get(k) and not (image.metadata or {}).get(k)}
        if facts:
            image_metadata_update(image=image, values=facts, actor=actor)
            image.refresh_from_db(fields=["metadata"])
        for organ, box in sorted(truth.get("organs", {}).items()):
            finding_create(image=image, kind=Finding.Kind.ANATOMY, label=organ, actor=actor,
                           source=Finding.Source.PHANTOM, attributes={"organ": organ}, box=tuple(box))
            created += 1
        for lesion in truth.get("lesions", []):
            attributes = {k: v for k, v in lesion.items() if k not in ("box", "label", "center")}
            finding_create(image=image, kind=Finding.Kind.LESION, label=lesion["label"], actor=actor,
                           source=Finding.Source.PHANTOM, attributes=attributes, box=tuple(lesion["box"]))
            created += 1
    return created
