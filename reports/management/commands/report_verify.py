"""Check a report file (PDF, signed PDF or JSON) against the stored versions (docs/reports.md)."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from reports.services import report_file_verify


class Command(BaseCommand):
    help = ("Check a model report's PDF, signed PDF or JSON: exit 0 when its SHA-256 is a stored version's (or "
            "signed copy's) and every signature of that version is bound to its document hash; otherwise exit 1 "
            "naming why (an unknown file, a changed file, a signature bound to another hash).")

    def create_parser(self, prog_name, subcommand, **kwargs):
        # `--version ID` names a report version here, replacing Django's `--version` (its own version)
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("path", help="the file to check")
        parser.add_argument("--version", type=int, default=None, dest="version_id",
                            help="the report version id it should be (shown on the report page)")

    def handle(self, *args, path, version_id, **options):
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
        check = report_file_verify(data=data, version_id=version_id)
        self.stdout.write(f"SHA-256 {check.sha256}  {path}")
        for line in check.matches:
            self.stdout.write(f"is {line}")
        for line in check.notes:
            self.stdout.write(line)
        if not check.ok:
            raise CommandError("report file does not verify: " + "; ".join(check.problems))
        self.stdout.write(self.style.SUCCESS("report file verifies: its hash is stored and every signature is bound "
                                             "to its version's document hash"))
