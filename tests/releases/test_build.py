"""build_release: byte-identical rebuilds, all-or-nothing on faults, idempotent re-runs."""
from __future__ import annotations

import dataclasses
import tarfile

import pytest

from releases.package import build as build_mod, files as files_mod
from releases.package.build import WRITERS, archive_path, build_release
from releases.package.files import ReleaseError, public_key_hex, verify_release
from releases.package.snapshot import ImageFile
from tests.releases.factories import make_snapshot

KEY = bytes(range(32))


@pytest.fixture
def snapshot(tmp_path):
    return make_snapshot(tmp_path / "src")


def _tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _leftovers(parent):
    return sorted(p.name for p in parent.iterdir()) if parent.exists() else []


def test_writers_run_in_a_fixed_order():
    assert [name for name, _ in WRITERS][:3] == ["data", "images", "changelog"]


def test_two_builds_are_byte_identical_and_verify(snapshot, tmp_path):
    a = build_release(snapshot, tmp_path / "a" / "med-r2-1.0.0", signing_key=KEY)
    b = build_release(snapshot, tmp_path / "b" / "med-r2-1.0.0", signing_key=KEY)
    assert a.archive == tmp_path / "a" / "med-r2-1.0.0.tar.gz" == archive_path(a.folder)
    assert a.digest == b.digest and (a.files, a.bytes) == (b.files, b.bytes)
    assert a.public_key == public_key_hex(KEY)
    assert _tree(a.folder) == _tree(b.folder)
    assert a.archive.read_bytes() == b.archive.read_bytes()
    assert a.files == len(_tree(a.folder)) and a.bytes == sum(len(v) for v in _tree(a.folder).values())
    assert {"CHANGELOG.md", "MANIFEST.sha256", "MANIFEST.sig", "release.pub", "data/train.jsonl",
            "data/test.parquet"} <= set(_tree(a.folder))
    for target in (a.folder, a.archive):
        result = verify_release(target, public_key_hex=public_key_hex(KEY))
        assert result.ok and result.digest == a.digest, result
    with tarfile.open(a.archive) as tar:
        assert tar.getnames()[0] == "med-r2-test-1.0.0"          # <name>-<version>/ whatever out_dir is called
    assert _leftovers(tmp_path / "a") == ["med-r2-1.0.0", "med-r2-1.0.0.tar.gz"]


def test_a_different_folder_name_gives_the_same_archive(snapshot, tmp_path):
    a = build_release(snapshot, tmp_path / "one", signing_key=KEY)
    b = build_release(snapshot, tmp_path / "two", signing_key=KEY)
    assert a.archive.read_bytes() == b.archive.read_bytes()


def test_progress_reports_every_step(snapshot, tmp_path):
    calls = []
    build_release(snapshot, tmp_path / "out", signing_key=KEY, progress=lambda *a: calls.append(a))
    steps = [c[0] for c in calls if c[1:] == (1, 1)]
    assert steps == [name for name, _ in WRITERS] + ["phi_check", "manifest", "archive"]
    assert [name for name, _ in WRITERS][:3] == ["data", "images", "changelog"]
    assert ("data", len(snapshot.rows), len(snapshot.rows)) in calls
    assert ("images", len(snapshot.images), len(snapshot.images)) in calls


def test_a_crash_in_a_writer_leaves_nothing_and_a_rerun_is_identical(snapshot, tmp_path, monkeypatch):
    clean = build_release(snapshot, tmp_path / "clean" / "rel", signing_key=KEY)

    def boom(snapshot, out):
        (out / "half.txt").write_text("half")
        raise RuntimeError("worker killed")

    monkeypatch.setattr(build_mod, "WRITERS", [*WRITERS[:2], ("boom", boom), *WRITERS[2:]])
    out = tmp_path / "crash" / "rel"
    with pytest.raises(RuntimeError, match="worker killed"):
        build_release(snapshot, out, signing_key=KEY)
    assert _leftovers(out.parent) == []
    monkeypatch.setattr(build_mod, "WRITERS", WRITERS)
    again = build_release(snapshot, out, signing_key=KEY)
    assert again.digest == clean.digest
    assert _tree(again.folder) == _tree(clean.folder)
    assert again.archive.read_bytes() == clean.archive.read_bytes()


def test_a_killed_build_leaves_a_hidden_temp_that_the_rerun_wipes(snapshot, tmp_path):
    out = tmp_path / "out" / "rel"
    stale = tmp_path / "out" / ".building-rel"
    stale.mkdir(parents=True)
    (stale / "junk.txt").write_text("left by a killed worker")
    (tmp_path / "out" / ".building-rel.tar.gz").write_bytes(b"half an archive")
    result = build_release(snapshot, out, signing_key=KEY)
    assert "junk.txt" not in _tree(result.folder)
    assert _leftovers(tmp_path / "out") == ["rel", "rel.tar.gz"]
    assert verify_release(result.archive).ok


def test_a_crash_while_archiving_is_finished_by_the_rerun(snapshot, tmp_path, monkeypatch):
    clean = build_release(snapshot, tmp_path / "clean" / "rel", signing_key=KEY)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(build_mod, "make_archive", broken)
    out = tmp_path / "crash" / "rel"
    with pytest.raises(OSError, match="disk full"):
        build_release(snapshot, out, signing_key=KEY)
    assert _leftovers(out.parent) == ["rel"]                 # the folder is complete; no archive, no temp
    monkeypatch.setattr(build_mod, "make_archive", files_mod.make_archive)
    again = build_release(snapshot, out, signing_key=KEY)
    assert again.archive.read_bytes() == clean.archive.read_bytes()
    assert _tree(again.folder) == _tree(clean.folder)


def test_rerun_with_the_expected_digest_rebuilds_nothing(snapshot, tmp_path, monkeypatch):
    first = build_release(snapshot, tmp_path / "out" / "rel", signing_key=KEY)
    before = {p: p.stat().st_mtime_ns for p in first.folder.rglob("*")}
    archive_before = first.archive.stat().st_mtime_ns

    def no_writing(*args, **kwargs):
        raise AssertionError("should not rebuild")

    monkeypatch.setattr(build_mod, "WRITERS", [("data", no_writing)])
    again = build_release(snapshot, tmp_path / "out" / "rel", signing_key=KEY, expected_digest=first.digest)
    assert again == first
    assert {p: p.stat().st_mtime_ns for p in first.folder.rglob("*")} == before
    assert first.archive.stat().st_mtime_ns == archive_before


def test_rerun_without_a_digest_keeps_an_identical_release(snapshot, tmp_path):
    first = build_release(snapshot, tmp_path / "out" / "rel", signing_key=KEY)
    inode = first.folder.stat().st_ino
    again = build_release(snapshot, tmp_path / "out" / "rel", signing_key=KEY)
    assert again == first and first.folder.stat().st_ino == inode
    assert _leftovers(tmp_path / "out") == ["rel", "rel.tar.gz"]


def test_an_existing_different_release_is_refused_unless_replacing(snapshot, tmp_path):
    first = build_release(snapshot, tmp_path / "out" / "rel", signing_key=KEY)
    changed = dataclasses.replace(snapshot, rows=snapshot.rows[:-1])
    with pytest.raises(ReleaseError, match="already holds a different release"):
        build_release(changed, tmp_path / "out" / "rel", signing_key=KEY)
    assert verify_release(first.folder).digest == first.digest
    assert verify_release(first.archive).digest == first.digest
    assert _leftovers(tmp_path / "out") == ["rel", "rel.tar.gz"]
    replaced = build_release(changed, tmp_path / "out" / "rel", signing_key=KEY, replace=True)
    assert replaced.digest != first.digest
    assert verify_release(replaced.archive).digest == replaced.digest
    assert _leftovers(tmp_path / "out") == ["rel", "rel.tar.gz"]


def test_a_tampered_existing_release_is_not_taken_as_done(snapshot, tmp_path):
    first = build_release(snapshot, tmp_path / "out" / "rel", signing_key=KEY)
    (first.folder / "CHANGELOG.md").write_text("tampered\n")
    with pytest.raises(ReleaseError, match="already holds a different release"):
        build_release(snapshot, tmp_path / "out" / "rel", signing_key=KEY, expected_digest=first.digest)


def test_missing_image_is_refused_and_nothing_is_written(snapshot, tmp_path):
    list(snapshot.images.values())[5].source.unlink()
    with pytest.raises(ReleaseError, match="image file missing from storage"):
        build_release(snapshot, tmp_path / "out" / "rel", signing_key=KEY)
    assert _leftovers(tmp_path / "out") == []


def test_burned_in_flag_stops_the_build(snapshot, tmp_path):
    path, image = next(iter(snapshot.images.items()))
    images = dict(snapshot.images)
    images[path] = ImageFile(path, image.source, image.width, image.height, {"BurnedInAnnotation": "YES"})
    with pytest.raises(ReleaseError, match=f"PHI check failed: {path} is flagged with burned-in annotation"):
        build_release(dataclasses.replace(snapshot, images=images), tmp_path / "out" / "rel", signing_key=KEY)
    assert _leftovers(tmp_path / "out") == []


@pytest.mark.parametrize("key, message", [(b"", "missing signing key"), (b"short", "expected 32 raw bytes")])
def test_bad_key_is_refused_before_anything_is_written(snapshot, tmp_path, key, message):
    with pytest.raises(ReleaseError, match=message):
        build_release(snapshot, tmp_path / "out" / "rel", signing_key=key)
    assert not (tmp_path / "out").exists()


def test_a_release_with_no_items_is_refused(snapshot, tmp_path):
    with pytest.raises(ReleaseError, match="no items"):
        build_release(dataclasses.replace(snapshot, rows=[]), tmp_path / "out" / "rel", signing_key=KEY)
    assert not (tmp_path / "out").exists()
