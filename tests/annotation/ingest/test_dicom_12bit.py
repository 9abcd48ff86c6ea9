"""12-bit DICOM JPEG: JPEG Extended (process 4, 1.2.840.10008.1.2.4.51) and JPEG Lossless SV1 at 12 and 16 bits.

pydicom ships no usable example (its JPEG-lossy.dcm is damaged), so each test encodes a synthetic CT slice itself
with imagecodecs (libjpeg-turbo 3, a pinned test dependency), checks from the JPEG frame header that the stream
really is what it claims, wraps it as a DICOM file and imports that through the decoder and the import service."""
from __future__ import annotations

import io
import logging

import numpy as np
import pydicom
import pytest
from PIL import Image as PILImage
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.encaps import encapsulate, generate_frames
from pydicom.uid import UID, CTImageStorage, JPEGExtended12Bit, JPEGLosslessSV1, generate_uid

from annotation import storage
from annotation.ingest import DecodeOptions, decode
from annotation.models import Image, ImportFileResult
from annotation.services.images import images_import, path_sources

try:
    import imagecodecs
except ImportError:  # reported by `_encode`, as a failure: the package is pinned in requirements.txt
    imagecodecs = None

SOF1_EXTENDED, SOF3_LOSSLESS = 0xFFC1, 0xFFC3
INTERCEPT = -1024.0  # stored 0 is air, as on a CT
#: (transfer syntax, bits stored, SOF marker the stream must carry)
CASES = {
    "extended-12": (JPEGExtended12Bit, 12, SOF1_EXTENDED),
    "lossless-12": (JPEGLosslessSV1, 12, SOF3_LOSSLESS),
    "lossless-16": (JPEGLosslessSV1, 16, SOF3_LOSSLESS),
}


def _phantom(bits: int) -> np.ndarray:
    """A CT-like slice in stored values 0..2**bits-1: air at 0, a body ellipse of soft tissue with a smooth
    gradient and seeded noise, a bone ring near the top of the range and a dense insert at its very top."""
    top = 2 ** bits - 1
    y, x = np.mgrid[-1:1:192j, -1:1:256j]
    r = (x / 0.9) ** 2 + (y / 0.75) ** 2
    body = r < 1
    img = np.zeros(r.shape)
    img[body] = top * (0.25 + 0.1 * (x[body] + 1)) + np.random.default_rng(0).normal(0, 0.004 * top, body.sum())
    img[(r >= 0.8) & body] = 0.85 * top
    img[(x - 0.3) ** 2 + y ** 2 < 0.02] = top
    return np.clip(np.rint(img), 0, top).astype(np.uint16)


def _encode(src: np.ndarray, tsuid: UID, bits: int) -> bytes:
    if imagecodecs is None:
        pytest.fail("imagecodecs is not installed: it is a pinned test dependency (requirements.txt) that writes "
                    "the 12-bit JPEG streams these tests import; run .venv/bin/pip install -r requirements.txt")
    if tsuid == JPEGExtended12Bit:
        return imagecodecs.jpeg8_encode(src, level=95, bitspersample=bits)
    return imagecodecs.jpeg8_encode(src, lossless=True, predictor=1, bitspersample=bits)


def _frame_header(jpeg: bytes) -> tuple[int, int]:
    """(SOFn marker, sample precision) of a JPEG stream, found by walking its segments from SOI."""
    assert jpeg[:2] == b"\xff\xd8", "not a JPEG stream"
    pos = 2
    while pos + 5 <= len(jpeg) and jpeg[pos] == 0xFF:
        marker = jpeg[pos + 1]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # DHT, JPG and DAC are not frames
            return 0xFF00 | marker, jpeg[pos + 4]
        pos += 2 + int.from_bytes(jpeg[pos + 2:pos + 4], "big")
    raise AssertionError("no SOF marker before the scan")


def _dicom(src: np.ndarray, jpeg: bytes, tsuid: UID, bits: int) -> bytes:
    ds = Dataset()
    ds.file_meta = FileMetaDataset()
    ds.file_meta.TransferSyntaxUID = tsuid
    ds.file_meta.MediaStorageSOPClassUID = ds.SOPClassUID = CTImageStorage
    ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID = generate_uid()
    ds.StudyInstanceUID, ds.SeriesInstanceUID = generate_uid(), generate_uid()
    ds.PatientName, ds.PatientID, ds.Modality, ds.BodyPartExamined = "Doe^Jane", "PID-12BIT", "CT", "ABDOMEN"
    ds.Rows, ds.Columns = src.shape
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, bits, bits - 1, 0
    ds.RescaleIntercept, ds.RescaleSlope = INTERCEPT, 1.0
    ds.PixelData = encapsulate([jpeg])
    ds["PixelData"].VR = "OB"
    buf = io.BytesIO()
    ds.save_as(buf, enforce_file_format=True)
    return buf.getvalue()


def _case(name: str) -> tuple[np.ndarray, bytes, bytes]:
    """(source values, JPEG stream, DICOM file) of one case; asserts the stream's frame header first, so a test
    can never pass on a baseline 8-bit stream."""
    tsuid, bits, sof = CASES[name]
    src = _phantom(bits)
    jpeg = _encode(src, tsuid, bits)
    assert _frame_header(jpeg) == (sof, bits), f"expected SOF {sof:#06x} with {bits}-bit precision"
    return src, jpeg, _dicom(src, jpeg, tsuid, bits)


@pytest.mark.parametrize("name", list(CASES))
def test_12_and_16_bit_jpeg_dicom_decodes_to_the_source_values(name, caplog):
    tsuid, bits, _ = CASES[name]
    src, _, data = _case(name)
    caplog.set_level(logging.DEBUG)
    source = decode(data, name=f"{name}.dcm", options=DecodeOptions())

    assert source.format == "dicom" and len(source.frames) == 1
    assert source.metadata["transfer_syntax_uid"] == tsuid and source.metadata["bits_stored"] == bits
    stored = source.frames[0].pixels - INTERCEPT  # back from the Modality LUT to stored values
    assert stored.shape == src.shape and stored.max() > 2 ** (bits - 1)  # the high bits are real
    error = np.abs(stored - src.astype(np.float32))
    if tsuid == JPEGExtended12Bit:  # lossy: close to the source, well inside 1% of the 12-bit range
        assert error.mean() < 0.01 * 4095 and np.percentile(error, 99) < 0.05 * 4095, (error.mean(), error.max())
    else:
        assert error.max() == 0
    assert not [r for r in caplog.records if r.exc_info or r.name.split(".")[0] in ("pydicom", "pylibjpeg")], \
        "a library logged during the import"


@pytest.mark.parametrize("name", list(CASES))
def test_12_and_16_bit_jpeg_dicom_renders_with_the_full_range_windowed(name):
    src, _, data = _case(name)
    frame = decode(data, name=f"{name}.dcm", options=DecodeOptions()).frames[0]
    rendered = np.asarray(frame.rendered)
    assert frame.rendered.mode == "L" and frame.window_source == "auto_percentile"
    # air black, bone white, and the 8-bit picture follows the 12/16-bit values (no wrap-around, no truncation
    # of the high bits)
    assert rendered[src == 0].max() <= 5 and rendered[src == src.max()].min() >= 250
    assert np.corrcoef(rendered.ravel(), src.ravel())[0, 1] > 0.95


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["extended-12", "lossless-16"])
def test_12_bit_jpeg_dicom_file_imports_through_the_service(name, tmp_path, curator):
    tsuid, bits, _ = CASES[name]
    src, jpeg, data = _case(name)
    path = tmp_path / f"{name}.dcm"
    path.write_bytes(data)

    batch = images_import(sources=path_sources([str(path)]), actor=curator)

    result = ImportFileResult.objects.get(batch=batch)
    assert (result.status, result.code, result.message) == ("imported", "", "")
    image = Image.objects.get()
    assert (image.source_format, image.modality, image.body_region) == ("dicom", "CT", "ABDOMEN")
    assert (image.width, image.height) == (src.shape[1], src.shape[0])
    assert image.metadata["transfer_syntax_uid"] == tsuid and image.metadata["bits_stored"] == bits
    png = PILImage.open(storage.resolve(image.file))
    assert png.size == (image.width, image.height) and png.mode == "L"
    stored = pydicom.dcmread(io.BytesIO(storage.resolve(image.source_file).read_bytes()))
    assert stored.PatientIdentityRemoved == "YES" and str(stored.PatientName) != "Doe^Jane"
    # the compressed stream is kept as it came (no second lossy generation) and still decodes
    assert stored.file_meta.TransferSyntaxUID == tsuid
    assert next(generate_frames(stored.PixelData, number_of_frames=1)) == jpeg
    assert stored.pixel_array.max() > 2 ** (bits - 1)
