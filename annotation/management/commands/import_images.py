"""manage.py import_images PATH... — files, folders (recursive) and zip archives."""
from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.selectors import user_find
from annotation.models import ImportBatch
from annotation.services.images import ImportDefaults, images_import, path_sources


class Command(BaseCommand):
    help = ("Import DICOM, NIfTI, PNG, JPEG and TIFF images (files, folders, zip archives). DICOM is "
            "de-identified before anything is stored; bad files are reported and leave nothing behind.")

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
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

    def handle(self, *args, paths, user, no_progress, **opts):
        actor = None
        if user:
            actor = user_find(username=user)
            if actor is None:
                raise CommandError(f"no user named {user!r}")
        defaults = ImportDefaults(
            source_dataset=opts["source_dataset"], license=opts["license"], modality=opts["modality"],
            body_region=opts["body_region"], split_group=opts["split_group"],
        )
        overrides = {k: opts[k] for k in ("nifti_axis", "nifti_slices") if opts[k] is not None}
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
        self.stdout.write(
            f"Batch #{batch.pk}: {batch.files_imported} file(s) imported ({batch.images_created} images), "
            f"{batch.files_duplicate} duplicate(s) skipped, {batch.files_failed} rejected."
        )
        if batch.files_failed and not batch.files_imported and not batch.files_duplicate:
            raise CommandError("no file could be imported")
