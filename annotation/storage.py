"""Content-addressed file store under settings.MEDR2_STORAGE_ROOT.

Files are named by the SHA-256 of their bytes and written atomically (temp file + rename),
so a crash never leaves a half-written file under a final name, and writing the same content
twice is a no-op.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, Http404


@dataclass(frozen=True)
class StoredFile:
    rel_path: str
    sha256: str
    created: bool  # False when identical content was already stored


def storage_root() -> Path:
    return Path(settings.MEDR2_STORAGE_ROOT)


def resolve(rel_path: str) -> Path:
    """Absolute path of a stored file; refuses anything that escapes the root."""
    root = storage_root().resolve()
    path = (root / rel_path).resolve()
    if root not in path.parents:
        raise ValueError("path escapes the storage root")
    return path


def put_bytes(data: bytes, *, kind: str, suffix: str) -> StoredFile:
    sha = hashlib.sha256(data).hexdigest()
    rel = f"{kind}/{sha[:2]}/{sha[2:4]}/{sha}{suffix}"
    path = storage_root() / rel
    if path.exists():
        return StoredFile(rel, sha, created=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return StoredFile(rel, sha, created=True)


def discard(files: list[StoredFile]) -> None:
    """Undo `put_bytes` for files this operation created (after a rollback)."""
    for stored in files:
        if stored.created:
            (storage_root() / stored.rel_path).unlink(missing_ok=True)


def png_response(path: Path | str):
    """A stored PNG for a permission-checked view: private caching; 404 when the file is missing.
    `path` is absolute, or relative to the storage root."""
    try:
        handle = open(path if Path(path).is_absolute() else resolve(str(path)), "rb")
    except (OSError, ValueError):
        raise Http404("image file missing from storage") from None
    response = FileResponse(handle, content_type="image/png")
    response["Cache-Control"] = "private, max-age=3600"
    return response
