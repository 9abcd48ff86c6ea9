"""Every DICOM file pydicom ships: what pydicom can decode with the installed plugins imports; objects
without pixels are refused as ``no_pixel_data``; what pydicom itself cannot decode is refused with a
recorded reason. Never an exception other than `IngestError`, never a library traceback in the logs."""
from __future__ import annotations

import io
import logging
from pathlib import Path

import pydicom
import pydicom.data.data_manager as data_manager
import pytest
from pydicom.uid import UID

from annotation.ingest import DecodeOptions, IngestError, decode

OPTIONS = DecodeOptions()
_PIXEL_KEYWORDS = ("PixelData", "FloatPixelData", "DoubleFloatPixelData")


def _local_test_files() -> list[Path]:
    """pydicom's test files that ship with the package: `get_testdata_files` would also try to
    download pydicom-data's, so the download list is emptied and anything outside the package is dropped."""
    shipped = (Path(data_manager.DATA_ROOT) / "test_files").resolve()
    patch = pytest.MonkeyPatch()
    patch.setattr(data_manager, "online_test_file_dummy_paths", dict)
    try:
        names = data_manager.get_testdata_files()
    finally:
        patch.undo()
    return sorted(p for p in map(Path, names) if p.is_file() and p.resolve().is_relative_to(shipped))


FILES = _local_test_files()


def _dataset(path: Path):
    try:
        return pydicom.dcmread(path, force=True)
    except Exception:  # noqa: BLE001 - not DICOM at all (README, JSON, ICC profile)
        return None


def _transfer_syntax(ds) -> UID | None:
    meta = getattr(ds, "file_meta", None)
    uid = meta.get("TransferSyntaxUID") if meta is not None else None
    return UID(str(uid)) if uid else None


def _pydicom_can_decode(ds) -> tuple[bool, str]:
    """pydicom's own answer: a decoder for the transfer syntax with an available plugin, then the
    pixel array itself."""
    tsuid = _transfer_syntax(ds)
    if tsuid is None:
        return False, "no transfer syntax"
    try:
        if not pydicom.pixels.get_decoder(tsuid).is_available:
            return False, "no plugin"
        ds.pixel_array  # noqa: B018
    except Exception as exc:  # noqa: BLE001 - pydicom cannot decode it either
        return False, type(exc).__name__
    return True, ""


def test_the_zoo_is_local_and_large_enough():
    assert len(FILES) > 100
    assert all("pydicom-data" not in str(p) for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_pydicom_test_file_imports_or_is_refused_with_a_reason(path, caplog):
    caplog.set_level(logging.DEBUG)
    data = path.read_bytes()
    ds = _dataset(path)
    has_pixels = ds is not None and any(k in ds for k in _PIXEL_KEYWORDS)
    decodable, why = _pydicom_can_decode(ds) if has_pixels else (False, "no pixel data")
    caplog.clear()  # pydicom, called directly above, logs its plugins' tracebacks; the import must not
    try:
        source = decode(data, name=path.name, options=OPTIONS)
    except IngestError as err:
        outcome, message = err.code, err.message
    else:
        outcome, message = "imported", ""
        assert source.frames and source.stored_bytes
        stored = pydicom.dcmread(io.BytesIO(source.stored_bytes))
        assert stored.PatientIdentityRemoved == "YES"

    if decodable:
        assert outcome == "imported", f"pydicom decodes {path.name} but the import refused it: {outcome} {message}"
    elif has_pixels:
        # pydicom itself fails ({why}): a clear refusal, never an import of garbage
        assert outcome in ("corrupt", "unsupported_transfer_syntax", "too_large"), (outcome, why)
        assert message and "Traceback" not in message
    elif ds is not None and len(ds) and ds.get("SOPClassUID"):
        kind = UID(str(ds.SOPClassUID)).name
        if "Image Storage" in kind or "Rows" in ds:  # an image object that lost its pixels
            assert outcome == "corrupt" and "without pixel data" in message, (kind, outcome, message)
        elif outcome == "corrupt":  # a damaged non-image object: refused for that first
            assert "truncated" in message, (kind, message)
        else:
            assert outcome == "no_pixel_data", (kind, outcome, message)
    else:
        assert outcome != "imported" and message
    assert not [r for r in caplog.records if r.exc_info or r.name.split(".")[0] in ("pydicom", "pylibjpeg")], \
        "a library logged during the import"


def test_non_image_objects_are_no_pixel_data():
    names = {"rtplan.dcm", "rtstruct.dcm", "test-SR.dcm", "reportsi.dcm", "waveform_ecg.dcm", "DICOMDIR"}
    seen = {p.name: p for p in FILES if p.name in names}
    assert set(seen) == names
    for name, path in seen.items():
        with pytest.raises(IngestError) as err:
            decode(path.read_bytes(), name=name, options=OPTIONS)
        assert err.value.code == "no_pixel_data", name
        assert "not an image" in err.value.message


def test_every_codec_family_in_the_zoo_imports():
    """JPEG baseline, JPEG lossless, JPEG-LS, JPEG 2000, RLE and deflate each import at least once."""
    imported: set[str] = set()
    for path in FILES:
        ds = _dataset(path)
        tsuid = _transfer_syntax(ds) if ds is not None else None
        if tsuid is None or not tsuid.is_compressed and not tsuid.is_deflated:
            continue
        try:
            decode(path.read_bytes(), name=path.name, options=OPTIONS)
        except IngestError:
            continue
        imported.add(tsuid.name)
    for family in ("JPEG Baseline", "JPEG Lossless", "JPEG-LS", "JPEG 2000", "RLE Lossless", "Deflated"):
        assert any(name.startswith(family) for name in imported), (family, sorted(imported))
