"""images/, PHI check, changelog, signed manifest, keys, deterministic archive, verify_release."""
from __future__ import annotations

import base64
import dataclasses
import gzip
import hashlib
import io
import json
import shutil
import struct
import subprocess
import tarfile
import zlib

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from releases.package import files as files_mod
from releases.package.build import build_release
from releases.package.changelog import write_changelog
from releases.package.data import write_data
from releases.package.files import (
    ReleaseError,
    epoch_of,
    generate_signing_key,
    load_signing_key,
    make_archive,
    manifest_bytes,
    public_key_hex,
    verify_release,
    write_manifest,
)
from releases.package.images import copy_images, phi_check, png_problem
from releases.package.snapshot import Change, ImageFile
from tests.releases.factories import make_snapshot

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))


def _release(snapshot, out, key=KEY):
    write_data(snapshot, out)
    copy_images(snapshot, out)
    write_changelog(snapshot, out)
    phi_check(snapshot, out)
    return write_manifest(out, signing_key=key)


@pytest.fixture
def snapshot(tmp_path):
    return make_snapshot(tmp_path / "src")


@pytest.fixture
def release(snapshot, tmp_path):
    out = tmp_path / "rel"
    _release(snapshot, out)
    return out


def _png_with_chunk(kind: bytes, payload: bytes) -> bytes:
    raw = io.BytesIO()
    from PIL import Image
    Image.new("L", (4, 4)).save(raw, format="PNG")
    png = raw.getvalue()
    chunk = struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
    return png[:33] + chunk + png[33:]          # after the signature and IHDR


def _swap_image(snapshot, tmp_path, data: bytes, deid=None):
    """The snapshot with its first image replaced by `data` (named by its hash)."""
    src = tmp_path / "odd.png"
    src.write_bytes(data)
    path = f"images/{hashlib.sha256(data).hexdigest()}.png"
    old = next(iter(snapshot.images))
    images = {p: i for p, i in snapshot.images.items() if p != old}
    images[path] = ImageFile(path, src, 4, 4, deid if deid is not None else {"burned_in": "NO"})
    rows = [dataclasses.replace(r, image=path) if r.image == old else r for r in snapshot.rows]
    return dataclasses.replace(snapshot, images=dict(sorted(images.items())), rows=rows), path


# ---------------------------------------------------------------- images

def test_copy_images_each_once_with_hash_names(snapshot, tmp_path):
    copy_images(snapshot, tmp_path / "out")
    shipped = sorted(p.name for p in (tmp_path / "out" / "images").iterdir())
    assert shipped == sorted(p.split("/")[1] for p in snapshot.images)
    for path, image in snapshot.images.items():
        data = (tmp_path / "out" / path).read_bytes()
        assert data == image.source.read_bytes() and path == f"images/{hashlib.sha256(data).hexdigest()}.png"


def test_copy_images_missing_source(snapshot, tmp_path):
    image = list(snapshot.images.values())[3]
    image.source.unlink()
    with pytest.raises(ReleaseError, match=f"image file missing from storage: {image.source}"):
        copy_images(snapshot, tmp_path / "out")


def test_copy_images_refuses_bytes_not_matching_the_name(snapshot, tmp_path):
    image = list(snapshot.images.values())[2]
    image.source.write_bytes(b"\x89PNG changed")
    with pytest.raises(ReleaseError, match=f"does not match its hash: {image.source}"):
        copy_images(snapshot, tmp_path / "out")


def test_copy_images_refuses_a_row_image_outside_the_snapshot(snapshot, tmp_path):
    rows = [dataclasses.replace(snapshot.rows[0], image="images/" + "0" * 64 + ".png")] + snapshot.rows[1:]
    with pytest.raises(ReleaseError, match="not in the snapshot"):
        copy_images(dataclasses.replace(snapshot, rows=rows), tmp_path / "out")


# ---------------------------------------------------------------- PHI check

def test_phi_check_passes_a_clean_release(release, snapshot):
    phi_check(snapshot, release)


@pytest.mark.parametrize("kind", [b"tEXt", b"iTXt", b"zTXt", b"eXIf"])
def test_phi_check_refuses_png_text_chunks(snapshot, tmp_path, kind):
    snap, path = _swap_image(snapshot, tmp_path, _png_with_chunk(kind, b"PatientName\x00DOE^JOHN"))
    out = tmp_path / "out"
    write_data(snap, out)
    copied = copy_images(snap, out)
    with pytest.raises(ReleaseError, match=f"PHI check failed: {path} has a {kind.decode()} chunk"):
        phi_check(snap, out)
    # the build's way: what copy_images saw in the bytes it wrote, not the file read again
    (out / path).write_bytes(next(iter(snapshot.images.values())).source.read_bytes())
    with pytest.raises(ReleaseError, match=f"PHI check failed: {path} has a {kind.decode()} chunk"):
        phi_check(snap, out, copied=copied, rows_checked=True)
    with pytest.raises(ReleaseError, match=f"PHI check failed: {path} has a {kind.decode()} chunk"):
        build_release(snap, tmp_path / "built", signing_key=KEY)
    assert not (tmp_path / "built").exists()


def test_copy_images_reports_each_images_hash_size_and_problems(snapshot, tmp_path):
    copied = copy_images(snapshot, tmp_path / "out")
    assert sorted(copied) == sorted(snapshot.images)
    for rel, seen in copied.items():
        data = (tmp_path / "out" / rel).read_bytes()
        assert (seen.sha256, seen.size, seen.problem, seen.dicom) == (hashlib.sha256(data).hexdigest(), len(data),
                                                                     None, False)
        assert rel == f"images/{seen.sha256}.png"
    assert png_problem(b"\x89PNG\r\n\x1a\n") == "truncated PNG (no IEND chunk)"
    assert png_problem(b"GIF89a") == "not a PNG"


def test_the_manifest_takes_the_copied_hashes_only_while_the_size_matches(snapshot, tmp_path):
    out = tmp_path / "out"
    copied = copy_images(snapshot, out)
    assert manifest_bytes(out, known=copied) == manifest_bytes(out)
    rel = sorted(copied)[0]
    (out / rel).write_bytes(b"changed after the copy")
    assert f"{hashlib.sha256(b'changed after the copy').hexdigest()}  22  {rel}" in \
        manifest_bytes(out, known=copied).decode()


def test_phi_check_refuses_bytes_after_iend(snapshot, tmp_path):
    good = next(iter(snapshot.images.values())).source.read_bytes()
    snap, path = _swap_image(snapshot, tmp_path, good + b"DOE^JOHN")
    copy_images(snap, tmp_path / "out")
    with pytest.raises(ReleaseError, match=f"PHI check failed: {path}: data after IEND"):
        phi_check(snap, tmp_path / "out")


@pytest.mark.parametrize("deid", [{"burned_in": "YES"}, {"BurnedInAnnotation": "YES"}, {"burned_in": True},
                                  {"BurnedInAnnotation": "yes", "method": "x"}])
def test_phi_check_refuses_burned_in_flags(snapshot, tmp_path, deid):
    good = next(iter(snapshot.images.values())).source.read_bytes()
    snap, path = _swap_image(snapshot, tmp_path, good, deid=deid)
    copy_images(snap, tmp_path / "out")
    with pytest.raises(ReleaseError, match=f"PHI check failed: {path} is flagged with burned-in annotation"):
        phi_check(snap, tmp_path / "out")


def test_phi_check_refuses_row_keys_outside_the_contract(release, snapshot):
    jsonl = release / "data" / "val.jsonl"
    lines = jsonl.read_text().splitlines()
    obj = json.loads(lines[1])
    obj["patient_name"] = "DOE^JOHN"
    lines[1] = json.dumps(obj)
    jsonl.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReleaseError, match="PHI check failed: data/val.jsonl line 2 has keys outside the contract: "
                                           "patient_name"):
        phi_check(snapshot, release)


def test_phi_check_refuses_a_dicom_file_and_a_stray_image(release, snapshot):
    (release / "extra.bin").write_bytes(b"\0" * 128 + b"DICM" + b"\0" * 10)
    with pytest.raises(ReleaseError, match="PHI check failed: extra.bin is a DICOM file"):
        phi_check(snapshot, release)
    (release / "extra.bin").unlink()
    (release / "images" / ("f" * 64 + ".png")).write_bytes(b"x")
    with pytest.raises(ReleaseError, match="is not an image of the snapshot"):
        phi_check(snapshot, release)


# ---------------------------------------------------------------- changelog

def test_changelog_lists_changes_with_reasons(tmp_path):
    snap = make_snapshot(tmp_path / "src", version="2.0.0", previous="1.3.0")
    snap = dataclasses.replace(snap, changes=[
        Change("changed", "key-1-2", 1, 2, "gold corrected by adjudication\ncase 7"),
        Change("removed", "key-2-1", 3, None, "rejected on review"),
        Change("added", "key-0-1", None, 1, "new item"),
    ])
    write_changelog(snap, tmp_path)
    text = (tmp_path / "CHANGELOG.md").read_text()
    assert "## med-r2-test 2.0.0 (2026-12-01)" in text and "Against med-r2-test 1.3.0." in text
    assert "### Added (1)\n\n- `key-0-1` v1: new item" in text
    assert "### Removed (1)\n\n- `key-2-1` v3: rejected on review" in text
    assert "### Changed (1)\n\n- `key-1-2` v1 → v2: gold corrected by adjudication case 7" in text
    assert text.index("### Added") < text.index("### Removed") < text.index("### Changed")


# ---------------------------------------------------------------- manifest and keys

def test_manifest_lines_signature_and_digest(release):
    body = (release / "MANIFEST.sha256").read_bytes()
    lines = body.decode().splitlines()
    paths = [line.split("  ")[2] for line in lines]
    assert paths == sorted(paths) and "MANIFEST.sha256" not in paths and "release.pub" not in paths
    assert "CHANGELOG.md" in paths and "data/train.parquet" in paths
    for line in lines:
        sha, size, path = line.split("  ")
        data = (release / path).read_bytes()
        assert sha == hashlib.sha256(data).hexdigest() and int(size) == len(data)
    pub = bytes.fromhex((release / "release.pub").read_text().strip())
    assert pub.hex() == public_key_hex(KEY)
    sig = bytes.fromhex((release / "MANIFEST.sig").read_text().strip())
    ed25519.Ed25519PublicKey.from_public_bytes(pub).verify(sig, body)
    assert write_manifest(release, signing_key=KEY) == hashlib.sha256(body).hexdigest()
    assert (release / "MANIFEST.sha256").read_bytes() == body       # re-writing ignores its own files


def test_write_manifest_refuses_a_missing_key(release):
    with pytest.raises(ReleaseError, match="missing signing key"):
        write_manifest(release, signing_key=b"")


def test_load_signing_key_formats():
    key = ed25519.Ed25519PrivateKey.generate()
    raw = key.private_bytes_raw()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    assert load_signing_key(raw.hex()) == raw
    assert load_signing_key(raw.hex().upper() + "\n") == raw
    assert load_signing_key(base64.b64encode(raw).decode()) == raw
    assert load_signing_key(pem) == raw
    generated = generate_signing_key()
    assert len(generated) == 64 and len(load_signing_key(generated)) == 32


@pytest.mark.parametrize("junk", ["", "   ", "not a key", "ab" * 31, base64.b64encode(b"x" * 31).decode(),
                                  "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", None])
def test_load_signing_key_refuses_junk(junk):
    with pytest.raises(ReleaseError) as err:
        load_signing_key(junk)
    if junk and junk.strip():
        assert junk.strip() not in str(err.value)       # the key text is never echoed


def test_load_signing_key_refuses_a_non_ed25519_pem():
    pem = rsa.generate_private_key(public_exponent=65537, key_size=1024).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    with pytest.raises(ReleaseError, match="not an Ed25519 key"):
        load_signing_key(pem)


# ---------------------------------------------------------------- archive

def test_archive_is_deterministic_and_normalised(release, tmp_path):
    make_archive(release, tmp_path / "a.tar.gz", root="med-r2-test-1.0.0", mtime=epoch_of("2026-12-01"))
    (release / "CHANGELOG.md").touch()                     # a new mtime on disk changes nothing
    make_archive(release, tmp_path / "b.tar.gz", root="med-r2-test-1.0.0", mtime=epoch_of("2026-12-01"))
    a = (tmp_path / "a.tar.gz").read_bytes()
    assert a == (tmp_path / "b.tar.gz").read_bytes()
    assert a[:2] == b"\x1f\x8b" and a[3] == 0 and a[4:8] == b"\0\0\0\0" and a[9] == 255   # no FNAME, mtime 0
    with tarfile.open(tmp_path / "a.tar.gz") as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names[0] == "med-r2-test-1.0.0" and all(n.startswith("med-r2-test-1.0.0") for n in names)
    assert names == sorted(names)
    assert "med-r2-test-1.0.0/images" in names and "med-r2-test-1.0.0/MANIFEST.sig" in names
    for m in members:
        assert (m.uid, m.gid, m.uname, m.gname, m.mtime) == (0, 0, "", "", epoch_of("2026-12-01"))
        assert m.mode == (0o755 if m.isdir() else 0o644)
    assert epoch_of("2026-12-01") == 1796083200 and epoch_of("garbage") == 0


# ---------------------------------------------------------------- verify

def test_verify_passes_folder_and_archive(release, tmp_path):
    result = verify_release(release)
    assert result.ok and result.first_mismatch == "" and result.checked == len(
        (release / "MANIFEST.sha256").read_text().splitlines())
    assert result.digest == hashlib.sha256((release / "MANIFEST.sha256").read_bytes()).hexdigest()
    assert verify_release(release, public_key_hex=public_key_hex(KEY)).ok
    make_archive(release, tmp_path / "r.tar.gz", root="x-1.0.0")
    assert verify_release(tmp_path / "r.tar.gz", public_key_hex=public_key_hex(KEY)).ok


def _flip(path, offset=None):
    data = bytearray(path.read_bytes())
    i = len(data) // 2 if offset is None else offset
    data[i] ^= 0x01
    path.write_bytes(bytes(data))


def _case_image(rel):
    name = sorted((rel / "images").iterdir())[0]
    _flip(name)
    return f"images/{name.name}: sha256 differs"


def _case_jsonl(rel):
    path = rel / "data" / "test.jsonl"
    text = path.read_text()
    path.write_text(text.replace('"answer":"spleen"', '"answer":"spleeN"', 1))
    return "data/test.jsonl: sha256 differs"


def _case_manifest(rel):
    _flip(rel / "MANIFEST.sha256", 10)
    return "MANIFEST.sig: signature does not verify"


def _case_extra(rel):
    (rel / "data" / "notes.txt").write_text("hi\n")
    return "data/notes.txt: not in the manifest"


def _case_removed(rel):
    (rel / "CHANGELOG.md").unlink()
    return "CHANGELOG.md: missing"


def _case_truncated(rel):
    path = rel / "data" / "val.parquet"
    path.write_bytes(path.read_bytes()[:-1])
    return "data/val.parquet: size differs"


def _case_resigned(rel):
    sig = ed25519.Ed25519PrivateKey.from_private_bytes(OTHER_KEY).sign((rel / "MANIFEST.sha256").read_bytes())
    (rel / "MANIFEST.sig").write_text(sig.hex() + "\n")
    return "MANIFEST.sig: signature does not verify"


def _case_bad_sig_text(rel):
    (rel / "MANIFEST.sig").write_text("zz\n")
    return "MANIFEST.sig: signature does not verify"


def _case_no_sig(rel):
    (rel / "MANIFEST.sig").unlink()
    return "MANIFEST.sig: missing"


CASES = [_case_image, _case_jsonl, _case_manifest, _case_extra, _case_removed, _case_truncated, _case_resigned,
         _case_bad_sig_text, _case_no_sig]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__[6:] for c in CASES])
@pytest.mark.parametrize("form", ["folder", "archive"])
def test_verify_names_the_first_mismatch(release, tmp_path, case, form):
    rel = tmp_path / "copy"
    shutil.copytree(release, rel)
    expected = case(rel)
    target = rel
    if form == "archive":
        target = tmp_path / "copy.tar.gz"
        make_archive(rel, target, root="med-r2-test-1.0.0")
    result = verify_release(target)
    assert not result.ok
    assert result.first_mismatch == expected


def test_verify_with_another_public_key(release, tmp_path):
    """Re-signing everything with another key is self-consistent; the expected key catches it."""
    rel = tmp_path / "copy"
    shutil.copytree(release, rel)
    write_manifest(rel, signing_key=OTHER_KEY)
    assert verify_release(rel).ok
    result = verify_release(rel, public_key_hex=public_key_hex(KEY))
    assert not result.ok and result.first_mismatch == "release.pub: differs from the expected public key"
    result = verify_release(release, public_key_hex=public_key_hex(OTHER_KEY))
    assert not result.ok and result.first_mismatch == "release.pub: differs from the expected public key"


def test_verify_refuses_unsafe_or_unreadable_archives(release, tmp_path):
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    result = verify_release(evil)
    assert not result.ok and result.first_mismatch == "../escape.txt: unsafe archive member"
    assert not (tmp_path.parent / "escape.txt").exists()
    link = tmp_path / "link.tar.gz"
    with tarfile.open(link, "w:gz") as tar:
        info = tarfile.TarInfo("r/x")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
    assert verify_release(link).first_mismatch == "r/x: unsafe archive member"
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(gzip.compress(b"not a tar"))
    assert verify_release(junk).first_mismatch.startswith("archive: ")
    assert verify_release(tmp_path / "nope").first_mismatch.endswith("no such release folder or archive")


def test_verify_refuses_a_malformed_manifest_line(release, tmp_path):
    rel = tmp_path / "copy"
    shutil.copytree(release, rel)
    body = (rel / "MANIFEST.sha256").read_text().replace("  data/", "  ../data/", 1).encode()
    (rel / "MANIFEST.sha256").write_bytes(body)
    sig = ed25519.Ed25519PrivateKey.from_private_bytes(KEY).sign(body)
    (rel / "MANIFEST.sig").write_text(sig.hex() + "\n")
    result = verify_release(rel)
    assert not result.ok and result.first_mismatch.endswith("malformed")


def test_archive_in_many_gzip_members_reads_everywhere(release, tmp_path, monkeypatch):
    monkeypatch.setattr(files_mod, "ARCHIVE_BLOCK", 4096)
    make_archive(release, tmp_path / "small.tar.gz", root="r")
    make_archive(release, tmp_path / "again.tar.gz", root="r")
    data = (tmp_path / "small.tar.gz").read_bytes()
    assert data == (tmp_path / "again.tar.gz").read_bytes()
    assert data.count(b"\x1f\x8b\x08\x00\x00\x00\x00\x00") > 10   # one header per block: no name, mtime 0
    with tarfile.open(tmp_path / "small.tar.gz") as tar:
        assert tar.extractfile("r/CHANGELOG.md").read() == (release / "CHANGELOG.md").read_bytes()
    assert verify_release(tmp_path / "small.tar.gz").ok
    if shutil.which("tar"):
        listing = subprocess.run(["tar", "-tzf", str(tmp_path / "small.tar.gz")], capture_output=True, text=True,
                                 check=True).stdout.split()
        assert "r/MANIFEST.sha256" in listing and "r/data/train.parquet" in listing
