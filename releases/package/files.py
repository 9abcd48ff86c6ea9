"""The release's signed manifest (`MANIFEST.sha256`, `MANIFEST.sig`, `release.pub`), the deterministic
`.tar.gz`, and `verify_release` (the images and the PHI check: releases.package.images).

Manifest format: one line per file, sorted by path (POSIX, relative to the release folder), every file
except the three top-level `MANIFEST.sha256`, `MANIFEST.sig` and `release.pub`:

    <sha256 hex>  <size in bytes>  <path>\\n

`MANIFEST.sig` is the Ed25519 signature over the exact bytes of `MANIFEST.sha256`, as 128 lowercase hex
characters and "\\n". `release.pub` is the raw 32-byte Ed25519 public key as 64 lowercase hex characters
and "\\n". The release digest is the SHA-256 of the bytes of `MANIFEST.sha256` (Ed25519 signatures are
deterministic, so a rebuild signs to the same bytes).
"""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import os
import re
import shutil
import struct
import tarfile
import tempfile
import zlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from common import signing
from releases.package.snapshot import Row

if TYPE_CHECKING:
    from releases.package.images import Copied

MANIFEST = "MANIFEST.sha256"
SIGNATURE = "MANIFEST.sig"
PUBLIC_KEY = "release.pub"
UNLISTED = frozenset({MANIFEST, SIGNATURE, PUBLIC_KEY})
GZIP_LEVEL = 1   # text (JSONL, JSON, Markdown, the manifest): level 1 already shrinks JSON 5-10x
# Files whose bytes deflate cannot shrink, or not for its price, go into the archive as stored deflate blocks
# (level 0: a copy and a CRC): PNG and zstd Parquet are compressed already (level 1 gains under 1%, at 1/20 of
# the speed), and the VLMEvalKit TSV is base64 of those PNGs (level 1 gains ~23%, at ~30 MB/s on one core).
STORED_SUFFIXES = (".png", ".parquet", ".tsv")
CHUNK = 1024 * 1024
ARCHIVE_BLOCK = 4 * 1024 * 1024
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_FORBIDDEN = {b"tEXt", b"iTXt", b"zTXt", b"eXIf"}
ROW_KEYS = frozenset(f.name for f in dataclasses.fields(Row))
_IMAGE_NAME = re.compile(r"images/([0-9a-f]{64})\.png")
_MANIFEST_LINE = re.compile(r"([0-9a-f]{64})  (0|[1-9][0-9]*)  (\S(?:.*\S)?)")


class ReleaseError(Exception):
    """A release that cannot be built as asked (the services map it to a ValidationError)."""


@dataclasses.dataclass(frozen=True)
class VerifyResult:
    ok: bool
    checked: int                 # manifest entries whose size and hash were checked
    first_mismatch: str = ""     # "" when ok, else e.g. "images/ab12….png: sha256 differs"
    digest: str = ""             # SHA-256 of MANIFEST.sha256, when it could be read


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------- keys and manifest

def generate_signing_key() -> str:
    """A fresh Ed25519 private key as 64 hex characters (for the demo; real keys come from configuration)."""
    return signing.generate_signing_key()


def load_signing_key(text: str) -> bytes:
    """The raw 32-byte Ed25519 private key from 64 hex characters, base64 of the 32 bytes, or a PEM PKCS#8
    private key (unencrypted): common.signing's reading, its refusal as a ReleaseError (never repeating
    the key text)."""
    try:
        return signing.load_signing_key(text)
    except signing.SigningKeyError as exc:
        raise ReleaseError(str(exc)) from None


def _private_key(signing_key: bytes) -> Ed25519PrivateKey:
    if not isinstance(signing_key, bytes | bytearray) or len(signing_key) != 32:
        raise ReleaseError("missing signing key" if not signing_key else "signing key: expected 32 raw bytes")
    return Ed25519PrivateKey.from_private_bytes(bytes(signing_key))


def public_key_hex(signing_key: bytes) -> str:
    """The hex public key that `release.pub` will hold for this signing key."""
    return _private_key(signing_key).public_key().public_bytes_raw().hex()


def walk_files(folder: Path) -> list[str]:
    """Every file under folder as sorted relative POSIX paths; a symlink or special file is refused.
    (os.scandir: the entry types come with the listing, no stat per file: a release holds 42k images.)"""
    found: list[str] = []

    def visit(path: str, prefix: str) -> None:
        with os.scandir(path) as entries:
            for entry in entries:
                rel = prefix + entry.name
                if entry.is_symlink() or not (entry.is_dir(follow_symlinks=False)
                                              or entry.is_file(follow_symlinks=False)):
                    raise ReleaseError(f"{rel}: not a regular file or folder")
                if "\n" in rel or rel != rel.strip():
                    raise ReleaseError(f"{rel!r}: file name cannot be listed in the manifest")
                if entry.is_dir(follow_symlinks=False):
                    visit(entry.path, rel + "/")
                else:
                    found.append(rel)

    visit(str(folder), "")
    return sorted(found)


HASH_THREADS = 4   # hashlib releases the GIL on large buffers: files hash in parallel, lines stay in path order


def manifest_bytes(folder: Path, *, known: dict[str, Copied] | None = None) -> bytes:
    """The manifest's lines for every file of `folder`. `known`: the hashes of files this build wrote and
    hashed as it wrote them (the images), taken as they are while the file's size still matches."""
    folder = Path(folder)
    known = known or {}
    paths = [p for p in walk_files(folder) if p not in UNLISTED]
    base = str(folder)
    sizes = {p: os.stat(os.path.join(base, p)).st_size for p in paths}

    def digest(p: str) -> str:
        seen = known.get(p)
        return seen.sha256 if seen is not None and seen.size == sizes[p] else sha256_file(os.path.join(base, p))

    with ThreadPoolExecutor(max_workers=HASH_THREADS) as pool:
        lines = [f"{d}  {sizes[p]}  {p}\n" for p, d in zip(paths, pool.map(digest, paths))]
    return "".join(lines).encode("utf-8")


def write_manifest(out: Path, *, signing_key: bytes, known: dict[str, Copied] | None = None) -> str:
    """Write MANIFEST.sha256, MANIFEST.sig and release.pub; return the digest (SHA-256 of MANIFEST.sha256).
    `known`: see `manifest_bytes`."""
    key = _private_key(signing_key)
    out = Path(out)
    body = manifest_bytes(out, known=known)
    (out / MANIFEST).write_bytes(body)
    (out / SIGNATURE).write_bytes(key.sign(body).hex().encode("ascii") + b"\n")
    (out / PUBLIC_KEY).write_bytes(key.public_key().public_bytes_raw().hex().encode("ascii") + b"\n")
    return hashlib.sha256(body).hexdigest()


# ---------------------------------------------------------------- archive

def epoch_of(created: str) -> int:
    """Seconds since 1970 of an ISO date or datetime (UTC when naive); 0 when it cannot be read."""
    try:
        moment = datetime.fromisoformat(created)
    except (TypeError, ValueError):
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0, int(moment.timestamp()))


class _GzipMembers:
    """A write-only file that gzips what it is given as a series of gzip members, one per ARCHIVE_BLOCK bytes of
    input, compressed on a few threads (zlib releases the GIL) and written in order. The block boundaries, not
    the thread count, decide the output, so it is deterministic; every gzip reader (gzip, tar, Python's tarfile)
    reads concatenated members as one stream. Each member's header has mtime 0, no file name, OS 255."""

    def __init__(self, raw, level: int, workers: int = 4):
        self.raw, self.level, self.pending, self.pos = raw, level, deque(), 0
        self.buf: list[bytes] = []
        self.size = 0
        self.pool = ThreadPoolExecutor(max_workers=workers)
        self.limit = 2 * workers
        self.header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00" + bytes([{9: 2, 1: 4}.get(level, 0)]) + b"\xff"

    @staticmethod
    def _member(header: bytes, level: int, data: bytes) -> bytes:
        return (header + zlib.compress(data, level, -15)
                + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF))

    def _submit(self, data: bytes) -> None:
        self.pending.append(self.pool.submit(self._member, self.header, self.level, data))
        while len(self.pending) > self.limit:
            self.raw.write(self.pending.popleft().result())

    def tell(self) -> int:
        return self.pos

    def set_level(self, level: int) -> None:
        """Compress what follows at `level`: what is buffered so far ends its member at the current level."""
        if level != self.level:
            if self.size:
                self._submit(b"".join(self.buf))
                self.buf, self.size = [], 0
            self.level = level
            self.header = self.header[:8] + bytes([{9: 2, 1: 4}.get(level, 0)]) + b"\xff"

    def write(self, data) -> int:
        data = bytes(data)
        self.buf.append(data)
        self.size += len(data)
        self.pos += len(data)
        while self.size >= ARCHIVE_BLOCK:
            joined = b"".join(self.buf)
            self._submit(joined[:ARCHIVE_BLOCK])
            rest = joined[ARCHIVE_BLOCK:]
            self.buf, self.size = ([rest] if rest else []), len(rest)
        return len(data)

    def close(self) -> None:
        try:
            if self.size:
                self._submit(b"".join(self.buf))
                self.buf, self.size = [], 0
            while self.pending:
                self.raw.write(self.pending.popleft().result())
        finally:
            self.pool.shutdown(cancel_futures=True)


def make_archive(folder: Path, tar_path: Path, *, root: str | None = None, mtime: int = 0) -> None:
    """A deterministic .tar.gz of folder, everything under `root/` (default: the folder's name): entries
    sorted, fixed mtime, uid/gid 0, no owner names, 0o644 files / 0o755 folders, PAX format; gzip members
    of at most ARCHIVE_BLOCK input bytes each, headers with mtime 0 and no file name, at GZIP_LEVEL, except
    the files named by STORED_SUFFIXES, stored (level 0); a member ends where the level changes."""
    folder = Path(folder)
    root = root or folder.name
    files = walk_files(folder)
    base = str(folder)
    dirs = sorted({p[:i] for p in files for i in range(len(p)) if p[i] == "/"})
    entries = sorted([(d, True) for d in dirs] + [(f, False) for f in files])

    def info(name: str, is_dir: bool, size: int = 0) -> tarfile.TarInfo:
        ti = tarfile.TarInfo(f"{root}/{name}" if name else root)
        ti.type = tarfile.DIRTYPE if is_dir else tarfile.REGTYPE
        ti.mode = 0o755 if is_dir else 0o644
        ti.size = size
        ti.mtime = mtime
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        return ti

    with open(tar_path, "wb") as raw:
        gz = _GzipMembers(raw, GZIP_LEVEL)
        try:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT, copybufsize=CHUNK) as tar:
                tar.addfile(info("", True))
                for name, is_dir in entries:
                    if is_dir:
                        tar.addfile(info(name, True))
                    else:
                        gz.set_level(0 if name.endswith(STORED_SUFFIXES) else GZIP_LEVEL)
                        with open(os.path.join(base, name), "rb") as f:
                            tar.addfile(info(name, False, os.fstat(f.fileno()).st_size), f)
        finally:
            gz.close()


def _safe_extract(tar_path: Path, into: Path) -> tuple[Path | None, str]:
    """Extract a release archive; (its top folder, "") or (None, why) for an unreadable or unsafe archive."""
    try:
        with tarfile.open(tar_path, mode="r:gz") as tar:
            members = tar.getmembers()
            tops = set()
            for m in members:
                parts = PurePosixPath(m.name).parts
                if m.name.startswith("/") or ".." in parts or not parts or not (m.isfile() or m.isdir()):
                    return None, f"{m.name}: unsafe archive member"
                tops.add(parts[0])
            if len(tops) != 1:
                return None, "archive: expected a single top-level folder"
            tar.extractall(into, members=members, filter="data")
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as e:
        return None, f"archive: cannot be read ({e})"
    top = into / tops.pop()
    return (top, "") if top.is_dir() else (None, "archive: expected a single top-level folder")


# ---------------------------------------------------------------- verify

def verify_release(path: Path, *, public_key_hex: str | None = None) -> VerifyResult:
    """Check a release folder or .tar.gz: the signature over the manifest (with release.pub, which must equal
    `public_key_hex` when given), every listed file's size and hash, and no file outside the manifest.
    Names the first mismatch."""
    path = Path(path)
    if path.is_file():
        with tempfile.TemporaryDirectory(prefix="release-verify-") as tmp:
            folder, why = _safe_extract(path, Path(tmp))
            if folder is None:
                return VerifyResult(False, 0, why)
            return _verify_folder(folder, public_key_hex)
    if not path.is_dir():
        return VerifyResult(False, 0, f"{path}: no such release folder or archive")
    return _verify_folder(path, public_key_hex)


def _verify_folder(folder: Path, public_key_hex: str | None) -> VerifyResult:
    def fail(why: str, checked: int = 0, digest: str = "") -> VerifyResult:
        return VerifyResult(False, checked, why, digest)

    for name in (MANIFEST, SIGNATURE, PUBLIC_KEY):
        if not (folder / name).is_file() or (folder / name).is_symlink():
            return fail(f"{name}: missing")
    body = (folder / MANIFEST).read_bytes()
    digest = hashlib.sha256(body).hexdigest()
    pub_text = (folder / PUBLIC_KEY).read_bytes().decode("ascii", "replace").strip()
    if not re.fullmatch(r"[0-9a-fA-F]{64}", pub_text):
        return fail(f"{PUBLIC_KEY}: not a 64-hex-character Ed25519 public key", digest=digest)
    if public_key_hex is not None and public_key_hex.strip().lower() != pub_text.lower():
        return fail(f"{PUBLIC_KEY}: differs from the expected public key", digest=digest)
    try:
        signature = bytes.fromhex((folder / SIGNATURE).read_bytes().decode("ascii").strip())
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(pub_text)).verify(signature, body)
    except (ValueError, UnicodeDecodeError, InvalidSignature):
        return fail(f"{SIGNATURE}: signature does not verify", digest=digest)

    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return fail(f"{MANIFEST}: not UTF-8", digest=digest)
    if text and not text.endswith("\n"):
        return fail(f"{MANIFEST}: last line not terminated", digest=digest)
    listed: list[str] = []
    checked = 0
    for n, line in enumerate(text.splitlines(), start=1):
        m = _MANIFEST_LINE.fullmatch(line)
        rel = m.group(3) if m else ""
        parts = PurePosixPath(rel).parts
        if not m or PurePosixPath(rel).as_posix() != rel or rel.startswith("/") or ".." in parts or rel in UNLISTED:
            return fail(f"{MANIFEST}: line {n} malformed", checked, digest)
        if listed and rel <= listed[-1]:
            return fail(f"{MANIFEST}: line {n} out of order or repeated ({rel})", checked, digest)
        listed.append(rel)
        target = folder / rel
        if target.is_symlink() or not target.is_file():
            return fail(f"{rel}: missing", checked, digest)
        if target.stat().st_size != int(m.group(2)):
            return fail(f"{rel}: size differs", checked, digest)
        if sha256_file(target) != m.group(1):
            return fail(f"{rel}: sha256 differs", checked, digest)
        checked += 1
    try:
        present = walk_files(folder)
    except ReleaseError as e:
        return fail(str(e), checked, digest)
    extra = sorted(set(present) - set(listed) - UNLISTED)
    if extra:
        return fail(f"{extra[0]}: not in the manifest", checked, digest)
    return VerifyResult(True, checked, "", digest)


def remove_tree(path: Path) -> None:
    """Remove a folder or file if present (used for temp folders)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()

