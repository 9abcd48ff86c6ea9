"""manage.py imports_reconcile — send again the parallel-import chunks the broker lost and finish batches whose
chunks are all done (what Celery beat does every MEDR2_IMPORT_RECONCILE_S); --loop keeps sweeping."""
from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand

from annotation.services.ingest_reconcile import imports_reconcile


class Command(BaseCommand):
    help = ("Send again the chunks of parallel imports that were sent but will never be imported (lost by the "
            "broker, or whose worker died with its host), and finish batches whose chunks are all done.")

    def add_arguments(self, parser):
        parser.add_argument("--loop", action="store_true", help="keep sweeping every --interval seconds")
        parser.add_argument("--interval", type=float, default=None,
                            help="seconds between sweeps with --loop (default MEDR2_IMPORT_RECONCILE_S)")

    def handle(self, *args, loop, interval, **opts):
        interval = interval or settings.MEDR2_IMPORT_RECONCILE_S
        while True:
            summary = imports_reconcile()
            self.stdout.write(f"{summary['importing']} batch(es) importing: {summary['lost']} lost chunk(s) found, "
                              f"{summary['resent']} re-sent, {summary['finished']} batch(es) finished")
            if not loop:
                return
            time.sleep(interval)
