"""manage.py import_images PATH... — files, folders (recursive) and zip archives.

In this process by default; with ``--parallel`` the batch is split into chunks imported by the Celery
workers of the `cpu` queue (docs/ingest.md, "Parallel import"), and the command follows its progress.
"""
from __future__ import annotations

import sys
import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.selectors import user_find
from annotation.models import ImportBatch
from annotation.selectors import import_batch_files
from annotation.services.images import ImportDefaults, images_import, path_sources
from annotation.services.ingest_parallel import CHUNK_FILES, images_import_dispatch, import_batch_resume


class Command(BaseCommand):
    help = ("Import DICOM, NIfTI, PNG, JPEG and TIFF images (files, folders, zip archives). DICOM is "
            "de-identified before anything is stored; bad files are reported and leave nothing behind.")

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="*")
        parser.add_argument("--user", help="username recorded as the importer (default: system)")
        parser.add_argument("--source-dataset", default="")
        parser.add_argument("--license", default="")
        parser.add_argument("--modality", default="", help="used when the file does not say (e.g. MR for NIfTI)")
        parser.add_argument("--body-region", default="", help="used when the file does not say")
        parser.add_argument("--split-group", default="", help="patient/study key for every image of this run")
        parser.add_argument("--nifti-axis", type=int, choices=[0, 1, 2], default=None,
                            help="slice NIfTI volumes along this axis (0 sagittal, 1 coronal, 2 axial; default 2)")
        parser.add_argument("--nifti-slices", default=None, help="all | middle | N evenly spaced (default all)")
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument("--parallel", action="store_true",
                            help="import on the Celery workers (queue cpu), in chunks, into one batch")
        parser.add_argument("--chunk-files", type=int, default=CHUNK_FILES, help="files per chunk (--parallel)")
        parser.add_argument("--no-wait", action="store_true", help="with --parallel: dispatch and return")
        parser.add_argument("--resume", type=int, metavar="BATCH",
                            help="send the chunks of an unfinished parallel batch that are not done again now "
                                 "(audited; the periodic sweep `imports_reconcile` does it for lost ones)")

    def handle(self, *args, paths, user, no_progress, **opts):
        actor = None
        if user:
            actor = user_find(username=user)
            if actor is None:
                raise CommandError(f"no user named {user!r}")
        if opts["resume"] is not None:
            return self._resume(opts["resume"], no_progress, actor)
        if not paths:
            raise CommandError("give at least one file, folder or zip archive")
        defaults = ImportDefaults(
            source_dataset=opts["source_dataset"], license=opts["license"], modality=opts["modality"],
            body_region=opts["body_region"], split_group=opts["split_group"],
        )
        overrides = {k: opts[k] for k in ("nifti_axis", "nifti_slices") if opts[k] is not None}
        if opts["parallel"]:
            if opts["chunk_files"] < 1:
                raise CommandError("--chunk-files must be at least 1")
            batch = images_import_dispatch(paths=paths, actor=actor, defaults=defaults, option_overrides=overrides,
                                           chunk_files=opts["chunk_files"])
            if opts["no_wait"]:
                self.stdout.write(f"Batch #{batch.pk}: {batch.files_total} file(s) sent to the workers.")
                return None
            return self._follow(batch, no_progress)
        sources = path_sources(paths)
        bar = tqdm(total=len(sources), unit="file", disable=no_progress, file=sys.stderr, dynamic_ncols=True)
        failures = []
        counts = {"imported": 0, "duplicate": 0, "failed": 0}

        def on_result(result):
            counts[result.status] += 1
            if result.status == "failed":
                failures.append(result)
            bar.set_postfix(counts, refresh=False)
            bar.update(1)

        batch = images_import(sources=sources, actor=actor, source=ImportBatch.Source.COMMAND, defaults=defaults,
                              on_result=on_result, option_overrides=overrides)
        bar.close()
        for f in failures:
            self.stdout.write(self.style.ERROR(f"  rejected {f.name}: [{f.code}] {f.message}"))
        self._summary(batch)

    def _follow(self, batch, no_progress: bool):
        """The batch's progress until it is finished (the workers report into it)."""
        bar = tqdm(total=batch.files_total, unit="file", disable=no_progress, file=sys.stderr, dynamic_ncols=True)
        while True:
            batch.refresh_from_db()
            bar.update(batch.files_done - bar.n)
            bar.set_postfix({"imported": batch.files_imported, "duplicate": batch.files_duplicate,
                             "failed": batch.files_failed}, refresh=False)
            if batch.finished_at is not None:
                break
            time.sleep(0.25)
        bar.close()
        for f in import_batch_files(batch=batch).filter(status="failed"):
            self.stdout.write(self.style.ERROR(f"  rejected {f.name}: [{f.code}] {f.message}"))
        self._summary(batch)

    def _resume(self, batch_id: int, no_progress: bool, actor):
        batch, sent = import_batch_resume(batch_id=batch_id, actor=actor)
        if batch is None:
            raise CommandError(f"no import batch #{batch_id}")
        self.stdout.write(f"Batch #{batch.pk}: {sent} chunk(s) sent again.")
        return self._follow(batch, no_progress) if sent else None

    def _summary(self, batch):
        self.stdout.write(
            f"Batch #{batch.pk}: {batch.files_imported} file(s) imported ({batch.images_created} images), "
            f"{batch.files_duplicate} duplicate(s) skipped, {batch.files_failed} rejected."
        )
        if batch.files_failed and not batch.files_imported and not batch.files_duplicate:
            raise CommandError("no file could be imported")
