"""ZIP archives over HTTP (the upload page and the API) and on the command line: members imported,
and every refused member reported under its own name with a reason (path traversal, nested archive,
zip bomb), never dropped silently."""
from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from pydicom.data import get_testdata_file

from annotation.ingest import IngestError, SourceLimits, iter_uploads
from annotation.models import Image, ImportBatch, ImportFileResult
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name), data, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def _study_zip() -> bytes:
    with open(get_testdata_file("CT_small.dcm"), "rb") as fh:
        ct = fh.read()
    return _zip({
        "study/ct.dcm": ct,
        "study/key.png": png_bytes(color=77),
        "../escape.png": png_bytes(color=78),
        "/etc/absolute.png": png_bytes(color=79),
        "study/inner.zip": _zip({"x.png": png_bytes(color=80)}),
        "study/disguised.dcm": _zip({"y.png": png_bytes(color=81)}),   # an archive by content, not name
        "study/bomb.dcm": b"\x00" * (16 * 1024 * 1024),                # ~16 KB deflated: 1000:1
        "study/.DS_Store": b"finder clutter",
    })


def _outcomes(batch: ImportBatch) -> dict[str, tuple[str, str, str]]:
    return {r.name: (r.status, r.code, r.message) for r in ImportFileResult.objects.filter(batch=batch)}


def _check_report(outcomes: dict) -> None:
    assert outcomes["study.zip/study/ct.dcm"][0] == "imported"
    assert outcomes["study.zip/study/key.png"][0] == "imported"
    assert outcomes["study.zip/../escape.png"][1:] == ("unsafe_path", outcomes["study.zip/../escape.png"][2])
    assert "'..'" in outcomes["study.zip/../escape.png"][2]
    assert outcomes["study.zip//etc/absolute.png"][1] == "unsafe_path"
    assert "absolute path" in outcomes["study.zip//etc/absolute.png"][2]
    for nested in ("study.zip/study/inner.zip", "study.zip/study/disguised.dcm"):
        assert outcomes[nested][1] == "unsupported_format" and "nested archive" in outcomes[nested][2]
    assert outcomes["study.zip/study/bomb.dcm"][1] == "too_large"
    assert "zip bomb" in outcomes["study.zip/study/bomb.dcm"][2]
    assert not any(".DS_Store" in name for name in outcomes)  # clutter is skipped, not an image
    assert len(outcomes) == 7


@pytest.fixture
def client(curator, storage_root):
    client = Client()
    client.force_login(curator)
    return client


def test_upload_page_imports_a_zip_and_reports_every_member(client):
    response = client.post(reverse("annotation:image-import"),
                           {"files": [SimpleUploadedFile("study.zip", _study_zip(), content_type="application/zip")]})
    assert response.status_code == 302
    batch = ImportBatch.objects.get()
    _check_report(_outcomes(batch))
    assert Image.objects.count() == 2
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert b"study.zip/../escape.png" in page.content and b"Unsafe path" in page.content


def test_upload_api_imports_a_zip_spooled_to_disk(client, settings):
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024  # the upload becomes a temporary file, as big ones do
    response = client.post(reverse("annotation:api-image-upload"),
                           {"files": [SimpleUploadedFile("study.zip", _study_zip())], "source_dataset": "zipped"})
    assert response.status_code == 201
    body = response.json()
    assert body["files_imported"] == 2 and body["files_failed"] == 5 and body["images_created"] == 2
    _check_report({f["name"]: (f["status"], f["code"], f["message"]) for f in body["files"]})
    assert set(Image.objects.values_list("source_dataset", flat=True)) == {"zipped"}


def test_a_zip_with_too_many_members_is_refused_whole(client, settings):
    settings.MEDR2_ZIP_MAX_MEMBERS = 3
    archive = _zip({f"{i}.png": png_bytes(color=i) for i in range(5)})
    body = client.post(reverse("annotation:api-image-upload"),
                       {"files": [SimpleUploadedFile("many.zip", archive)]}).json()
    assert [(f["name"], f["code"]) for f in body["files"]] == [("many.zip", "too_large")]
    assert "5 members, more than 3" in body["files"][0]["message"]


def test_a_page_upload_over_the_limit_is_refused_from_its_size_without_being_read(settings):
    settings.MEDR2_UPLOAD_MAX_BYTES = 100

    class Unreadable(io.BytesIO):
        def read(self, *args):
            raise AssertionError("an oversized upload must not be read")

    (ref,) = iter_uploads([("huge.dcm", Unreadable(b"x" * 300), 300)], limits=SourceLimits(max_file_bytes=1000),
                          max_upload_bytes=100)
    with pytest.raises(IngestError) as err:
        ref.read()
    assert err.value.code == "too_large"


def test_the_page_records_an_oversized_upload_as_too_large(client, settings):
    settings.MEDR2_UPLOAD_MAX_BYTES = 100
    client.post(reverse("annotation:image-import"), {"files": [SimpleUploadedFile("big.png", b"x" * 500)]})
    (result,) = ImportFileResult.objects.all()
    assert (result.name, result.code) == ("big.png", "too_large")


def test_the_command_reports_traversal_members_instead_of_dropping_them(tmp_path, curator, storage_root):
    path = tmp_path / "study.zip"
    path.write_bytes(_zip({"ok.png": png_bytes(color=12), "../../escape.png": png_bytes(color=13)}))
    call_command("import_images", str(path), "--user", curator.username, "--no-progress", stdout=io.StringIO())
    outcomes = _outcomes(ImportBatch.objects.get())
    assert outcomes["study.zip/ok.png"][0] == "imported"
    assert outcomes["study.zip/../../escape.png"][1] == "unsafe_path"
