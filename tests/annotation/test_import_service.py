"""Importing through the service, the command and the upload API: rows, files, de-identification,
failures that leave nothing behind, duplicates, and no patient data in logs."""
from __future__ import annotations

import io
import logging
import zipfile
from pathlib import Path

import pydicom
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from PIL import Image as PILImage

from annotation import storage
from annotation.models import Image, ImportBatch, ImportFileResult
from annotation.services.images import BytesSource, images_import
from audit.models import AuditEvent
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db


def _stored_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _import(*sources, actor=None, **kw) -> ImportBatch:
    return images_import(sources=list(sources), actor=actor, **kw)


def _phi_values(path) -> list[str]:
    """Identifying values of the original file. Values that are also a substring of an attribute
    the profile keeps (MR_small's InstitutionName 'TOSHIBA' inside Manufacturer 'TOSHIBA_MEC')
    cannot be searched for in raw bytes and are checked tag by tag instead."""
    ds = pydicom.dcmread(path)
    kept = " ".join(str(ds.get(k, "")) for k in ("Manufacturer", "ManufacturerModelName"))
    values = [str(ds.get(k, "")) for k in ("PatientName", "PatientID", "PatientBirthDate", "InstitutionName",
                                            "ReferringPhysicianName", "AccessionNumber", "StudyInstanceUID",
                                            "SeriesInstanceUID", "SOPInstanceUID")]
    return [v for v in values if len(v) >= 4 and v not in kept]


@pytest.mark.parametrize("key", ["CT", "MR"])
def test_import_real_dicom_deidentified_tag_by_tag(key, real_dicom_paths, storage_root, curator):
    path = real_dicom_paths[key]
    original = pydicom.dcmread(path)
    call_command("import_images", path, "--user", curator.username, "--no-progress")

    image = Image.objects.get()
    assert image.source_format == "dicom" and image.modality == key
    assert (image.width, image.height) == (original.Columns, original.Rows)
    assert image.window_source in ("dicom_tag", "auto_percentile")
    assert image.split_group.startswith("pt-")
    png = PILImage.open(storage.resolve(image.file))
    assert png.size == (image.width, image.height) and png.mode in ("L", "RGB")

    stored_bytes = storage.resolve(image.source_file).read_bytes()
    stored = pydicom.dcmread(io.BytesIO(stored_bytes))
    assert stored.PatientIdentityRemoved == "YES"
    assert stored.preamble == b"\x00" * 128
    assert "InstitutionName" not in stored or stored.InstitutionName in ("", "ANONYMOUS")
    assert "PS3.15" in str(stored.DeidentificationMethod)
    for keyword in ("PatientName", "PatientID"):
        assert str(stored.get(keyword, "")) != str(original.get(keyword, "")) or not str(original.get(keyword, ""))
    assert ("PatientBirthDate" not in stored or stored.PatientBirthDate in ("", None)
            or stored.PatientBirthDate != original.get("PatientBirthDate"))
    for keyword in ("StudyInstanceUID", "SeriesInstanceUID", "SOPInstanceUID"):
        if keyword in original:
            assert stored[keyword].value != original[keyword].value
    assert stored.file_meta.MediaStorageSOPInstanceUID == stored.SOPInstanceUID
    assert not any(elem.tag.is_private for elem in stored.iterall())
    for value in _phi_values(path):
        assert value.encode() not in stored_bytes, f"original value of length {len(value)} survived de-identification"
    # the pixels are untouched
    assert (stored.pixel_array == original.pixel_array).all()
    # audited, with what de-identification did but no values
    event = AuditEvent.objects.get(action="annotation.image.import")
    assert event.after["image_ids"] == [image.pk]
    for value in _phi_values(path):
        assert value not in event.canonical


def test_import_nifti_slices_with_modality_default(nifti_path, storage_root):
    import nibabel

    shape = nibabel.load(nifti_path).shape
    call_command("import_images", nifti_path, "--modality", "MR", "--body-region", "HEAD", "--no-progress")
    images = Image.objects.order_by("frame_index")
    assert 0 < images.count() <= shape[2]
    assert {i.modality for i in images} == {"MR"} and {i.source_format for i in images} == {"nifti"}
    assert len({i.source_file for i in images}) == 1  # one stored de-identified volume
    assert storage.resolve(images[0].source_file).name.endswith(".nii.gz")


def test_nifti_middle_slice_only(nifti_path):
    call_command("import_images", nifti_path, "--nifti-slices", "middle", "--no-progress")
    assert Image.objects.count() == 1


def test_corrupt_file_leaves_nothing_behind(storage_root, tmp_path):
    bad = tmp_path / "broken.dcm"
    bad.write_bytes(b"\x00" * 128 + b"DICM" + b"\x02\x00\x10\x00garbage" * 10)
    before = AuditEvent.objects.filter(action="annotation.image.import").count()
    with pytest.raises(CommandError, match="no file could be imported"):
        call_command("import_images", str(bad), "--no-progress")
    result = ImportFileResult.objects.get()
    assert result.status == "failed" and result.code == "corrupt"
    assert Image.objects.count() == 0
    assert _stored_files(storage_root) == []
    assert AuditEvent.objects.filter(action="annotation.image.import").count() == before


def test_truncated_dicom_rejected_batch_goes_on(real_dicom_paths, storage_root, tmp_path):
    data = Path(real_dicom_paths["CT"]).read_bytes()
    truncated = tmp_path / "truncated.dcm"
    truncated.write_bytes(data[: len(data) // 2])
    call_command("import_images", str(truncated), real_dicom_paths["MR"], "--no-progress")
    results = {r.name.rsplit("/", 1)[-1]: r for r in ImportFileResult.objects.all()}
    assert results["truncated.dcm"].status == "failed" and results["truncated.dcm"].code == "corrupt"
    assert results["MR_small.dcm"].status == "imported"
    assert Image.objects.count() == 1
    # only the MR image's files are stored: its PNG and its de-identified source
    assert len(_stored_files(storage_root)) == 2


def test_duplicate_is_skipped_and_reported(real_dicom_paths):
    first = _import(BytesSource("a.dcm", Path(real_dicom_paths["CT"]).read_bytes()))
    second = _import(BytesSource("copy-of-a.dcm", Path(real_dicom_paths["CT"]).read_bytes()))
    assert (first.files_imported, second.files_imported, second.files_duplicate) == (1, 0, 1)
    assert Image.objects.count() == 1
    assert second.files.get().images_duplicate == 1


def test_decompression_bomb_is_refused(settings, storage_root):
    settings.MEDR2_MAX_IMAGE_PIXELS = 10_000
    batch = _import(BytesSource("big.png", png_bytes(size=(200, 200))))
    result = batch.files.get()
    assert (result.status, result.code) == ("failed", "too_large")
    assert Image.objects.count() == 0 and _stored_files(storage_root) == []


def test_exif_orientation_applied_and_stripped():
    img = PILImage.new("RGB", (40, 20), (200, 10, 10))
    exif = PILImage.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to display
    buf = io.BytesIO()
    img.save(buf, format="JPEG", exif=exif.tobytes())
    _import(BytesSource("phone.jpg", buf.getvalue()))
    image = Image.objects.get()
    assert (image.width, image.height) == (20, 40)
    stored = PILImage.open(storage.resolve(image.file))
    assert stored.size == (20, 40)
    assert not stored.getexif()


def test_zip_with_good_and_bad_members(tmp_path, real_dicom_paths):
    archive = tmp_path / "batch.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("scans/one.png", png_bytes(color=10))
        zf.writestr("scans/two.png", png_bytes(color=20))
        zf.writestr("scans/notes.txt", b"not an image")
        zf.write(real_dicom_paths["MR"], "scans/mr.dcm")
    call_command("import_images", str(archive), "--no-progress")
    statuses = sorted((r.name.rsplit("/", 1)[-1], r.status) for r in ImportFileResult.objects.all())
    assert statuses == [("mr.dcm", "imported"), ("notes.txt", "failed"), ("one.png", "imported"),
                        ("two.png", "imported")]
    assert ImportFileResult.objects.get(name__endswith="notes.txt").code == "unsupported_format"


def test_storage_failure_mid_file_rolls_back_rows_and_files(monkeypatch, nifti_path, storage_root):
    from annotation.services import ingest_commit as images_service  # the engine's write side stores files

    calls = {"n": 0}
    real_put = images_service.put_bytes

    def flaky_put(data, **kw):  # the disk fills up after a few files
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError("No space left on device")
        return real_put(data, **kw)

    monkeypatch.setattr(images_service, "put_bytes", flaky_put)
    with pytest.raises(OSError):
        _import(BytesSource("anatomical.nii", Path(nifti_path).read_bytes()))
    assert Image.objects.count() == 0
    assert _stored_files(storage_root) == []


def test_no_patient_data_in_logs(caplog, real_dicom_paths, tmp_path):
    caplog.set_level(logging.DEBUG)
    bad = tmp_path / "bad.dcm"
    bad.write_bytes(Path(real_dicom_paths["CT"]).read_bytes()[:300])
    call_command("import_images", real_dicom_paths["CT"], str(bad), "--no-progress")
    text = caplog.text
    for value in _phi_values(real_dicom_paths["CT"]):
        assert value not in text


def test_upload_api_reports_each_file(curator):
    client = Client()
    client.force_login(curator)
    files = [
        SimpleUploadedFile("ok.png", png_bytes(color=33), content_type="image/png"),
        SimpleUploadedFile("junk.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, content_type="image/png"),
    ]
    response = client.post(reverse("annotation:api-image-upload"),
                           {"files": files, "source_dataset": "unit", "license": "CC0"})
    assert response.status_code == 201
    body = response.json()
    assert body["files_imported"] == 1 and body["files_failed"] == 1
    junk = next(f for f in body["files"] if f["name"] == "junk.png")
    assert junk["status"] == "failed" and junk["code"] == "corrupt" and junk["message"]
    image = Image.objects.get()
    assert (image.source_dataset, image.license) == ("unit", "CC0")

    only_bad = client.post(reverse("annotation:api-image-upload"), {"files": [SimpleUploadedFile("x.bin", b"nope")]})
    assert only_bad.status_code == 422
    assert only_bad.json()["files"][0]["code"] == "unsupported_format"
    assert client.post(reverse("annotation:api-image-upload"), {}).status_code == 400


def test_upload_page_redirects_to_the_batch_report(curator):
    client = Client()
    client.force_login(curator)
    response = client.post(reverse("annotation:image-import"),
                           {"files": [SimpleUploadedFile("p.png", png_bytes(color=90))]})
    assert response.status_code == 302
    page = client.get(response["Location"])
    assert page.status_code == 200 and b"p.png" in page.content and b"imported" in page.content


def test_losing_a_concurrent_import_race_keeps_the_winners_files(storage_root):
    """Importer A wrote a content-addressed file, importer B committed a row using the same file
    first; when A rolls back it must remove only what nobody references."""
    from annotation.services.images import _discard_unreferenced

    shared = storage.put_bytes(png_bytes(color=5), kind="images", suffix=".png")
    orphan = storage.put_bytes(png_bytes(color=6), kind="images", suffix=".png")
    Image.objects.create(sha256="b" * 64, file=shared.rel_path, width=64, height=48, source_format="png")
    _discard_unreferenced([shared, orphan])
    assert storage.resolve(shared.rel_path).exists()
    assert not storage.resolve(orphan.rel_path).exists()
