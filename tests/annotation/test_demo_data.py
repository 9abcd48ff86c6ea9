"""The demo loader: phantoms with ground-truth findings, real packaged images, idempotent."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from accounts.roles import Role
from annotation.models import Finding, GroundingBox, Image
from annotation.phantoms import generate_phantom
from annotation.services.demo import PHANTOM_DATASET
from annotation.services.images import BytesSource, image_metadata_update, images_import
from audit.models import AuditEvent
from audit.services import audit_verify

pytestmark = pytest.mark.django_db


def test_demo_data_loads_phantoms_with_their_ground_truth_and_real_images(users):
    annotator = users[Role.ANNOTATOR]
    call_command("load_demo_data", "--phantoms", "4", "--assign-to", annotator.username)

    phantoms = Image.objects.filter(source_dataset=PHANTOM_DATASET).order_by("id")
    assert phantoms.count() == 4
    packaged = Image.objects.exclude(source_dataset=PHANTOM_DATASET)
    assert set(packaged.values_list("source_format", flat=True)) == {"dicom", "nifti"}
    assert Image.objects.filter(source_dataset="pydicom test data").count() == 2

    for index, image in enumerate(phantoms):
        truth = generate_phantom(index, seed=0)
        assert (image.width, image.height) == (truth.width, truth.height)
        assert image.modality == truth.modality
        lesions = GroundingBox.objects.filter(image=image, finding__kind=Finding.Kind.LESION)
        assert sorted(b.xyxy for b in lesions) == sorted(tuple(float(v) for v in l.box) for l in truth.lesions)
        anatomy = {b.label: b.xyxy
                   for b in GroundingBox.objects.filter(image=image, finding__kind=Finding.Kind.ANATOMY)}
        assert anatomy == {k: tuple(float(v) for v in box) for k, box in truth.organs.items()}
        # image-level ground truth reaches Image.metadata (the plane through ingest's DICOM reading)
        assert image.metadata["image_quality"] == truth.image_quality
        assert image.metadata["contrast_phase"] == truth.contrast_phase
        assert image.metadata["plane"] == truth.plane
        for finding in Finding.objects.filter(image=image, kind=Finding.Kind.LESION):
            assert finding.attributes["severity"] in ("mild", "moderate", "severe")
            enhanced = truth.contrast_phase in ("arterial phase", "portal venous phase")
            assert ("enhancement" in finding.attributes) == enhanced
            assert ("grade" in finding.attributes) <= (finding.attributes["lesion_class"] == "malignant")
    # phantoms of one synthetic patient share a split group; de-identified, so not the raw key
    groups = list(phantoms.values_list("split_group", flat=True))
    assert groups[0] == groups[1] and groups[0] != groups[2] and "PHANTOM" not in groups[0]
    assert set(annotator.assigned_images.values_list("pk", flat=True)) == set(phantoms.values_list("pk", flat=True))

    updates = AuditEvent.objects.filter(action="annotation.image.metadata_update")
    assert updates.count() == 4
    assert {e.after["image_quality"] for e in updates} == {generate_phantom(i).image_quality for i in range(4)}

    before = (Image.objects.count(), Finding.objects.count(), updates.count())
    call_command("load_demo_data", "--phantoms", "4")
    assert (Image.objects.count(), Finding.objects.count(), updates.count()) == before
    assert audit_verify().ok


@pytest.fixture
def png_image(curator):
    from tests.conftest import png_bytes
    return images_import(sources=[BytesSource("x.png", png_bytes(size=(100, 60)))], actor=curator).images.get()


def test_image_metadata_update_merges_audits_and_skips_no_ops(png_image, curator):
    image = png_image
    original = dict(image.metadata)
    image_metadata_update(image=image, values={"image_quality": "motion artifact", "contrast_phase": "T1-weighted"},
                          actor=curator)
    image.refresh_from_db()
    assert image.metadata == {**original, "image_quality": "motion artifact", "contrast_phase": "T1-weighted"}
    event = AuditEvent.objects.filter(action="annotation.image.metadata_update").get()
    assert event.actor == curator and event.object_id == str(image.pk)
    assert event.before == {"image_quality": None, "contrast_phase": None}
    assert event.after == {"image_quality": "motion artifact", "contrast_phase": "T1-weighted"}

    image_metadata_update(image=image, values={"image_quality": "motion artifact"}, actor=None)   # no change
    image_metadata_update(image=image, values={"contrast_phase": None}, actor=None)              # removal
    image.refresh_from_db()
    assert "contrast_phase" not in image.metadata and image.metadata["image_quality"] == "motion artifact"
    assert AuditEvent.objects.filter(action="annotation.image.metadata_update").count() == 2
    assert audit_verify().ok


@pytest.mark.parametrize("values", [{}, {"": "x"}, {"image_quality": ["a list"]}, {"k": {"nested": 1}}, "text"])
def test_image_metadata_update_refuses_bad_values_and_changes_nothing(png_image, values):
    before = dict(png_image.metadata)
    with pytest.raises(ValueError):
        image_metadata_update(image=png_image, values=values, actor=None)
    png_image.refresh_from_db()
    assert png_image.metadata == before
    assert not AuditEvent.objects.filter(action="annotation.image.metadata_update").exists()
