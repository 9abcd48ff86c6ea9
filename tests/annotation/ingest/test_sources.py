"""Source expansion: folders, ZIP archives (limits from the central directory and while inflating,
members refused with a reason), and the refs feeding `decode`."""
from __future__ import annotations

import os
import struct
import zipfile

import pytest
from pydicom.data import get_testdata_file

from annotation.ingest import DecodeOptions, IngestError, decode, iter_sources

OPTIONS = DecodeOptions()


def _dcm(name: str) -> bytes:
    with open(get_testdata_file(name), "rb") as fh:
        return fh.read()


def _write_zip(path, members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def test_folders_and_zips_expand_with_relative_names(tmp_path):
    root = tmp_path / "batch"
    (root / "sub").mkdir(parents=True)
    (root / "__MACOSX").mkdir()
    (root / "b.png").write_bytes(b"b")
    (root / "sub" / "a.dcm").write_bytes(b"a")
    (root / ".DS_Store").write_bytes(b"x")
    (root / "__MACOSX" / "._b.png").write_bytes(b"x")
    _write_zip(root / "scans.zip", {"x/2.dcm": b"two", "x/1.dcm": b"one", "__MACOSX/x/._1.dcm": b"",
                                     ".hidden": b"", "inner.zip": b"PK\x05\x06" + b"\x00" * 18})
    refs = list(iter_sources([root], max_file_bytes=1024))
    assert [r.name for r in refs] == ["batch/b.png", "batch/scans.zip/inner.zip", "batch/scans.zip/x/1.dcm",
                                      "batch/scans.zip/x/2.dcm", "batch/sub/a.dcm"]
    data = {r.name: r.read() for r in refs if not r.name.endswith("inner.zip")}
    assert data["batch/scans.zip/x/1.dcm"] == b"one" and data["batch/sub/a.dcm"] == b"a"
    with pytest.raises(IngestError) as err:
        refs[1].read()
    assert err.value.code == "unsupported_format"


def test_missing_paths_and_oversized_files(tmp_path):
    big = tmp_path / "big.dcm"
    big.write_bytes(b"\x00" * 2048)
    missing, oversized = iter_sources([tmp_path / "nope.dcm", big], max_file_bytes=1024)
    for ref, code in ((missing, "not_found"), (oversized, "too_large")):
        with pytest.raises(IngestError) as err:
            ref.read()
        assert err.value.code == code


def test_zip_bomb_and_total_limits(tmp_path):
    bomb = tmp_path / "bomb.zip"
    _write_zip(bomb, {"zeros.dcm": b"\x00" * (20 * 1024 * 1024)})  # ratio ~1000:1
    (ref,) = iter_sources([bomb], max_file_bytes=64 * 1024 * 1024)
    with pytest.raises(IngestError) as err:
        ref.read()
    assert err.value.code == "too_large" and "ratio" in err.value.message

    many = tmp_path / "many.zip"
    payload = os.urandom(300_000)  # incompressible: ratio ~1
    _write_zip(many, {f"{i}.dcm": payload for i in range(4)})
    (whole,) = iter_sources([many], max_file_bytes=1 << 20, max_zip_total_bytes=700_000)  # declared total
    assert whole.name == "many.zip"
    with pytest.raises(IngestError) as err:
        whole.read()
    assert err.value.code == "too_large" and "declares 1200000 bytes" in err.value.message
    (whole,) = iter_sources([many], max_file_bytes=1 << 20, max_zip_members=3)
    with pytest.raises(IngestError) as err:
        whole.read()
    assert err.value.code == "too_large" and "4 members" in err.value.message
    refs = list(iter_sources([many], max_file_bytes=1 << 20, max_zip_total_bytes=1_200_000))
    assert [r.read() for r in refs] == [payload] * 4

    stored = tmp_path / "stored.zip"
    _write_zip(stored, {"a.dcm": payload}, compression=zipfile.ZIP_STORED)
    (ref,) = iter_sources([stored], max_file_bytes=100_000)
    with pytest.raises(IngestError) as err:
        ref.read()
    assert err.value.code == "too_large"


def _lie_about_compressed_size(path, size: int) -> None:
    """Rewrite the first central-directory entry's compressed size (the header lies)."""
    data = bytearray(path.read_bytes())
    entry = data.index(b"PK\x01\x02")
    data[entry + 20:entry + 24] = struct.pack("<I", size)
    path.write_bytes(bytes(data))


def test_the_ratio_is_enforced_while_inflating_when_the_header_lies(tmp_path):
    bomb = tmp_path / "liar.zip"
    # ~65 KB of deflate inflating to 64 MiB, then 2 MB of other bytes the lie can point into
    _write_zip(bomb, {"zeros.dcm": b"\x00" * (64 * 1024 * 1024), "z_padding.txt": os.urandom(2_000_000)})
    _lie_about_compressed_size(bomb, 1024 * 1024)  # declares a harmless 64:1
    ref = next(r for r in iter_sources([bomb], max_file_bytes=128 * 1024 * 1024) if r.name.endswith("zeros.dcm"))
    assert ref.error is None  # the central directory looks fine
    with pytest.raises(IngestError) as err:
        ref.read()
    assert err.value.code == "too_large" and "while inflating" in err.value.message


def test_damaged_zip_is_reported_not_raised(tmp_path):
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    (ref,) = iter_sources([broken], max_file_bytes=1024)
    assert ref.name == "broken.zip"
    with pytest.raises(IngestError) as err:
        ref.read()
    assert err.value.code == "corrupt"


def test_sources_feed_decode_end_to_end(tmp_path):
    _write_zip(tmp_path / "study.zip", {"ct.dcm": _dcm("CT_small.dcm"), "note.txt": b"hello"})
    results = {}
    for ref in iter_sources([tmp_path / "study.zip"], max_file_bytes=OPTIONS.max_file_bytes):
        try:
            results[ref.name] = decode(ref.read(), name=ref.name, options=OPTIONS).format
        except IngestError as err:
            results[ref.name] = err.code
    assert results == {"study.zip/ct.dcm": "dicom", "study.zip/note.txt": "unsupported_format"}


def test_traversal_links_and_odd_compression_are_reported_not_dropped(tmp_path):
    archive = tmp_path / "odd.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../up.dcm", b"a")
        zf.writestr("/abs.dcm", b"b")
        zf.writestr("C:/drive.dcm", b"c")
        link = zipfile.ZipInfo("link.dcm")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, "/etc/passwd")
        zf.writestr("packed.dcm", b"d" * 100, compress_type=zipfile.ZIP_BZIP2)
    refs = {r.name: r for r in iter_sources([archive], max_file_bytes=1 << 20)}
    codes = {}
    for name, ref in refs.items():
        with pytest.raises(IngestError) as err:
            ref.read()
        codes[name] = err.value.code
    assert codes == {"odd.zip//abs.dcm": "unsafe_path", "odd.zip/../up.dcm": "unsafe_path",
                     "odd.zip/C:/drive.dcm": "unsafe_path", "odd.zip/link.dcm": "unsafe_path",
                     "odd.zip/packed.dcm": "unsupported_format"}
