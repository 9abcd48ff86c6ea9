"""Expand what a curator hands in (paths, or uploaded files) into readable sources.

`iter_sources` (paths: files, folders, ZIP archives) and `iter_uploads` (file objects received
over HTTP) yield one `SourceRef` per candidate file, lazily: nothing is read until
``SourceRef.read()`` is called, and every failure (missing path, file too large, zip bomb,
damaged archive, nested archive, unsafe member path) is carried by the ref and raised as an
`IngestError` from ``read()``, so one bad file never stops the others and every refusal is
reported under its own name.

- Sizes are checked before anything is read: a file's size on disk or an upload's size.
- Folders are walked recursively in sorted order; hidden files and folders (name starting
  with ``.``) and ``__MACOSX`` folders are skipped (operating-system clutter, not images).
- ZIP archives (recognised by content, not name) are expanded one level, with `SourceLimits`:

  * from the central directory, before any member is inflated: the member count
    (``max_zip_members``, checked from the end-of-central-directory record before the
    directory itself is parsed) and the declared total size (``max_zip_total_bytes``) refuse
    the whole archive (one ref, named after the archive); a member's declared size
    (``max_file_bytes``) or declared compression ratio (``max_zip_ratio``) refuses that member;
  * while streaming, because headers can lie: each member is inflated 64 KiB at a time and
    stops at ``max_file_bytes``, at ``max_zip_total_bytes`` inflated from the archive, and
    when what it inflated exceeds ``max_zip_ratio`` times the compressed bytes *actually read*
    from the archive (once past `RATIO_FLOOR`, so small blank images stay allowed).

  All of these raise ``too_large``.  Members are refused with a recorded reason, never
  dropped: a path that escapes the archive (``..``, absolute, drive letter) or a symbolic link
  is ``unsafe_path``; an archive inside the archive (by name or content), an encrypted member,
  or a compression other than stored/deflate (bzip2 and LZMA inflate without a bound) is
  ``unsupported_format``.
- Display names are relative: ``folder/sub/a.dcm``, ``batch.zip/a/b.dcm``.
"""
from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from .types import IngestError

GIB = 1024 ** 3
RATIO_FLOOR = 1024 * 1024
_CHUNK = 64 * 1024
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass
class SourceRef:
    """One input file.  ``read()`` returns its bytes or raises the `IngestError` it carries."""

    name: str
    reader: Callable[[], bytes] | None = field(default=None, repr=False)
    error: IngestError | None = None
    # where a file on disk came from, so another process can open it again (`reopen_sources`):
    # (the path of the file or archive, its display name, the ref's ordinal among that file's refs)
    origin: tuple[str, str, int] | None = None

    def read(self) -> bytes:
        if self.error is not None:
            raise self.error
        assert self.reader is not None
        return self.reader()


@dataclass(frozen=True)
class SourceLimits:
    max_file_bytes: int
    max_zip_total_bytes: int = 4 * GIB
    max_zip_ratio: int = 200
    max_zip_members: int = 10_000


def iter_sources(
    paths: Iterable[str | Path], *, max_file_bytes: int, max_zip_total_bytes: int = 4 * GIB,
    max_zip_ratio: int = 200, max_zip_members: int = 10_000,
) -> Iterator[SourceRef]:
    """Yield a `SourceRef` for every file under `paths` (see the module docstring)."""
    limits = SourceLimits(max_file_bytes, max_zip_total_bytes, max_zip_ratio, max_zip_members)
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


def iter_uploads(
    uploads: Iterable[tuple[str, BinaryIO, int]], *, limits: SourceLimits, max_upload_bytes: int | None = None,
) -> Iterator[SourceRef]:
    """Yield refs for uploaded files given as ``(name, seekable binary file, size)``.

    An upload over `max_upload_bytes` is refused from its size alone; a ZIP upload is expanded
    like a ZIP on disk (its own size may exceed ``max_file_bytes``, its members may not)."""
    for name, fh, size in uploads:
        if max_upload_bytes is not None and size > max_upload_bytes:
            yield SourceRef(name, error=IngestError("too_large", f"upload exceeds {max_upload_bytes} bytes"))
            continue
        try:
            fh.seek(0)
            head = fh.read(4)
            fh.seek(0)
        except OSError as exc:
            yield SourceRef(name, error=IngestError("unreadable", f"cannot read upload ({type(exc).__name__})"))
            continue
        if head in _ZIP_MAGIC:
            yield from _zip_sources(lambda fh=fh: fh, name, limits)
        else:
            yield SourceRef(name, reader=lambda fh=fh, size=size: _read_stream(fh, size, limits.max_file_bytes))


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _skipped(d))
        for name in sorted(filenames):
            if not _skipped(name):
                yield Path(dirpath) / name


def _skipped(name: str) -> bool:
    return name.startswith(".") or name == "__MACOSX"


def _file_sources(path: Path, name: str, limits: SourceLimits) -> Iterator[SourceRef]:
    if _is_zip(path):
        refs = _zip_sources(lambda: open(path, "rb"), name, limits, owns_file=True)
    else:
        refs = iter([SourceRef(name=name, reader=lambda: _read_file(path, limits.max_file_bytes))])
    where = str(path.absolute())
    for ordinal, ref in enumerate(refs):
        ref.origin = (where, name, ordinal)
        yield ref


def reopen_sources(origins: Iterable[tuple[str, str, int]], *, limits: SourceLimits) -> list[SourceRef]:
    """The refs `iter_sources` gave for these origins, listed again (in another process: a worker importing
    its chunk of a batch), in the order given. Every limit is checked again; an archive's central directory
    is read once per call. A file that changed so that an origin is gone becomes a ``not_found`` ref."""
    origins = list(origins)
    found: dict[tuple[str, str, int], SourceRef] = {}
    for where, name in dict.fromkeys((o[0], o[1]) for o in origins):
        path = Path(where)
        if not path.is_file():
            continue
        wanted = {o[2] for o in origins if o[0] == where and o[1] == name}
        for ref in _file_sources(path, name, limits):
            if ref.origin[2] in wanted:
                found[ref.origin] = ref
    gone = IngestError("not_found", "the file changed or disappeared before it was imported")
    return [found.get(tuple(o)) or SourceRef(o[1], error=gone, origin=tuple(o)) for o in origins]


def _is_zip(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) in _ZIP_MAGIC
    except OSError:
        return False


def _read_file(path: Path, limit: int) -> bytes:
    try:
        with open(path, "rb") as fh:
            return _read_stream(fh, os.fstat(fh.fileno()).st_size, limit)
    except FileNotFoundError as exc:
        raise IngestError("not_found", "file disappeared before it was read") from exc
    except OSError as exc:
        raise IngestError("unreadable", f"cannot read file ({type(exc).__name__})") from exc


def _read_stream(fh: BinaryIO, size: int, limit: int) -> bytes:
    """The size is checked before a byte is read; the read itself never takes more than limit + 1."""
    if size > limit:
        raise IngestError("too_large", f"file exceeds {limit} bytes")
    fh.seek(0)
    data = fh.read(limit + 1)
    if len(data) > limit:
        raise IngestError("too_large", f"file exceeds {limit} bytes")
    return data


class _CountingFile:
    """The archive's file object, counting the bytes zipfile reads from it (compressed input)."""

    def __init__(self, fh: BinaryIO):
        self.fh = fh
        self.consumed = 0

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(n)
        self.consumed += len(data)
        return data

    def seek(self, *args) -> int:
        return self.fh.seek(*args)

    def tell(self) -> int:
        return self.fh.tell()

    def seekable(self) -> bool:
        return True


class _Archive:
    """One ZIP shared by its members' refs: opened on first read, inflated total kept."""

    def __init__(self, opener: Callable[[], BinaryIO], limits: SourceLimits, owns_file: bool):
        self.opener, self.limits, self.owns_file = opener, limits, owns_file
        self.inflated = 0
        self._fh: _CountingFile | None = None
        self._zip: zipfile.ZipFile | None = None

    def open(self) -> zipfile.ZipFile:
        if self._zip is None:
            self._fh = _CountingFile(self.opener())
            self._fh.seek(0)
            self._zip = zipfile.ZipFile(self._fh)  # type: ignore[arg-type]
        return self._zip

    def declared_members(self) -> int | None:
        """Entry count from the end-of-central-directory record, before the directory is parsed."""
        fh = self.opener()
        try:
            fh.seek(0)
            end = zipfile._EndRecData(fh)  # noqa: SLF001 - stdlib helper, stable since Python 2
        except (AttributeError, OSError, ValueError):
            return None
        finally:
            if self.owns_file:
                fh.close()
        return None if not end else int(end[zipfile._ECD_ENTRIES_TOTAL])  # noqa: SLF001

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
            self._zip = None
        if self._fh is not None and self.owns_file:
            self._fh.fh.close()
        self._fh = None

    def read_member(self, info: zipfile.ZipInfo) -> bytes:
        chunks, size = [], 0
        try:
            archive = self.open()
            with archive.open(info) as member:
                assert self._fh is not None
                start = self._fh.consumed
                while True:
                    chunk = member.read(_CHUNK)
                    if not chunk:
                        break
                    if not chunks and chunk[:4] in _ZIP_MAGIC:
                        raise IngestError("unsupported_format", "nested archive (archives are expanded one level)")
                    size += len(chunk)
                    self.inflated += len(chunk)
                    self._check(size, self._fh.consumed - start)
                    chunks.append(chunk)
        except IngestError:
            raise
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            raise IngestError("corrupt", f"archive member cannot be read ({type(exc).__name__})") from exc
        except (NotImplementedError, RuntimeError) as exc:
            raise IngestError("unsupported_format", "archive member uses an unsupported compression") from exc
        return b"".join(chunks)

    def _check(self, size: int, compressed: int) -> None:
        limits = self.limits
        if size > limits.max_file_bytes:
            raise IngestError("too_large", f"archive member exceeds {limits.max_file_bytes} bytes")
        if self.inflated > limits.max_zip_total_bytes:
            raise IngestError("too_large", f"archive inflates to more than {limits.max_zip_total_bytes} bytes")
        if size > RATIO_FLOOR and size > limits.max_zip_ratio * max(compressed, 1):
            raise IngestError("too_large", f"compression ratio above {limits.max_zip_ratio}:1 while inflating "
                                           "(zip bomb guard)")


def _zip_sources(opener: Callable[[], BinaryIO], name: str, limits: SourceLimits,
                 owns_file: bool = False) -> Iterator[SourceRef]:
    archive = _Archive(opener, limits, owns_file)
    declared = archive.declared_members()
    if declared is not None and declared > limits.max_zip_members:
        yield SourceRef(name, error=IngestError(
            "too_large", f"archive has {declared} members, more than {limits.max_zip_members}"))
        return
    try:
        infos = archive.open().infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        archive.close()
        yield SourceRef(name=name, error=IngestError("corrupt", f"damaged ZIP archive ({type(exc).__name__})"))
        return
    try:
        error = _archive_error(infos, limits)
        if error is not None:
            yield SourceRef(name, error=error)
            return
        for info in sorted(infos, key=lambda i: i.filename):
            raw = info.filename
            parts = [p for p in raw.replace("\\", "/").split("/") if p]
            unsafe = _unsafe_path(raw, parts)
            if unsafe:
                yield SourceRef(f"{name}/{raw}", error=IngestError("unsafe_path", unsafe))
                continue
            if info.is_dir() or not parts or any(_skipped(p) for p in parts):
                continue
            member = f"{name}/{'/'.join(parts)}"
            yield SourceRef(member, error=_member_error(info, parts, limits),
                            reader=lambda info=info: archive.read_member(info))
    finally:
        archive.close()  # refs read later reopen the archive on demand


def _archive_error(infos: list[zipfile.ZipInfo], limits: SourceLimits) -> IngestError | None:
    """Refusals of the whole archive, from its central directory."""
    if len(infos) > limits.max_zip_members:
        return IngestError("too_large", f"archive has {len(infos)} members, more than {limits.max_zip_members}")
    total = sum(i.file_size for i in infos)
    if total > limits.max_zip_total_bytes:
        return IngestError("too_large", f"archive declares {total} bytes uncompressed, more than "
                                        f"{limits.max_zip_total_bytes}")
    return None


def _unsafe_path(raw: str, parts: list[str]) -> str:
    if raw.startswith(("/", "\\")) or _DRIVE.match(raw):
        return "absolute path in archive (refused: it could escape the archive)"
    if ".." in parts:
        return "path with '..' in archive (refused: it could escape the archive)"
    return ""


def _member_error(info: zipfile.ZipInfo, parts: list[str], limits: SourceLimits) -> IngestError | None:
    """Refusals of one member, from its central-directory entry (nothing inflated yet)."""
    if (info.external_attr >> 16) & 0o170000 == 0o120000:
        return IngestError("unsafe_path", "symbolic link in archive (refused: it could point outside)")
    if info.flag_bits & 0x1:
        return IngestError("unsupported_format", "encrypted archive member")
    if parts[-1].lower().endswith(".zip"):
        return IngestError("unsupported_format", "nested archive (archives are expanded one level)")
    if info.compress_type not in _METHODS:
        return IngestError("unsupported_format", f"archive member compression {info.compress_type} "
                                                 "(only stored and deflate are accepted)")
    if info.file_size > limits.max_file_bytes:
        return IngestError("too_large", f"archive member declares {info.file_size} bytes, more than "
                                        f"{limits.max_file_bytes}")
    if info.file_size > RATIO_FLOOR and info.file_size > limits.max_zip_ratio * max(info.compress_size, 1):
        return IngestError("too_large", f"declared compression ratio above {limits.max_zip_ratio}:1 "
                                        "(zip bomb guard)")
    return None
