"""Stored values for the viewer (annotation/ingest/pixels.py): every decode reproduces the values the
import hashed, in the PNG's layout; the wire format; orientation markers; errors are IngestErrors."""
from __future__ import annotations

import io
import os

import nibabel as nib
import numpy as np
import pydicom
import pytest
from nibabel.testing import data_path
from PIL import Image as PILImage

from annotation.ingest import DecodeOptions, IngestError, decode, pixels
from annotation.phantoms import generate_phantom


def _values(source, frame, *, key="k"):
    src = source.stored_bytes
    return pixels.frame_values(source_format=source.format, frame_index=frame.frame_index, read_source=lambda: src,
                               source_key=key, nifti_axis=source.metadata.get("axis", 2))


def _import_hash(frame) -> str:
    """The importer's frame hash (annotation.services.images.frame_sha256), written out here."""
    import hashlib

    values = np.ascontiguousarray(frame.pixels)
    digest = hashlib.sha256(f"{values.dtype.str}|{values.shape}|".encode())
    digest.update(values.tobytes())
    return digest.hexdigest()


def test_phantom_ct_values_are_hounsfield_units_in_the_png_layout():
    ph = generate_phantom(3, modality="CT", plane="axial")
    source = decode(ph.to_dicom_bytes(), name="ct.dcm", options=DecodeOptions())
    frame = source.frames[0]
    values = _values(source, frame)
    assert values.shape == (ph.height, ph.width) == (frame.rendered.height, frame.rendered.width)
    assert np.array_equal(values, ph.pixels.astype(np.float32))     # rescale intercept -1024 applied
    assert pixels.values_sha256(values) == _import_hash(frame)
    assert pixels.checked(values, _import_hash(frame)) is values


def test_a_source_that_does_not_reproduce_the_frame_is_a_mismatch():
    ph = generate_phantom(3, modality="CT")
    source = decode(ph.to_dicom_bytes(), name="ct.dcm", options=DecodeOptions())
    with pytest.raises(IngestError) as err:
        pixels.checked(_values(source, source.frames[0]) + 1, _import_hash(source.frames[0]))
    assert err.value.code == "mismatch"


def _multiframe_ct(frames: int = 3) -> bytes:
    """A phantom CT file carrying `frames` frames (each the phantom plus 10 HU per frame)."""
    ph = generate_phantom(1, modality="CT")
    ds = pydicom.dcmread(io.BytesIO(ph.to_dicom_bytes()))
    stored = np.stack([ph.pixels.astype(np.int32) + 1024 + 10 * k for k in range(frames)])
    ds.NumberOfFrames = frames
    ds.PixelData = np.clip(stored, 0, 4095).astype("<u2").tobytes()
    buf = io.BytesIO()
    ds.save_as(buf, enforce_file_format=True)
    return buf.getvalue()


def test_multiframe_dicom_gives_the_frame_asked_for():
    source = decode(_multiframe_ct(), name="ct.dcm", options=DecodeOptions())
    assert [f.frame_index for f in source.frames] == [0, 1, 2]
    assert _values(source, source.frames[2])[0, 0] - _values(source, source.frames[0])[0, 0] == 20
    for frame in source.frames:
        assert pixels.values_sha256(_values(source, frame)) == _import_hash(frame)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_nifti_slices_match_the_import_along_each_axis(axis):
    raw = open(os.path.join(data_path, "anatomical.nii"), "rb").read()
    source = decode(raw, name="a.nii", options=DecodeOptions(nifti_axis=axis))
    for frame in source.frames:
        values = _values(source, frame, key=f"anatomical-{axis}")
        assert values.shape == (frame.rendered.height, frame.rendered.width)
        assert pixels.values_sha256(values) == _import_hash(frame)


def test_nifti_scaling_is_applied_and_non_integral_values_travel_as_float32():
    volume = np.arange(4 * 5 * 3, dtype=np.int16).reshape(4, 5, 3)
    image = nib.Nifti1Image(volume, np.eye(4))
    image.header.set_slope_inter(0.5, 10.0)
    source = decode(image.to_bytes(), name="s.nii", options=DecodeOptions())
    frame = source.frames[1]
    values = _values(source, frame, key="scaled")
    assert np.allclose(values, frame.pixels) and values.min() >= 10.0
    encoded = pixels.encode(values)
    assert encoded.dtype == "float32" and (encoded.width, encoded.height) == (4, 5)
    assert np.array_equal(np.frombuffer(encoded.body, "<f4").reshape(5, 4), values)


def test_an_8_bit_raster_gives_its_grey_levels_and_a_colour_one_has_none():
    grey = np.arange(48, dtype=np.uint8).reshape(6, 8) * 5
    buf = io.BytesIO()
    PILImage.fromarray(grey).save(buf, format="PNG")
    assert np.array_equal(pixels.raster_frame(buf.getvalue()), grey)
    buf = io.BytesIO()
    PILImage.new("RGB", (4, 4), (200, 10, 10)).save(buf, format="PNG")
    with pytest.raises(IngestError) as err:
        pixels.raster_frame(buf.getvalue())
    assert err.value.code == "colour"


def test_encode_picks_int16_when_whole_and_in_range_else_float32():
    small = pixels.encode(np.array([[-1024.0, 3071.0]], dtype=np.float32))
    assert small.dtype == "int16" and (small.min, small.max) == (-1024.0, 3071.0)
    assert np.frombuffer(small.body, "<i2").tolist() == [-1024, 3071]
    assert pixels.encode(np.array([[0, 40000]], dtype=np.uint16)).dtype == "float32"
    with_nan = pixels.encode(np.array([[1.0, np.nan]], dtype=np.float32))
    assert with_nan.dtype == "float32" and (with_nan.min, with_nan.max) == (1.0, 1.0)


@pytest.mark.parametrize("data, code", [(b"DICM" * 10, "corrupt"), (b"", "corrupt")])
def test_unreadable_dicom_is_an_ingest_error(data, code):
    with pytest.raises(IngestError) as err:
        pixels.dicom_frame(data, None)
    assert err.value.code == code


def test_damaged_nifti_and_unknown_formats_are_ingest_errors():
    with pytest.raises(IngestError) as err:
        pixels.nifti_frame("broken", lambda: b"\x1f\x8b\x08\x00broken", 0, 2)
    assert err.value.code == "corrupt"
    with pytest.raises(IngestError) as err:
        pixels.frame_values(source_format="mystery", frame_index=None, read_source=bytes, source_key="")
    assert err.value.code == "unsupported_format"


@pytest.mark.parametrize("plane, markers", [
    ("axial", {"left": "R", "right": "L", "top": "A", "bottom": "P"}),
    ("coronal", {"left": "R", "right": "L", "top": "S", "bottom": "I"}),
    ("sagittal", {"left": "A", "right": "P", "top": "S", "bottom": "I"}),
])
def test_orientation_markers_follow_image_orientation_patient(plane, markers):
    assert pixels.dicom_orientation(generate_phantom(0, modality="CT", plane=plane).to_dicom_bytes()) == markers
    # the NIfTI display puts the same directions at the same edges as the standard DICOM display
    assert pixels.NIFTI_ORIENTATION[{"sagittal": 0, "coronal": 1, "axial": 2}[plane]] == markers


def test_an_oblique_plane_gets_two_letters_and_a_file_without_orientation_none():
    assert pixels.direction_letters([0.8, 0.6, 0.0]) == "LP"
    assert pixels.direction_letters([0.0, -0.2, -0.98]) == "I"
    ds = pydicom.dcmread(io.BytesIO(generate_phantom(0, modality="CT").to_dicom_bytes()))
    del ds.ImageOrientationPatient
    buf = io.BytesIO()
    ds.save_as(buf)
    assert pixels.dicom_orientation(buf.getvalue()) is None


def test_units():
    assert pixels.units_for("CT", "dicom") == "HU"
    assert pixels.units_for("MR", "dicom") == ""
    assert pixels.units_for("", "png") == "grey level"
