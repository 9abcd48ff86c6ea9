"""manage.py check_items — report every violation among current QA items; exit 1 if any."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.services.checks import items_check


class Command(BaseCommand):
    help = ("Validate every current QA item against its category and image: gold among options, options unique, "
            "boxes inside the image, stage consistent with category, no unfilled placeholders. "
            "Exits 1 on any violation.")

    def add_arguments(self, parser):
        parser.add_argument("--limit", type=int, default=200, help="print at most this many violations")

    def handle(self, *args, limit, **opts):
        checked, violations = items_check()
        for item_id, message in violations[:limit]:
            self.stdout.write(f"  item {item_id}: {message}")
        if len(violations) > limit:
            self.stdout.write(f"  ... and {len(violations) - limit} more")
        if violations:
            raise CommandError(f"{len(violations)} violation(s) in {checked} current item(s)")
        self.stdout.write(self.style.SUCCESS(f"{checked} current item(s) checked: no violations"))
