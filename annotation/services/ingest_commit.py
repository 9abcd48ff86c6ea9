"""The write side of the import engine (`ingest_files.FileImporter`): store each imported file's
de-identified source and PNGs, then commit its rows; record duplicates and refusals.

- **Stored before committed.** A file's stored files are written (content-addressed, fsync + rename) before
  the transaction that creates its rows, so a committed row never points at a file a crash could lose; a
  transaction that fails removes the files nobody references.
- **Group commit.** Up to `GROUP` imported files commit in one transaction, each with its own result, rows
  and audit event; when that transaction fails on a uniqueness conflict (an image imported meanwhile
  elsewhere, or a file another delivery of the same chunk recorded), each file is committed again alone.
  Duplicates and refusals have no rows besides their result: they are written together (every
  `FLUSH_ROWS` files or `FLUSH_SECONDS`). The batch counters move in the same transactions.
- **Group durability.** On PostgreSQL these transactions commit with ``synchronous_commit = off`` (the
  commit does not wait for its WAL flush: no corruption, no reordering, at worst the last commits lost in
  a machine crash); `finish()` then commits one synchronous write, which flushes the WAL up to it, so every
  file is durable before the importer returns (before a chunk is marked done or a batch finished). A
  crash loses at most an unfinished chunk's last files, which its redelivery imports again.
- With a `position` (the file's place in its batch), a file another delivery already recorded is skipped.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction
from django.db.models import F

from annotation.ingest.types import DecodedSource
from annotation.models import Image, ImportBatch, ImportFileResult
from annotation.storage import StoredFile, discard, put_bytes
from audit.services import audit_record

logger = logging.getLogger(__name__)

GROUP = 8
FLUSH_ROWS = 64
FLUSH_SECONDS = 0.5
COUNTERS = {"imported": "files_imported", "duplicate": "files_duplicate", "failed": "files_failed"}


@dataclass
class Imported:
    """A decoded file with new frames: what to store and the rows to create."""

    name: str
    position: int | None
    decoded: DecodedSource
    new: list          # (sha256, DecodedFrame) of the frames not imported yet
    duplicates: int    # frames of the file that were
    pngs: list[bytes]  # one per new frame


def discard_unreferenced(written: list[StoredFile]) -> None:
    """Remove the files a failed import created, unless a committed row now uses them."""
    paths = [f.rel_path for f in written if f.created]
    if not paths:
        return
    used = set(Image.objects.filter(file__in=paths).values_list("file", flat=True))
    used |= set(Image.objects.filter(source_file__in=paths).values_list("source_file", flat=True))
    discard([f for f in written if f.rel_path not in used])


def store(item: Imported) -> list[StoredFile]:
    """Write one file's de-identified source and PNGs. On failure, what it wrote is removed."""
    written: list[StoredFile] = []
    try:
        if item.decoded.stored_bytes is not None:
            written.append(put_bytes(item.decoded.stored_bytes, kind="sources", suffix=item.decoded.stored_suffix))
        for png in item.pngs:
            written.append(put_bytes(png, kind="images", suffix=".png"))
    except BaseException:
        discard(written)
        raise
    return written


class Sink:
    """Receives imported files and results, in order, on one thread and one database connection."""

    def __init__(self, *, batch: ImportBatch, actor, defaults, on_result=None):
        self.batch, self.actor, self.defaults, self.on_result = batch, actor, defaults, on_result
        self.ready: list[tuple[Imported, list[StoredFile]]] = []
        self.rows: list[ImportFileResult] = []
        self.oldest = 0.0
        self.relaxed = 0
        self.results: list[ImportFileResult] = []

    # ------------------------------------------------------------------ input
    def result(self, **fields) -> None:
        """A file without new images (duplicate or refused): recorded with the next flush."""
        if not self.rows and not self.ready:
            self.oldest = time.monotonic()
        self.rows.append(ImportFileResult(batch=self.batch, **fields))
        self.tick()

    def imported(self, item: Imported) -> None:
        written = store(item)
        if not self.rows and not self.ready:
            self.oldest = time.monotonic()
        self.ready.append((item, written))
        self.tick()

    def tick(self, idle: bool = False) -> None:
        """Commit what is due: a full group, a full buffer, anything waiting longer than FLUSH_SECONDS, or
        everything when the importer is `idle` (no file coming)."""
        due = idle or time.monotonic() - self.oldest > FLUSH_SECONDS
        if len(self.ready) >= GROUP or (self.ready and due):
            self._commit_group()
        if len(self.rows) >= FLUSH_ROWS or (self.rows and due):
            self._flush()

    def finish(self) -> None:
        while self.ready:
            self._commit_group()
        self._flush()
        if self.relaxed:  # one synchronous commit flushes the WAL of every relaxed one before it
            with transaction.atomic():
                ImportBatch.objects.filter(pk=self.batch.pk).update(files_total=F("files_total"))
            self.relaxed = 0

    def abandon(self) -> None:
        """The importer stops on an error: remove the stored files of what will not be committed."""
        for _, written in self.ready:
            discard_unreferenced(written)
        self.ready, self.rows = [], []

    # ------------------------------------------------------------------ commits
    def _commit_group(self) -> None:
        group, self.ready = self.ready[:GROUP], self.ready[GROUP:]
        if len(group) == 1:
            return self._commit_one(*group[0])
        try:
            with transaction.atomic():
                self._relax()
                results = ImportFileResult.objects.bulk_create([self._row(item) for item, _ in group])
                rows = [_image_rows(item.decoded, item.new, written, result, self.defaults)
                        for (item, written), result in zip(group, results)]
                images = iter(_insert_images([row for file_rows in rows for row in file_rows]))
                for (item, _), result, file_rows in zip(group, results, rows):
                    self._audit(item, result, [next(images) for _ in file_rows])
                _count(self.batch.pk, results)  # last: the batch row is locked only until the commit
        except IntegrityError:
            for item, written in group:
                self._commit_one(item, written)
            return None
        except BaseException:
            for _, written in group:
                discard_unreferenced(written)
            raise
        for result in results:
            self._done(result)
        return None

    def _commit_one(self, item: Imported, written: list[StoredFile]) -> None:
        try:
            with transaction.atomic():
                self._relax()
                result = self._row(item)
                result.save(force_insert=True)
                images = _insert_images(_image_rows(item.decoded, item.new, written, result, self.defaults))
                self._audit(item, result, images)
                _count(self.batch.pk, [result])
        except IntegrityError:
            # another importer stored the same image between our check and our insert, or another delivery
            # of this chunk recorded this file: its committed rows may point at the very files we wrote
            # (content-addressed), so keep referenced ones
            discard_unreferenced(written)
            if not (item.position is not None and ImportFileResult.objects.filter(
                    batch=self.batch, position=item.position).exists()):
                self.result(name=item.name, position=item.position, status="duplicate",
                            images_duplicate=len(item.new) + item.duplicates,
                            message="imported concurrently by another import")
            return
        except BaseException:
            discard_unreferenced(written)
            raise
        self._done(result)

    def _row(self, item: Imported) -> ImportFileResult:
        return ImportFileResult(batch=self.batch, name=item.name, position=item.position, status="imported",
                                images_created=len(item.new), images_duplicate=item.duplicates)

    def _audit(self, item: Imported, result: ImportFileResult, images: list[Image]) -> None:
        audit_record(actor=self.actor, action="annotation.image.import", target=result, after={
            "image_ids": [i.pk for i in images], "sha256": [i.sha256 for i in images],
            "format": item.decoded.format, "modality": images[0].modality, "deid": item.decoded.deid_record,
            "duplicates_skipped": item.duplicates,
        })

    def _flush(self) -> None:
        rows, self.rows = self.rows, []
        if not rows:
            return
        with transaction.atomic():
            self._relax()
            positions = [r.position for r in rows if r.position is not None]
            if positions:  # another delivery of the same chunk may have recorded some of them
                taken = set(ImportFileResult.objects.filter(batch=self.batch, position__in=positions)
                            .values_list("position", flat=True))
                rows = [r for r in rows if r.position is None or r.position not in taken]
            created = ImportFileResult.objects.bulk_create(rows)
            _count(self.batch.pk, created)
        for result in created:
            self._done(result)

    def _relax(self) -> None:
        """This transaction's commit does not wait for its WAL flush (see "Group durability")."""
        if connection.vendor == "postgresql" and not connection.savepoint_ids:
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
            self.relaxed += 1

    def _done(self, result: ImportFileResult) -> None:
        self.results.append(result)
        if self.on_result is not None:
            self.on_result(result)


def _count(batch_id: int, results: list[ImportFileResult]) -> None:
    """Add these results to the batch's counters (one UPDATE)."""
    if not results:
        return
    add: dict = {}
    for r in results:
        add[COUNTERS[r.status]] = add.get(COUNTERS[r.status], 0) + 1
    updates = {column: F(column) + n for column, n in add.items()}
    created = sum(r.images_created for r in results)
    if created:
        updates["images_created"] = F("images_created") + created
    ImportBatch.objects.filter(pk=batch_id).update(**updates)


def _image_rows(decoded: DecodedSource, new, written: list[StoredFile], result: ImportFileResult,
                defaults) -> list[Image]:
    stored_source = written[0] if decoded.stored_bytes is not None else None
    pngs = written[1:] if stored_source is not None else written
    rows = []
    for (sha, frame), png in zip(new, pngs):
        width, height = frame.size if frame.rendered is None else frame.rendered.size
        rows.append(Image(
            sha256=sha, file=png.rel_path, width=width, height=height,
            modality=(decoded.modality or defaults.modality)[:16],
            body_region=(decoded.body_region or defaults.body_region)[:64],
            source_format=decoded.format,
            source_file=stored_source.rel_path if stored_source else "",
            source_sha256=stored_source.sha256 if stored_source else "",
            frame_index=frame.frame_index,
            series_uid=decoded.series_uid, series_position=decoded.series_position,
            source_dataset=defaults.source_dataset, license=defaults.license,
            split_group=defaults.split_group or decoded.split_key or f"img-{sha[:16]}",
            window_center=frame.window_center, window_width=frame.window_width, window_source=frame.window_source,
            deid=decoded.deid_record, metadata=decoded.metadata,
            import_batch_id=result.batch_id, import_file=result,
        ))
    return rows


def _insert_images(rows: list[Image]) -> list[Image]:
    """One INSERT for every row (of one file or of a group), their ids set."""
    created = Image.objects.bulk_create(rows)
    if any(img.pk is None for img in created):  # backends without RETURNING
        by_sha = dict(Image.objects.filter(sha256__in=[r.sha256 for r in rows]).values_list("sha256", "pk"))
        for img in created:
            img.pk = by_sha[img.sha256]
    return created
