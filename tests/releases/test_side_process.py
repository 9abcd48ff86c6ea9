"""The side writers (VLMEvalKit, SFT) in a second process: the same bytes as one process, their refusals come
back typed, a dead child is a clear error, and nothing is left behind (releases/package/side.py)."""
from __future__ import annotations

import dataclasses
import signal

import pytest

from releases.package.build import build_release, default_processes
from releases.package.files import ReleaseError
from releases.package.side import SideProcess
from releases.package.snapshot import RowStore
from tests.releases.factories import make_snapshot

KEY = bytes(range(32))


@pytest.fixture
def spooled(tmp_path):
    snapshot = make_snapshot(tmp_path / "src")
    return dataclasses.replace(snapshot, rows=RowStore.create(snapshot.rows, tmp_path / "rows.pickle", chunk_rows=4))


def _tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_two_processes_write_the_same_bytes_as_one(spooled, tmp_path):
    one = build_release(spooled, tmp_path / "one" / "r", signing_key=KEY, processes=1)
    two = build_release(spooled, tmp_path / "two" / "r", signing_key=KEY, processes=2)
    assert one.digest == two.digest
    assert _tree(one.folder) == _tree(two.folder)
    assert one.archive.read_bytes() == two.archive.read_bytes()
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == ["r", "r.tar.gz"]     # no .side-r left


def test_the_default_uses_a_second_process_for_a_spooled_release_only(spooled, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.delenv("MEDR2_RELEASE_PROCESSES", raising=False)
    assert default_processes(spooled) == 2
    assert default_processes(dataclasses.replace(spooled, rows=list(spooled.rows))) == 1
    monkeypatch.setenv("MEDR2_RELEASE_PROCESSES", "1")
    assert default_processes(spooled) == 1
    monkeypatch.setenv("MEDR2_RELEASE_PROCESSES", "")
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    assert default_processes(spooled) == 1


def test_a_side_writers_refusal_comes_back_typed_and_nothing_is_left(tmp_path):
    snapshot = make_snapshot(tmp_path / "src")
    rows = list(snapshot.rows)
    at = next(i for i, r in enumerate(rows) if r.answer_type == "single_choice")
    rows[at] = dataclasses.replace(rows[at], answer="not an option", answer_letters=[])
    bad = dataclasses.replace(snapshot, rows=RowStore.create(rows, tmp_path / "rows.pickle"))
    with pytest.raises(ValueError, match=f"row {rows[at].id}: the gold 'not an option' is not among its options"):
        build_release(bad, tmp_path / "out" / "r", signing_key=KEY, processes=2)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == []


def test_a_side_process_that_dies_is_a_clear_error(spooled, tmp_path):
    (tmp_path / "folder").mkdir()
    side = SideProcess(spooled, tmp_path / "folder", tmp_path / "job")
    side.proc.send_signal(signal.SIGKILL)
    with pytest.raises(ReleaseError, match="side writer process was killed by signal 9"):
        side.result()


def test_an_unexpected_failure_in_the_child_names_its_type(spooled, tmp_path):
    (tmp_path / "folder").mkdir()
    spooled.rows.path.unlink()                     # the spool is gone: the child cannot read the rows
    side = SideProcess(spooled, tmp_path / "folder", tmp_path / "job")
    with pytest.raises(ReleaseError, match="FileNotFoundError: .*rows.pickle"):
        side.result()
