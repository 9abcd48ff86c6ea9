"""Decoders: format sniffing, DICOM/NIfTI/raster rendering, guards, and source expansion."""
from __future__ import annotations

import gzip
import io
import os
import struct
import zipfile
import zlib

import nibabel as nib
import numpy as np
import pydicom
import pytest
from nibabel.testing import data_path
from PIL import Image as PILImage
from pydicom.data import get_testdata_file

from annotation.ingest import DecodeOptions, IngestError, decode, sniff_format

OPTIONS = DecodeOptions()


def _dcm(name: str) -> bytes:
    with open(get_testdata_file(name), "rb") as fh:
        return fh.read()


def _nii(name: str) -> bytes:
    with open(os.path.join(data_path, name), "rb") as fh:
        return fh.read()


def _code(data: bytes, options: DecodeOptions = OPTIONS) -> str:
    with pytest.raises(IngestError) as err:
        decode(data, name="f", options=options)
    return err.value.code


def _png(array: np.ndarray, **save) -> bytes:
    buf = io.BytesIO()
    PILImage.fromarray(array).save(buf, "PNG", **save)
    return buf.getvalue()


def _nifti_bytes(volume: np.ndarray, affine=None, descrip: bytes = b"") -> bytes:
    img = nib.Nifti1Image(volume, np.eye(4) if affine is None else affine)
    img.header["descrip"] = descrip
    return img.to_bytes()


# --------------------------------------------------------------------------- sniffing
def test_sniff_recognises_formats_by_content_not_name():
    assert sniff_format(_dcm("CT_small.dcm")) == "dicom"
    assert sniff_format(_nii("anatomical.nii")) == "nifti"
    assert sniff_format(_nii("example4d.nii.gz")) == "nifti"
    assert sniff_format(_nii("example_nifti2.nii.gz")) == "nifti"
    assert sniff_format(_png(np.zeros((4, 4), np.uint8))) == "png"
    assert sniff_format(b"\xff\xd8\xff\xe0" + b"\x00" * 16) == "jpeg"
    assert sniff_format(b"II*\x00" + b"\x00" * 16) == "tiff"
    assert sniff_format(b"PK\x03\x04" + b"\x00" * 16) == "zip"


@pytest.mark.parametrize("data", [b"hello world", b"%PDF-1.7\n" + b"x" * 300, b"", gzip.compress(b"not nifti" * 100)])
def test_unknown_content_is_unsupported_format(data):
    assert _code(data) == "unsupported_format"


def test_zip_bytes_are_not_decoded():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("a.txt", "x")
    assert _code(buf.getvalue()) == "unsupported_format"


def test_preambleless_dicom_is_accepted():
    full = _dcm("MR_small.dcm")
    meta = pydicom.dcmread(io.BytesIO(full)).file_meta
    data = full[132 + 12 + meta.FileMetaInformationGroupLength:]  # dataset only: no preamble, no meta
    assert data[128:132] != b"DICM"
    assert sniff_format(data) == "dicom"
    source = decode(data, name="x", options=OPTIONS)
    assert source.frames[0].rendered.size == (64, 64)
    assert pydicom.dcmread(io.BytesIO(source.stored_bytes)).PatientName == ""


def test_burned_in_annotation_is_recorded_for_the_release_phi_check():
    ds = pydicom.dcmread(io.BytesIO(_dcm("MR_small.dcm")))
    ds.BurnedInAnnotation = "YES"
    buf = io.BytesIO()
    ds.save_as(buf)
    flagged = decode(buf.getvalue(), name="x", options=OPTIONS)
    assert flagged.metadata["burned_in_annotation"] == "YES"
    assert decode(_dcm("MR_small.dcm"), name="y", options=OPTIONS).metadata["burned_in_annotation"] == ""


# --------------------------------------------------------------------------- DICOM rendering
def _linear_voi(x, c, w):
    lo, hi = c - 0.5 - (w - 1) / 2, c - 0.5 + (w - 1) / 2
    y = ((x - (c - 0.5)) / (w - 1) + 0.5) * 255
    return np.rint(np.where(x <= lo, 0, np.where(x > hi, 255, y))).astype(np.uint8)


def test_window_from_dicom_tags_uses_the_linear_voi_formula():
    source = decode(_dcm("MR_small.dcm"), name="mr", options=OPTIONS)
    frame = source.frames[0]
    assert (frame.window_source, frame.window_center, frame.window_width) == ("dicom_tag", 600.0, 1600.0)
    raw = pydicom.dcmread(get_testdata_file("MR_small.dcm")).pixel_array
    np.testing.assert_array_equal(np.asarray(frame.rendered), _linear_voi(raw.astype(float), 600.0, 1600.0))
    assert source.modality == "MR" and source.metadata["rows"] == 64
    assert frame.rendered.mode == "L" and frame.frame_index is None


def test_auto_window_uses_percentiles_without_padding_after_modality_lut():
    source = decode(_dcm("CT_small.dcm"), name="ct", options=OPTIONS)
    frame = source.frames[0]
    assert frame.window_source == "auto_percentile"
    ds = pydicom.dcmread(get_testdata_file("CT_small.dcm"))
    raw = ds.pixel_array
    hu = raw.astype(np.float32) - 1024
    np.testing.assert_array_equal(frame.pixels, hu)
    lo, hi = np.percentile(hu[raw != ds.PixelPaddingValue], [0.5, 99.5])
    assert frame.window_center == pytest.approx((lo + hi) / 2)
    assert frame.window_width == pytest.approx(hi - lo)
    rendered = np.asarray(frame.rendered)
    assert rendered.min() == 0 and rendered.max() == 255
    assert source.metadata["window_source"] == "auto_percentile"
    assert source.metadata["pixel_spacing"] == pytest.approx([0.661468, 0.661468])


def test_monochrome1_is_inverted():
    ds = pydicom.dcmread(get_testdata_file("MR_small.dcm"))
    ds.PhotometricInterpretation = "MONOCHROME1"
    buf = io.BytesIO()
    ds.save_as(buf)
    mono1 = np.asarray(decode(buf.getvalue(), name="m1", options=OPTIONS).frames[0].rendered)
    mono2 = np.asarray(decode(_dcm("MR_small.dcm"), name="m2", options=OPTIONS).frames[0].rendered)
    np.testing.assert_array_equal(mono1, 255 - mono2)


def test_multiframe_dicom_gives_one_frame_each():
    source = decode(_dcm("rtdose.dcm"), name="dose", options=OPTIONS)
    raw = pydicom.dcmread(get_testdata_file("rtdose.dcm")).pixel_array
    assert [f.frame_index for f in source.frames] == list(range(15))
    for frame, expected in zip(source.frames, raw):
        np.testing.assert_array_equal(frame.pixels, expected.astype(np.float32))
        assert frame.rendered.size == (10, 10)
    assert source.metadata["number_of_frames"] == 15


def test_rgb_multiframe_passes_through_as_uint8_rgb():
    source = decode(_dcm("SC_rgb_rle_2frame.dcm"), name="rgb", options=OPTIONS)
    raw = pydicom.dcmread(get_testdata_file("SC_rgb_rle_2frame.dcm")).pixel_array
    assert len(source.frames) == 2
    for frame, expected in zip(source.frames, raw):
        assert frame.rendered.mode == "RGB" and frame.window_source == "none"
        np.testing.assert_array_equal(np.asarray(frame.rendered), expected)


def test_rle_is_decoded_natively_and_keeps_its_transfer_syntax():
    rle = decode(_dcm("MR_small_RLE.dcm"), name="rle", options=OPTIONS)
    plain = decode(_dcm("MR_small.dcm"), name="mr", options=OPTIONS)
    np.testing.assert_array_equal(np.asarray(rle.frames[0].rendered), np.asarray(plain.frames[0].rendered))
    stored = pydicom.dcmread(io.BytesIO(rle.stored_bytes))
    assert stored.file_meta.TransferSyntaxUID == pydicom.uid.RLELossless
    assert rle.stored_suffix == ".dcm"


@pytest.mark.parametrize("name", ["MR_small_jpeg_ls_lossless.dcm", "JPEG2000.dcm", "SC_rgb_jpeg_dcmtk.dcm"])
def test_compressed_transfer_syntaxes_decode_with_the_plugins(name):
    source = decode(_dcm(name), name="c", options=OPTIONS)
    assert source.frames and source.metadata["transfer_syntax_uid"] == str(pydicom.dcmread(get_testdata_file(
        name)).file_meta.TransferSyntaxUID)


def test_a_transfer_syntax_without_any_decoder_is_unsupported_transfer_syntax():
    ds = pydicom.dcmread(get_testdata_file("JPEG2000.dcm"))
    ds.file_meta.TransferSyntaxUID = "1.2.840.10008.1.2.4.100"  # MPEG2: no pixel decoder in pydicom
    buf = io.BytesIO()
    ds.save_as(buf)
    with pytest.raises(IngestError) as err:
        decode(buf.getvalue(), name="v", options=OPTIONS)
    assert err.value.code == "unsupported_transfer_syntax" and "MPEG2" in err.value.message


def test_a_damaged_compressed_file_is_corrupt_with_each_plugins_reason():
    """pydicom's JPEG-lossy.dcm is damaged (every plugin refuses it): the reason names each plugin's
    own one-line message, and no traceback is logged."""
    with pytest.raises(IngestError) as err:
        decode(_dcm("JPEG-lossy.dcm"), name="j", options=OPTIONS)
    assert err.value.code == "corrupt"
    assert "pylibjpeg:" in err.value.message and "Traceback" not in err.value.message


def test_dicom_without_pixel_data():
    assert _code(_dcm("rtplan.dcm")) == "no_pixel_data"


def test_dicom_size_is_checked_before_decoding():
    ds = pydicom.dcmread(get_testdata_file("MR_small.dcm"))
    ds.Rows, ds.Columns, ds.NumberOfFrames = 65535, 65535, 100  # pixel data left tiny
    buf = io.BytesIO()
    ds.save_as(buf)
    assert _code(buf.getvalue()) == "too_large"
    assert _code(_dcm("MR_small.dcm"), DecodeOptions(max_pixels=64 * 64 - 1)) == "too_large"


@pytest.mark.parametrize("cut", [200, 1000, 1078, -300])
def test_truncated_dicom_is_corrupt(cut):
    data = _dcm("CT_small.dcm")
    assert _code(data[:cut]) == "corrupt"


def test_truncated_pixel_data_file_is_corrupt():
    assert _code(_dcm("MR_truncated.dcm")) == "corrupt"
    assert _code(b"\x00" * 128 + b"DICM" + os.urandom(64)) == "corrupt"


# --------------------------------------------------------------------------- NIfTI
def test_nifti_all_slices_along_each_axis():
    data = _nii("anatomical.nii")
    for axis, count in ((0, 33), (1, 41), (2, 25)):
        source = decode(data, name="a.nii", options=DecodeOptions(nifti_axis=axis))
        assert len(source.frames) == count
        assert [f.frame_index for f in source.frames] == list(range(count))
        assert source.metadata["axis"] == axis
    assert source.format == "nifti" and source.modality == ""
    assert source.metadata["skipped_constant_slices"] == 0
    assert {f.window_center for f in source.frames} == {source.frames[0].window_center}
    assert source.frames[0].window_source == "auto_percentile"


def test_nifti_middle_and_evenly_spaced_slices():
    data = _nii("anatomical.nii")
    middle = decode(data, name="a", options=DecodeOptions(nifti_slices="middle"))
    assert [f.frame_index for f in middle.frames] == [12]
    five = decode(data, name="a", options=DecodeOptions(nifti_slices="5"))
    assert [f.frame_index for f in five.frames] == [2, 7, 12, 17, 22]
    assert _code(data, DecodeOptions(nifti_slices="some")) == "invalid_options"


def test_nifti_slices_display_anterior_up_and_patient_right_on_the_left():
    volume = np.zeros((6, 8, 3), np.float32)
    volume[5, 7, :] = 100.0   # RAS: right-most, anterior-most voxel column
    volume[0, 0, :] = 50.0    # left, posterior
    for affine in (np.eye(4), np.diag([-1.0, 1.0, 1.0, 1.0])):  # RAS and LAS storage
        vol = volume if affine[0, 0] > 0 else volume[::-1]
        source = decode(_nifti_bytes(vol, affine), name="o", options=DecodeOptions(nifti_slices="middle"))
        shown = np.asarray(source.frames[0].rendered)
        assert shown.shape == (8, 6)                     # rows = A..P, columns = R..L
        assert shown[0, 0] == shown.max()               # anterior-right at top-left
        assert 0 < shown[-1, -1] < shown.max()          # posterior-left at bottom-right


def test_constant_slices_are_skipped_and_counted():
    volume = np.zeros((5, 5, 6), np.int16)
    volume[:, :, 2:] = np.arange(25, dtype=np.int16).reshape(5, 5)[..., None]
    source = decode(_nifti_bytes(volume), name="c", options=OPTIONS)
    assert [f.frame_index for f in source.frames] == [2, 3, 4, 5]
    assert source.metadata["skipped_constant_slices"] == 2
    assert _code(_nifti_bytes(np.zeros((4, 4, 4), np.int16))) == "no_pixel_data"


def test_nifti_4d_uses_the_first_volume():
    data = _nii("example4d.nii.gz")
    source = decode(data, name="4d", options=DecodeOptions(nifti_slices="middle"))
    img = nib.as_closest_canonical(nib.load(os.path.join(data_path, "example4d.nii.gz")).slicer[..., 0])
    vol = np.asarray(img.dataobj, np.float32)
    k = source.frames[0].frame_index
    np.testing.assert_array_equal(source.frames[0].pixels, vol[:, :, k][::-1, ::-1].T)
    assert source.metadata["volumes_in_file"] == 2 and source.metadata["volume_used"] == 0


def test_nifti_header_is_deidentified_and_voxels_kept():
    img = nib.load(os.path.join(data_path, "anatomical.nii"))
    img.header["aux_file"] = b"patient.txt"
    img.header["db_name"] = b"Doe^Jane"
    img.header["intent_name"] = b"Jane"
    img.header.extensions.append(nib.nifti1.Nifti1Extension("comment", b"PatientName=Doe^Jane"))
    data = img.to_bytes()
    assert b"spm - 3D normalized" in data and b"Doe^Jane" in data
    source = decode(data, name="a", options=OPTIONS)
    assert source.stored_suffix == ".nii.gz"
    stored = gzip.decompress(source.stored_bytes)
    for secret in (b"spm - 3D normalized", b"Doe^Jane", b"patient.txt"):
        assert secret not in stored
    again = nib.Nifti1Image.from_bytes(stored)
    assert len(again.header.extensions) == 0
    np.testing.assert_array_equal(np.asanyarray(again.dataobj), np.asanyarray(img.dataobj))
    np.testing.assert_allclose(again.affine, img.affine)
    assert set(source.deid_record["blanked_fields"]) == {"descrip", "aux_file", "db_name", "intent_name"}
    assert source.deid_record["extensions_removed"] == 1


def test_nifti2_decodes():
    source = decode(_nii("example_nifti2.nii.gz"), name="n2", options=OPTIONS)
    assert source.metadata["nifti_version"] == 2 and source.frames


def test_nifti_guards():
    data = _nii("anatomical.nii")
    assert _code(data, DecodeOptions(max_pixels=33 * 41 * 25 - 1)) == "too_large"
    assert _code(data[: len(data) // 2]) == "corrupt"
    assert _code(gzip.compress(data)[:5000]) == "corrupt"
    assert _code(data[:350]) == "corrupt"


def test_gzip_bomb_nifti_stops_at_the_byte_limit():
    header = nib.Nifti1Header()
    header.set_data_shape((1000, 1000, 100))
    header.set_data_dtype(np.uint8)
    header["vox_offset"] = 352
    stream = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = stream.compress(header.binaryblock + b"\x00" * 4)
    zeros = b"\x00" * (1 << 20)
    bomb += b"".join(stream.compress(zeros) for _ in range(100)) + stream.flush()
    assert len(bomb) < 200_000
    assert _code(bomb, DecodeOptions(max_file_bytes=10 * 1024 * 1024)) == "too_large"


# --------------------------------------------------------------------------- raster
def test_png_grey_and_rgb():
    grey = np.arange(256, dtype=np.uint8).reshape(16, 16)
    source = decode(_png(grey), name="g.png", options=OPTIONS)
    assert source.format == "png" and source.stored_bytes is None and source.modality == ""
    np.testing.assert_array_equal(np.asarray(source.frames[0].rendered), grey)
    rgb = np.zeros((8, 8, 3), np.uint8)
    rgb[..., 0] = 200
    assert decode(_png(rgb), name="c.png", options=OPTIONS).frames[0].rendered.mode == "RGB"
    same = np.repeat(grey[..., None], 3, axis=2)  # RGB file with equal channels is grey
    assert decode(_png(same), name="s.png", options=OPTIONS).frames[0].rendered.mode == "L"


def test_16bit_png_is_windowed_by_percentiles():
    deep = (np.arange(64 * 64, dtype=np.uint16) * 15).reshape(64, 64)
    frame = decode(_png(deep), name="d.png", options=OPTIONS).frames[0]
    assert frame.rendered.mode == "L" and frame.window_source == "auto_percentile"
    lo, hi = np.percentile(deep, [0.5, 99.5])
    assert frame.window_width == pytest.approx(hi - lo)
    np.testing.assert_array_equal(frame.pixels, deep)


def _forged_png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
            + chunk(b"IEND", b""))


def test_decompression_bombs_are_too_large():
    big = _png(np.zeros((1000, 1000), np.uint8))
    assert _code(big, DecodeOptions(max_pixels=999_999)) == "too_large"
    assert _code(_forged_png(9_000, 9_000)) == "too_large"            # our declared-size check
    huge = DecodeOptions(max_pixels=10**12)
    assert _code(_forged_png(100_000, 100_000), huge) == "too_large"  # Pillow's bomb error


def test_exif_orientation_is_applied_and_exif_dropped():
    stored = np.zeros((20, 40), np.uint8)
    stored[:, 20:] = 255                          # right half white, as stored
    exif = PILImage.Exif()
    exif[0x0112] = 6                              # display rotated 90 degrees clockwise
    exif[0x010F] = "CameraMaker"
    buf = io.BytesIO()
    PILImage.fromarray(stored).save(buf, "JPEG", exif=exif.tobytes(), quality=95)
    frame = decode(buf.getvalue(), name="e.jpg", options=OPTIONS).frames[0]
    shown = np.asarray(frame.rendered)
    assert frame.rendered.size == (20, 40)        # (width, height) after rotation
    assert shown[:15].mean() < 30 and shown[-15:].mean() > 225  # right half went to the bottom
    assert len(frame.rendered.getexif()) == 0 and "exif" not in frame.rendered.info
    out = io.BytesIO()
    frame.rendered.save(out, "PNG")
    assert b"eXIf" not in out.getvalue() and b"CameraMaker" not in out.getvalue()


def test_multipage_tiff_gives_frames():
    pages = [PILImage.fromarray(np.full((6, 5), v, np.uint8)) for v in (10, 20, 30)]
    buf = io.BytesIO()
    pages[0].save(buf, "TIFF", save_all=True, append_images=pages[1:])
    source = decode(buf.getvalue(), name="t.tif", options=OPTIONS)
    assert [f.frame_index for f in source.frames] == [0, 1, 2]
    assert [int(np.asarray(f.rendered)[0, 0]) for f in source.frames] == [10, 20, 30]
    assert _code(buf.getvalue(), DecodeOptions(max_pixels=6 * 5 * 3 - 1)) == "too_large"


def test_truncated_or_damaged_rasters_are_corrupt():
    png = _png(np.random.default_rng(0).integers(0, 255, (64, 64), dtype=np.uint8))
    assert _code(png[: len(png) // 2]) == "corrupt"
    buf = io.BytesIO()
    PILImage.fromarray(np.random.default_rng(1).integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(buf, "JPEG")
    assert _code(buf.getvalue()[:300]) == "corrupt"
    assert _code(b"II*\x00" + b"\xff" * 40) == "corrupt"


def test_image_plane_from_orientation():
    from annotation.ingest.dicom import image_plane

    assert image_plane(["1", "0", "0", "0", "1", "0"]) == "axial"
    assert image_plane([1, 0, 0, 0, 0, -1]) == "coronal"
    assert image_plane([0, 1, 0, 0, 0, -1]) == "sagittal"
    assert image_plane(None) == "" and image_plane([1, 0]) == ""


def test_a_truncated_raster_stays_corrupt_when_a_library_made_pillow_lenient(monkeypatch):
    """WeasyPrint (the report PDFs) switches Pillow's process-wide LOAD_TRUNCATED_IMAGES on when imported;
    ingest on the same worker process must still refuse a truncated file."""
    from PIL import ImageFile

    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    png = _png(np.random.default_rng(0).integers(0, 255, (64, 64), dtype=np.uint8))
    assert _code(png[: len(png) // 2]) == "corrupt"
