from django.core.management.base import BaseCommand

from annotation.services.demo import demo_load


class Command(BaseCommand):
    help = ("Load the demo data: N synthetic CT/MR phantoms with ground-truth findings and boxes, plus the real "
            "DICOM/NIfTI images bundled with pydicom and nibabel. Safe to run twice.")

    def add_arguments(self, parser):
        parser.add_argument("--phantoms", type=int, default=48)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--assign-to", default="",
                            help="comma-separated usernames who get the phantom images assigned")

    def handle(self, *args, phantoms, seed, assign_to, **options):
        summary = demo_load(phantoms=phantoms, seed=seed, progress=lambda m: self.stdout.write(f"  {m}"),
                            assign_to=[u for u in assign_to.split(",") if u])
        self.stdout.write(self.style.SUCCESS(
            "Demo data: {phantoms_imported} phantom(s) and {packaged_imported} packaged file(s) imported, "
            "{findings_created} findings, {duplicates} already present, {failed} failed.".format(**summary)
        ))
