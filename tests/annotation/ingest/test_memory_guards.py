"""Bombs are refused with bounded memory. Each import runs in a fresh child process that reports its
peak RSS (VmHWM, else `resource.getrusage`) against its own RSS after imports (`psutil`), so the
numbers are the import's alone: a 1 GiB zip bomb, a zip bomb whose header lies, a .nii.gz declaring 1 GiB and an
8000 x 8000 16-bit RGBA PNG header (512 MB decoded) must each cost less than `LIMIT_MB`."""
from __future__ import annotations

import gzip
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

LIMIT_MB = 100
ROOT = Path(__file__).resolve().parents[3]

CHILD = r"""
import json, resource, sys
import psutil
from annotation.ingest import DecodeOptions, IngestError, decode, iter_sources
import pydicom.pixels, nibabel, PIL.Image  # warm: library imports are not the import's cost

def peak_rss():
    # the process's own high-water mark (VmHWM, the counter getrusage reads); ru_maxrss alone would
    # also carry the high-water mark of the parent it was forked from
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

try:
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # reset the high-water mark to the current RSS
except OSError:
    pass
path, mode = sys.argv[1], sys.argv[2]
baseline = psutil.Process().memory_info().rss
outcomes = []
if mode == "control":
    ballast = bytearray(150 * 1024 * 1024)
    ballast[::4096] = b"x" * len(ballast[::4096])
else:
    options = DecodeOptions()
    for ref in iter_sources([path], max_file_bytes=options.max_file_bytes):
        try:
            outcomes.append([ref.name, "imported", len(decode(ref.read(), name=ref.name, options=options).frames)])
        except IngestError as err:
            outcomes.append([ref.name, err.code, err.message])
peak = peak_rss()
print(json.dumps({"growth_mb": (peak - baseline) / 2**20, "outcomes": outcomes}))
"""


def _child(path: Path, mode: str = "import") -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), mode], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{path.name}: peak RSS growth {result['growth_mb']:.1f} MB, {result['outcomes']}")
    return result


# --------------------------------------------------------------------------- bomb builders
def _zeros_deflate(total: int) -> tuple[bytes, int]:
    """Raw deflate of `total` zero bytes, built from one 16 MiB block repeated (a full flush makes
    blocks independent), and its CRC-32: a 1 GiB bomb in a second, not a minute of compression."""
    chunk = bytes(16 << 20)
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = comp.compress(chunk) + comp.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(total // len(chunk)):
        crc = zlib.crc32(chunk, crc)
    return block * (total // len(chunk)) + zlib.compressobj(9, zlib.DEFLATED, -15).flush(), crc


def _write_zip(path: Path, members: list[tuple[str, int, bytes, int, int, int]]) -> None:
    """members: (name, method, data as stored, crc, uncompressed size, compressed size *declared*)."""
    out, central = bytearray(), bytearray()
    for name, method, data, crc, size, declared in members:
        raw = name.encode()
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc, declared,
                               size, len(raw), 0, 0, 0, 0, 0, len(out)) + raw
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0, crc, len(data), size,
                           len(raw), 0) + raw + data
    eocd = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(out), 0)
    path.write_bytes(bytes(out + central + eocd))


def _png_header(width: int, height: int, depth: int, colour: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 4096)) \
        + chunk(b"IEND", b"")


# --------------------------------------------------------------------------- tests
def test_the_measurement_sees_an_allocation(tmp_path):
    """Control: 150 MB touched in the child shows up, so a small number below means a small cost."""
    assert _child(tmp_path / "none", "control")["growth_mb"] >= 140


def test_a_zip_bomb_is_refused_with_bounded_memory(tmp_path):
    data, crc = _zeros_deflate(1 << 30)  # 1 GiB of zeros in ~1 MB: over the file size limit
    small, small_crc = _zeros_deflate(256 << 20)  # 256 MiB in ~256 KB: under it, but ~1000:1
    bomb = tmp_path / "bomb.zip"
    _write_zip(bomb, [("zeros.dcm", 8, data, crc, 1 << 30, len(data)),
                      ("zeros2.dcm", 8, small, small_crc, 256 << 20, len(small))])
    result = _child(bomb)
    outcome = {name.split("/")[-1]: (code, message) for name, code, message in result["outcomes"]}
    assert outcome["zeros.dcm"][0] == "too_large" and "declares 1073741824 bytes" in outcome["zeros.dcm"][1]
    assert outcome["zeros2.dcm"][0] == "too_large" and "declared compression ratio" in outcome["zeros2.dcm"][1]
    assert result["growth_mb"] <= LIMIT_MB


def test_a_zip_bomb_whose_header_lies_is_stopped_while_inflating(tmp_path):
    """The central directory declares 300 MiB from 6 MB (50:1, allowed); the real stream is 1 GiB from
    ~1 MB. zipfile would inflate what the header declares; the guard counts real compressed bytes."""
    data, crc = _zeros_deflate(1 << 30)
    padding = os.urandom(6_000_000)  # bytes the lying compressed size points into
    liar = tmp_path / "liar.zip"
    _write_zip(liar, [("zeros.dcm", 8, data, crc, 300 << 20, 6_000_000),
                      ("z.bin", 0, padding, zlib.crc32(padding), len(padding), len(padding))])
    result = _child(liar)
    outcome = {name.split("/")[-1]: (code, message) for name, code, message in result["outcomes"]}
    assert outcome["zeros.dcm"][0] == "too_large" and "while inflating" in outcome["zeros.dcm"][1]
    assert result["growth_mb"] <= LIMIT_MB


def test_a_nifti_declaring_1_gib_is_refused_before_inflating(tmp_path):
    """637 KB that inflates to 1 GiB (gzip members of a MiB of zeros, repeated): the header declares
    256 x 256 x 64 x 256 bytes, so it is refused from the header alone."""
    header = nib.Nifti1Header()
    header.set_data_shape((256, 256, 64, 256))
    header.set_data_dtype(np.uint8)
    header["vox_offset"] = 352
    mib = gzip.compress(bytes(1 << 20), compresslevel=9, mtime=0)
    bomb = tmp_path / "bomb.nii.gz"
    bomb.write_bytes(gzip.compress(header.binaryblock + b"\x00" * 4, mtime=0) + mib * 1024)
    assert bomb.stat().st_size < 2 << 20
    result = _child(bomb)
    (name, code, message), = result["outcomes"]
    assert code == "too_large" and "header declares" in message
    assert result["growth_mb"] <= LIMIT_MB


def test_a_16_bit_rgba_png_is_limited_by_decoded_bytes(tmp_path):
    """8000 x 8000 = 64 M pixels (allowed), but 4 channels of 2 bytes: 512 MB decoded."""
    png = tmp_path / "big.png"
    png.write_bytes(_png_header(8000, 8000, 16, 6))
    result = _child(png)
    (name, code, message), = result["outcomes"]
    assert code == "too_large" and "512000000 bytes" in message
    assert result["growth_mb"] <= LIMIT_MB


def test_junk_is_sniffed_from_its_first_bytes_only(monkeypatch):
    """A 300 MB junk upload once took 77 s: a forced DICOM parse of all of it. Only the first
    `SNIFF_BYTES` ever reach pydicom now."""
    import pydicom

    from annotation.ingest import DecodeOptions, IngestError, decode, sniff

    seen = []
    real = pydicom.dcmread

    def spy(fp, *args, **kwargs):
        seen.append(len(fp.getbuffer()))
        return real(fp, *args, **kwargs)

    monkeypatch.setattr(pydicom, "dcmread", spy)
    junk = os.urandom(1 << 20) * 64
    with pytest.raises(IngestError) as err:
        decode(junk, name="junk.bin", options=DecodeOptions())
    assert err.value.code == "unsupported_format"
    assert seen and max(seen) <= sniff.SNIFF_BYTES
