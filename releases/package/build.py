"""Build a release folder and its archive from a `Snapshot`, all or nothing.

Every writer in `WRITERS` runs, in that fixed order, into `.building-<name>` beside `out_dir` (wiped first);
then the PHI check, then the signed manifest; then one `rename` puts the folder in place, and the archive
`<out_dir>.tar.gz` is written under a temporary name and renamed too. A build that dies anywhere before
the folder's rename leaves no `out_dir`; one that dies after it leaves the folder without an archive,
which the next run adds. The archive is removed before a folder is put in place, so an archive that
exists always belongs to the folder beside it. Re-running gives byte-identical files.
"""
from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from releases.package.card import write_card
from releases.package.changelog import write_changelog
from releases.package.croissant import write_croissant
from releases.package.data import write_parquet
from releases.package.files import (
    ReleaseError,
    epoch_of,
    make_archive,
    public_key_hex,
    remove_tree,
    verify_release,
    walk_files,
    write_manifest,
)
from releases.package.images import ImageSink, copy_images, phi_check
from releases.package.side import SIDE_WRITERS, SideProcess
from releases.package.snapshot import RowStore, Snapshot

Progress = Callable[[str, int, int], None]

# (name, writer) in the order they run. A writer takes (snapshot, folder) and may accept a keyword
# `progress` (called as progress(name, done, total)) for progress finer than one step.
WRITERS: list[tuple[str, Callable[[Snapshot, Path], None]]] = [
    ("data", write_parquet),              # data/{split}.parquet (first: the card reads its schema)
    ("images", copy_images),              # images/<sha256>.png, each once (most written by the data writer)
    ("changelog", write_changelog),       # CHANGELOG.md
    *SIDE_WRITERS,                        # data/*.jsonl, vlmevalkit/, sft/: in a second process (side.py)
    ("croissant", write_croissant),       # croissant.json (hashes the data files)
    ("card", write_card),                 # README.md, the Hugging Face dataset card (reads the parquet schema)
]


@dataclass(frozen=True)
class BuildResult:
    folder: Path
    archive: Path
    digest: str          # SHA-256 of MANIFEST.sha256
    files: int           # files in the folder, the manifest, its signature and release.pub included
    bytes: int           # their total size
    public_key: str = ""  # hex Ed25519 public key, as in release.pub


def archive_path(out_dir: Path) -> Path:
    """`<out_dir>.tar.gz` (not `with_suffix`, which would eat the ".0" of a version)."""
    out_dir = Path(out_dir)
    return out_dir.parent / (out_dir.name + ".tar.gz")


def archive_root(snapshot: Snapshot) -> str:
    return f"{snapshot.name}-{snapshot.version}"


def _accepts_progress(fn: Callable) -> bool:
    try:
        return "progress" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def default_processes(snapshot: Snapshot) -> int:
    """2 for a spooled release on a machine with two or more cores (the side writers run beside the data
    writer), else 1. MEDR2_RELEASE_PROCESSES=1 keeps every writer in the build's own process."""
    wanted = os.environ.get("MEDR2_RELEASE_PROCESSES", "").strip()
    if wanted.isdigit():
        return max(1, min(2, int(wanted)))
    return 2 if isinstance(snapshot.rows, RowStore) and (os.cpu_count() or 1) >= 2 else 1


def build_release(snapshot: Snapshot, out_dir: Path, *, signing_key: bytes, progress: Progress | None = None,
                  expected_digest: str | None = None, replace: bool = False,
                  processes: int | None = None) -> BuildResult:
    """Build `out_dir` and `<out_dir>.tar.gz` from the snapshot, signed with `signing_key` (32 raw bytes).

    Idempotent: when `out_dir` already verifies (with this key) to `expected_digest`, nothing is rebuilt; without
    `expected_digest` the release is built aside and, if `out_dir` already holds the same digest, kept as it is.
    An `out_dir` holding a different release is a ReleaseError unless `replace` (for a draft's rebuild).
    `progress(step, done, total)` is called as each writer starts and ends ("data", "images", ...; then
    "phi_check", "manifest", "archive"), and in between by writers that report finer progress.
    With `processes` 2 (`default_processes`: a spooled release on two or more cores) the side writers
    (JSONL, VLMEvalKit, SFT) run in a child process while this one writes the Parquet; the files are the same.
    Raises ReleaseError for bad input (no rows, missing key, missing image file, PHI check); nothing is
    left behind then."""
    out_dir = Path(out_dir)
    pub = public_key_hex(signing_key)            # refuses a missing or malformed key first
    if not snapshot.rows:
        raise ReleaseError("a release with no items")
    report = progress or (lambda step, done, total: None)
    archive = archive_path(out_dir)

    if expected_digest and out_dir.is_dir():
        existing = verify_release(out_dir, public_key_hex=pub)
        if existing.ok and existing.digest == expected_digest:
            return _finish(snapshot, out_dir, archive, existing.digest, report)

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / (".building-" + out_dir.name)
    old = out_dir.parent / (".replaced-" + out_dir.name)
    job = out_dir.parent / (".side-" + out_dir.name)       # the side process's pickled snapshot and error report
    for stale in (tmp, old, job):                # `old`: left by a build killed while replacing
        remove_tree(stale)
    tmp.mkdir()
    side = None
    try:
        if (processes or default_processes(snapshot)) >= 2:
            try:
                side = SideProcess(snapshot, tmp, job)
            except OSError:                    # no interpreter to start: every writer runs here
                side = None
        side_names = {name for name, _ in SIDE_WRITERS} if side else set()
        # the Parquet writer reads every row's image for its image column: it writes images/ from those bytes
        # (`sink`), and copy_images then copies only the images no row shows
        sink = ImageSink(tmp)
        hashed = {}                              # the side process's files, hashed there as they were finished
        try:
            for name, writer in WRITERS:
                report(name, 0, 1)
                if writer is write_parquet:
                    write_parquet(snapshot, tmp, progress=report, sink=sink)
                elif writer is copy_images:
                    copied = copy_images(snapshot, tmp, progress=report, sink=sink)
                elif name in side_names:
                    if side.proc.returncode is None:
                        hashed = side.result()    # waits for the side writers, raises what they raised
                elif _accepts_progress(writer):
                    writer(snapshot, tmp, progress=report)
                else:
                    writer(snapshot, tmp)
                report(name, 1, 1)
        finally:
            if side is not None:
                side.stop()              # never leave the side process writing into a folder being removed
        report("phi_check", 0, 1)
        # what the writers saw as they wrote is not read again: the images' bytes (copy_images) and the JSONL
        # records (built from the contract's fields alone)
        phi_check(snapshot, tmp, copied=copied, rows_checked=True)
        report("phi_check", 1, 1)
        report("manifest", 0, 1)
        digest = write_manifest(tmp, signing_key=signing_key, known={**hashed, **copied})
        report("manifest", 1, 1)

        if out_dir.exists():
            existing = verify_release(out_dir, public_key_hex=pub)
            if existing.ok and existing.digest == digest:
                remove_tree(tmp)
                return _finish(snapshot, out_dir, archive, digest, report)
            if not replace:
                raise ReleaseError(f"{out_dir} already holds a different release")
            remove_tree(archive)
            os.rename(out_dir, old)
            os.rename(tmp, out_dir)
            remove_tree(old)
        else:
            remove_tree(archive)                 # an archive without its folder cannot be trusted
            os.rename(tmp, out_dir)
    finally:
        remove_tree(tmp)                         # gone already after a successful rename
        remove_tree(job)
    return _finish(snapshot, out_dir, archive, digest, report)


def _finish(snapshot: Snapshot, folder: Path, archive: Path, digest: str, report: Progress) -> BuildResult:
    """Write the archive if it is not there yet (temp name, then rename) and count the folder."""
    if not archive.exists():
        report("archive", 0, 1)
        tmp = archive.parent / (".building-" + archive.name)
        remove_tree(tmp)
        try:
            make_archive(folder, tmp, root=archive_root(snapshot), mtime=epoch_of(snapshot.created))
            os.replace(tmp, archive)
        finally:
            remove_tree(tmp)
        report("archive", 1, 1)
    files = walk_files(folder)
    return BuildResult(folder=folder, archive=archive, digest=digest, files=len(files),
                       bytes=sum(os.stat(os.path.join(folder, p)).st_size for p in files),
                       public_key=(folder / "release.pub").read_text(encoding="ascii").strip())
