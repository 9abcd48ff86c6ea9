"""Expand the paths a curator hands in (files, folders, ZIP archives) into readable sources.

`iter_sources` yields one `SourceRef` per candidate file, lazily: nothing is read until
``SourceRef.read()`` is called, and every failure (missing path, file too large,
zip bomb, damaged archive, nested archive) is carried by the ref and raised as an
`IngestError` from ``read()``, so one bad file never stops the others.

- Folders are walked recursively in sorted order; hidden files and folders (name
  starting with ``.``) and ``__MACOSX`` folders are skipped.
- ZIP archives (by content, not name) are expanded one level.  Member sizes declared
  in the archive are never trusted: each member is inflated in chunks with a hard
  limit of ``max_file_bytes``; an archive stops yielding data once
  ``max_zip_total_bytes`` have been inflated from it; and a member whose inflated
  size exceeds ``max_zip_ratio`` times its compressed size is refused once it
  passes `RATIO_FLOOR` bytes (small, highly compressible files such as a blank
  image stay allowed).  All three raise ``too_large``.
- Archives inside archives are not expanded: such members raise
  ``unsupported_format``; so do encrypted members.
- Display names are relative: ``folder/sub/a.dcm``, ``batch.zip/a/b.dcm``.
"""
from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .types import IngestError

GIB = 1024 ** 3
RATIO_FLOOR = 1024 * 1024
_CHUNK = 1 << 20
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")


@dataclass
class SourceRef:
    """One input file.  ``read()`` returns its bytes or raises the `IngestError` it carries."""

    name: str
    reader: Callable[[], bytes] | None = field(default=None, repr=False)
    error: IngestError | None = None

    def read(self) -> bytes:
        if self.error is not None:
            raise self.error
        assert self.reader is not None
        return self.reader()


def iter_sources(
    paths: Iterable[str | Path],
    *,
    max_file_bytes: int,
    max_zip_total_bytes: int = 4 * GIB,
    max_zip_ratio: int = 200,
) -> Iterator[SourceRef]:
    """Yield a `SourceRef` for every file under `paths` (see the module docstring)."""
    limits = _Limits(max_file_bytes, max_zip_total_bytes, max_zip_ratio)
    if isinstance(paths, (str, Path)):
        paths = [paths]
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            base = path.resolve().name or str(path)
            for file in _walk(path):
                yield from _file_sources(file, f"{base}/{file.relative_to(path).as_posix()}", limits)
        elif path.is_file():
            yield from _file_sources(path, path.name, limits)
        else:
            yield SourceRef(name=str(raw), error=IngestError("not_found", "no such file or folder"))


@dataclass(frozen=True)
class _Limits:
    max_file_bytes: int
    max_zip_total_bytes: int
    max_zip_ratio: int


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _skipped(d))
        for name in sorted(filenames):
            if not _skipped(name):
                yield Path(dirpath) / name


def _skipped(name: str) -> bool:
    return name.startswith(".") or name == "__MACOSX"


def _file_sources(path: Path, name: str, limits: _Limits) -> Iterator[SourceRef]:
    if _is_zip(path):
        yield from _zip_sources(path, name, limits)
    else:
        yield SourceRef(name=name, reader=lambda: _read_file(path, limits.max_file_bytes))


def _is_zip(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) in _ZIP_MAGIC
    except OSError:
        return False


def _read_file(path: Path, limit: int) -> bytes:
    try:
        if path.stat().st_size > limit:
            raise IngestError("too_large", f"file exceeds {limit} bytes")
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError as exc:
        raise IngestError("not_found", "file disappeared before it was read") from exc
    except OSError as exc:
        raise IngestError("unreadable", f"cannot read file ({type(exc).__name__})") from exc
    if len(data) > limit:
        raise IngestError("too_large", f"file exceeds {limit} bytes")
    return data


class _Archive:
    """One ZIP file shared by its members' refs: opened on first read, total budget kept."""

    def __init__(self, path: Path, limits: _Limits):
        self.path = path
        self.limits = limits
        self.inflated = 0
        self._zip: zipfile.ZipFile | None = None

    def open(self) -> zipfile.ZipFile:
        if self._zip is None:
            self._zip = zipfile.ZipFile(self.path)
        return self._zip

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
            self._zip = None

    def read_member(self, info: zipfile.ZipInfo) -> bytes:
        limit = self.limits.max_file_bytes
        if info.file_size > limit:  # declared size: trusted only to refuse early
            raise IngestError("too_large", f"archive member exceeds {limit} bytes")
        chunks, size = [], 0
        try:
            with self.open().open(info) as member:
                while True:
                    chunk = member.read(_CHUNK)
                    if not chunk:
                        break
                    size += len(chunk)
                    self.inflated += len(chunk)
                    self._check(size, info)
                    chunks.append(chunk)
        except IngestError:
            raise
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            raise IngestError("corrupt", f"archive member cannot be read ({type(exc).__name__})") from exc
        except (NotImplementedError, RuntimeError) as exc:
            raise IngestError("unsupported_format", "archive member uses an unsupported compression") from exc
        data = b"".join(chunks)
        if data[:4] in _ZIP_MAGIC:
            raise IngestError("unsupported_format", "nested archives are not expanded")
        return data

    def _check(self, size: int, info: zipfile.ZipInfo) -> None:
        limits = self.limits
        if size > limits.max_file_bytes:
            raise IngestError("too_large", f"archive member exceeds {limits.max_file_bytes} bytes")
        if self.inflated > limits.max_zip_total_bytes:
            raise IngestError("too_large", f"archive inflates to more than {limits.max_zip_total_bytes} bytes")
        if size > RATIO_FLOOR and size > limits.max_zip_ratio * max(info.compress_size, 1):
            raise IngestError("too_large", f"compression ratio above {limits.max_zip_ratio} (zip bomb guard)")


def _zip_sources(path: Path, name: str, limits: _Limits) -> Iterator[SourceRef]:
    archive = _Archive(path, limits)
    try:
        infos = archive.open().infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        yield SourceRef(name=name, error=IngestError("corrupt", f"damaged ZIP archive ({type(exc).__name__})"))
        return
    try:
        for info in sorted(infos, key=lambda i: i.filename):
            parts = [p for p in info.filename.replace("\\", "/").split("/") if p]
            if info.is_dir() or not parts or any(_skipped(p) for p in parts):
                continue
            member_name = f"{name}/{'/'.join(parts)}"
            if info.flag_bits & 0x1:
                yield SourceRef(member_name, error=IngestError("unsupported_format", "encrypted archive member"))
            elif parts[-1].lower().endswith(".zip"):
                yield SourceRef(member_name,
                                error=IngestError("unsupported_format", "nested archives are not expanded"))
            else:
                yield SourceRef(member_name, reader=lambda info=info: archive.read_member(info))
    finally:
        archive.close()  # refs read later reopen the archive on demand
