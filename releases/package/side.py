"""The row-wise writers that run in a second process beside the data writer.

A release's formats are independent files written from the same rows: the Parquet writer (in the build's
own process; it writes images/ from the bytes it reads) and the JSONL rows, the VLMEvalKit TSV and the SFT
chains (`SIDE_WRITERS`: the JSONL and the TSV in one pass) each read the spooled rows once. On a machine
with two or more cores `build_release` runs the side writers in a child Python process
(`python -m releases.package.side`), so the release takes about as long as its longest writer instead of
their sum. The child gets the pickled `Snapshot` (for a spooled release that is the `RowStore`'s path and
chunk index, not the rows) and the folder to write into, and writes exactly what the same writers would
write in-process: the files are byte-identical either way (tests/releases/test_side_process.py).

A subprocess, not `multiprocessing`: a Celery prefork worker's child is a daemon process, which
`multiprocessing` refuses to give children. The child asks Linux to kill it when its parent dies
(PR_SET_PDEATHSIG; elsewhere it checks before each writer that it has not been orphaned), so a worker killed
mid-build does not leave a writer behind to write into the folder the task's rerun rebuilds.

A writer's refusal (ReleaseError, ValueError: a row the format cannot hold) comes back as the same exception
type with the same message; anything else, or a child that dies, is a ReleaseError naming what happened.
"""
from __future__ import annotations

import ctypes
import json
import os
import pickle
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from releases.package.data import jsonl_passing
from releases.package.files import ReleaseError, sha256_file
from releases.package.images import Copied
from releases.package.sft import write_sft
from releases.package.snapshot import Snapshot
from releases.package.vlmevalkit import write_vlmevalkit


def write_jsonl_and_vlmevalkit(snapshot: Snapshot, out: Path) -> None:
    """data/{split}.jsonl and vlmevalkit/{name}.tsv in one pass over the rows (each is read from the spool
    once, not twice: unpickling is most of a pass)."""
    passing = jsonl_passing(snapshot, out)
    write_vlmevalkit(snapshot, out, rows=passing)
    for _ in passing:            # the TSV writer reads every row; this only closes the last JSONL file
        pass


SIDE_WRITERS: list[tuple[str, Callable[[Snapshot, Path], None]]] = [
    ("jsonl_tsv", write_jsonl_and_vlmevalkit),   # data/{split}.jsonl and vlmevalkit/{name}.tsv
    ("sft", write_sft),                   # sft/{split}.jsonl and .answer_only.jsonl
]
ROOT = Path(__file__).resolve().parents[2]
_EXCEPTIONS = {"ReleaseError": ReleaseError, "ValueError": ValueError}
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:        # runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):   # not Linux: the orphan check below still stops it
        pass


class SideProcess:
    """The side writers running in a child process: `start`, then `result()` (waits; raises what the child
    raised) or `stop()` (kills it and waits, for a build that fails first)."""

    def __init__(self, snapshot: Snapshot, folder: Path, work: Path):
        self.folder = Path(folder)
        self.job = Path(work)                 # the pickled snapshot and the child's error report, beside the folder
        self.job.mkdir(parents=True, exist_ok=True)
        (self.job / "snapshot.pickle").write_bytes(pickle.dumps(snapshot, protocol=pickle.HIGHEST_PROTOCOL))
        self.error = self.job / "error.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "releases.package.side", str(self.job), str(self.folder), str(os.getpid())],
            cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)

    def result(self) -> dict[str, Copied]:
        """Wait for the child; return the hashes of the files it wrote (for the manifest), by release path."""
        _, stderr = self.proc.communicate()
        if self.proc.returncode == 0:
            hashes = json.loads((self.job / "hashes.json").read_text(encoding="utf-8"))
            return {rel: Copied(sha, size, None, False) for rel, (sha, size) in hashes.items()}
        if self.error.is_file():
            report = json.loads(self.error.read_text(encoding="utf-8"))
            raise _EXCEPTIONS.get(report["type"], ReleaseError)(
                report["message"] if report["type"] in _EXCEPTIONS else f"{report['type']}: {report['message']}")
        code = self.proc.returncode
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] if stderr else []
        raise ReleaseError(f"the release's side writer process {how}" + (f": {tail[0]}" if tail else ""))

    def stop(self) -> None:
        if self.proc.returncode is None:          # not collected by result() yet
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.communicate()


def run_side_writers(snapshot: Snapshot, folder: Path, *, still_wanted: Callable[[], bool] = lambda: True) -> None:
    """Run the side writers in this process, in order (the child's work, and the one-process build's)."""
    for name, writer in SIDE_WRITERS:
        if not still_wanted():
            raise ReleaseError(f"stopped before {name}: the build that started this writer has gone")
        writer(snapshot, folder)


def side_files(snapshot: Snapshot, folder: Path) -> list[str]:
    """The release paths the side writers write (data/*.jsonl, vlmevalkit/, sft/), sorted."""
    found = [f"data/{split}.jsonl" for split in snapshot.splits]
    for sub in ("vlmevalkit", "sft"):
        if (folder / sub).is_dir():
            found += [f"{sub}/{p.name}" for p in (folder / sub).iterdir() if p.is_file()]
    return sorted(found)


def main(argv: list[str]) -> int:
    job, folder, parent = Path(argv[0]), Path(argv[1]), int(argv[2])
    try:
        snapshot = pickle.loads((job / "snapshot.pickle").read_bytes())
        run_side_writers(snapshot, folder, still_wanted=lambda: os.getppid() == parent)
        # the child usually ends before the Parquet writer: hashing its own files here takes them off the
        # manifest step, which runs after both (the manifest still re-hashes a file whose size changed)
        hashes = {rel: (sha256_file(folder / rel), (folder / rel).stat().st_size)
                  for rel in side_files(snapshot, folder)}
        (job / "hashes.json").write_text(json.dumps(hashes, sort_keys=True), encoding="utf-8")
    except Exception as exc:  # noqa: BLE001 - every failure goes back to the parent, typed
        (job / "error.json").write_text(json.dumps({"type": type(exc).__name__, "message": str(exc)}),
                                        encoding="utf-8")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
