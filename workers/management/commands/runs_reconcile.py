"""manage.py runs_reconcile — re-send evaluation batches the broker lost and finish runs whose last
batch is done (what Celery beat does every MEDR2_EVAL_RECONCILE_S); --loop keeps sweeping."""
from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand

from workers.services.runs import runs_reconcile


class Command(BaseCommand):
    help = ("Re-send evaluation batches that were sent but will never run (lost by the broker, or whose worker "
            "died with its host), top up every running run's window, and finalize runs whose batches are done.")

    def add_arguments(self, parser):
        parser.add_argument("--loop", action="store_true", help="keep sweeping every --interval seconds")
        parser.add_argument("--interval", type=float, default=None,
                            help="seconds between sweeps with --loop (default MEDR2_EVAL_RECONCILE_S)")

    def handle(self, *args, loop, interval, **opts):
        interval = interval or settings.MEDR2_EVAL_RECONCILE_S
        while True:
            summary = runs_reconcile()
            self.stdout.write(f"{summary['running_runs']} running run(s): {summary['lost']} lost batch(es) found, "
                              f"{summary['resent']} re-sent")
            if not loop:
                return
            time.sleep(interval)
