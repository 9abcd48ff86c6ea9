"""The per-file import engine behind `images_import`, `image_import_source` and the workers' chunks.

For each file: read → decode with the frames hashed first (`annotation.ingest.decode(known=...)`: a file
whose frames are all imported stops before de-identification and rendering) → PNG-encode the new frames →
hand it to the write side (`ingest_commit.Sink`): store the de-identified source and the PNGs, then one
transaction with the file's result, its `Image` rows, its audit event and the batch's counters.

**A pipeline in one process.** On PostgreSQL, when the caller holds no transaction, the write side runs on
its own thread with its own database connection: while file *n + 1* is decoded here, file *n*'s stored
files are fsynced and its rows committed there (that thread mostly waits on the disk and the database).
Files are handed over in order through a bounded queue (`PIPELINE_DEPTH`) holding only what is to be
stored and the rows' fields (the decoded pixels are released once the PNGs are encoded; a file storing
more than `BIG_FILE_BYTES` waits for an empty queue). Otherwise (SQLite, or inside the caller's
transaction, e.g. tests) the write side runs inline. Either way a file is stored before its rows commit,
and `close()` returns once every file is committed and durable.
"""
from __future__ import annotations

import io
import logging
import queue
import threading
from collections.abc import Callable

from django.db import connection

from annotation.ingest import decode
from annotation.ingest.types import DecodeOptions, IngestError
from annotation.models import Image, ImportBatch, ImportFileResult
from annotation.services.ingest_commit import Imported, Sink

logger = logging.getLogger(__name__)

PIPELINE_DEPTH = 8
#: a file whose stored bytes exceed this is handed over only once the queue is empty
BIG_FILE_BYTES = 16 * 1024 * 1024
_IDLE_S = 0.2
_STOP = object()


def png_bytes(rendered) -> bytes:
    """The stored PNG of a rendered frame (zlib level 6, Pillow's default; bench/ingest.py's bare loop
    encodes with the same)."""
    buf = io.BytesIO()
    rendered.save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def _imported(hashes: list[str]) -> set[str]:
    """The hashes among `hashes` that an `Image` has (once per file: one plain query on PostgreSQL)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT sha256 FROM {Image._meta.db_table} WHERE sha256 = ANY(%s)", [list(hashes)])
            return {row[0] for row in cursor.fetchall()}
    return set(Image.objects.filter(sha256__in=hashes).values_list("sha256", flat=True))


class FileImporter:
    """Imports files into one batch (see the module docstring). Use as a context manager, or call
    `close()`: files still in flight are committed there. `on_result` gets each recorded result (on the
    write side's thread when it has one)."""

    def __init__(self, *, batch: ImportBatch, actor, defaults, options: DecodeOptions,
                 on_result: Callable[[ImportFileResult], None] | None = None, pipeline: bool = True):
        self.options = options
        self.sink = Sink(batch=batch, actor=actor, defaults=defaults, on_result=on_result)
        self._in_flight: set[str] = set()  # hashes handed to the write side: known to this importer's next files
        self._lookup: tuple[tuple[str, ...], set[str]] = ((), set())
        self._error: BaseException | None = None
        self._thread = None
        if pipeline and connection.vendor == "postgresql" and not connection.in_atomic_block:
            self._jobs: queue.Queue = queue.Queue(maxsize=PIPELINE_DEPTH)
            self._thread = threading.Thread(target=self._write_side, name="ingest-write", daemon=True)
            self._thread.start()

    @property
    def results(self) -> list[ImportFileResult]:
        return self.sink.results

    # ------------------------------------------------------------------ the read side (this thread)
    def add(self, source, *, name: str | None = None, position: int | None = None) -> None:
        self._raise_failure()
        name = source.name if name is None else name
        try:
            decoded = decode(source.read(), name=name, options=self.options, known=self._known)
        except IngestError as exc:
            logger.info("import rejected a file: %s", exc.code)
            return self._send("result", name=name, position=position, status="failed", code=exc.code,
                              message=exc.message)
        except Exception as exc:  # a decoder bug must not stop the batch; keep the message free of file content
            logger.warning("decoder crashed on a file: %s", type(exc).__name__)
            return self._send("result", name=name, position=position, status="failed", code="decode_error",
                              message=f"the file could not be decoded ({type(exc).__name__})")

        hashes = decoded.frame_hashes
        known = self._known(hashes) if decoded.frames else set(hashes)
        seen: set[str] = set()
        new = []
        for frame in decoded.frames:
            if frame.sha256 not in known and frame.sha256 not in seen:
                seen.add(frame.sha256)
                new.append((frame.sha256, frame))
        duplicates = len(hashes) - len(new)
        if not new:
            return self._send("result", name=name, position=position, status="duplicate", images_duplicate=duplicates,
                              message=f"{'the image was' if len(hashes) == 1 else f'all {len(hashes)} images were'} "
                                      "already imported")
        self._in_flight.update(seen)
        item = Imported(name=name, position=position, decoded=decoded, new=new, duplicates=duplicates,
                        pngs=[png_bytes(frame.rendered) for _, frame in new])
        for frame in decoded.frames:  # what waits in the queue: the bytes to store and the rows' fields
            frame.size = frame.rendered.size
            frame.pixels = frame.rendered = None
        if len(decoded.stored_bytes or b"") + sum(map(len, item.pngs)) > BIG_FILE_BYTES and self._thread is not None:
            self._jobs.join()  # a big file waits alone: memory stays within a few big files
        return self._send("imported", item)

    def _known(self, hashes: list[str]) -> set[str]:
        """Which of `hashes` are imported already (or being imported by this importer)."""
        key = tuple(hashes)
        if self._lookup[0] != key:
            self._lookup = (key, _imported(hashes))
        return self._lookup[1] | (self._in_flight & set(hashes))

    def _send(self, kind: str, *args, **fields) -> None:
        if self._thread is None:
            getattr(self.sink, kind)(*args, **fields)
            return
        while True:
            try:
                self._jobs.put((kind, args, fields), timeout=_IDLE_S)
                return
            except queue.Full:
                self._raise_failure()

    def _raise_failure(self) -> None:
        if self._error is not None:
            raise self._error

    # ------------------------------------------------------------------ the write side (its own thread)
    def _write_side(self) -> None:
        try:
            while True:
                try:
                    job = self._jobs.get(timeout=_IDLE_S)
                except queue.Empty:
                    self.sink.tick(idle=True)
                    continue
                try:
                    if job is _STOP:
                        self.sink.finish()
                        return
                    kind, args, fields = job
                    getattr(self.sink, kind)(*args, **fields)
                finally:
                    self._jobs.task_done()
        except BaseException as exc:  # noqa: BLE001 - handed to the read side, raised there
            self._error = exc
            self.sink.abandon()
            while True:  # unblock a read side waiting to put (or to join)
                try:
                    self._jobs.get_nowait()
                    self._jobs.task_done()
                except queue.Empty:
                    break
        finally:
            connection.close()  # this thread's own connection

    # ------------------------------------------------------------------ end
    def close(self) -> list[ImportFileResult]:
        if self._thread is None:
            self.sink.finish()
        else:
            self._stop()
            self._raise_failure()
        return self.sink.results

    def _stop(self) -> None:
        while self._thread.is_alive():
            try:
                self._jobs.put(_STOP, timeout=_IDLE_S)
                break
            except queue.Full:
                continue
        self._thread.join()

    def __enter__(self) -> FileImporter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
            return
        if self._thread is None:
            self.sink.abandon()
        else:  # what was handed over is committed; nothing half-imported either way
            self._stop()
