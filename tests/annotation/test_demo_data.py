"""The demo loader: phantoms with ground-truth findings, real packaged images, idempotent."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from accounts.roles import Role
from annotation.models import Finding, GroundingBox, Image
from annotation.phantoms import generate_phantom
from annotation.services.demo import PHANTOM_DATASET
from audit.services import audit_verify

pytestmark = pytest.mark.django_db


def test_demo_data_loads_phantoms_with_their_ground_truth_and_real_images(users):
    annotator = users[Role.ANNOTATOR]
    call_command("load_demo_data", "--phantoms", "4", "--assign-to", annotator.username)

    phantoms = Image.objects.filter(source_dataset=PHANTOM_DATASET).order_by("id")
    assert phantoms.count() == 4
    assert set(Image.objects.exclude(source_dataset=PHANTOM_DATASET).values_list("source_format", flat=True)) == {"dicom", "nifti"}
    assert Image.objects.filter(source_dataset="pydicom test data").count() == 2

    for index, image in enumerate(phantoms):
        truth = generate_phantom(index, seed=0)
        assert (image.width, image.height) == (truth.width, truth.height)
        assert image.modality == truth.modality
        lesions = GroundingBox.objects.filter(image=image, finding__kind=Finding.Kind.LESION)
        assert sorted(b.xyxy for b in lesions) == sorted(tuple(float(v) for v in l.box) for l in truth.lesions)
        anatomy = {b.label: b.xyxy for b in GroundingBox.objects.filter(image=image, finding__kind=Finding.Kind.ANATOMY)}
        assert anatomy == {k: tuple(float(v) for v in box) for k, box in truth.organs.items()}
    # phantoms of one synthetic patient share a split group; de-identified, so not the raw key
    groups = list(phantoms.values_list("split_group", flat=True))
    assert groups[0] == groups[1] and groups[0] != groups[2] and "PHANTOM" not in groups[0]
    assert set(annotator.assigned_images.values_list("pk", flat=True)) == set(phantoms.values_list("pk", flat=True))

    before = (Image.objects.count(), Finding.objects.count())
    call_command("load_demo_data", "--phantoms", "4")
    assert (Image.objects.count(), Finding.objects.count()) == before
    assert audit_verify().ok
