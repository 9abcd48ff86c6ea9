"""manage.py labelstudio_sync — pull annotations from Label Studio now (the Celery beat job does
the same every LABEL_STUDIO_SYNC_INTERVAL_S); --loop keeps pulling (the demo, without a beat)."""
from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from labelstudio import selectors
from labelstudio.client import LabelStudioError
from labelstudio.services import batch_sync, reconcile_all


class Command(BaseCommand):
    help = "Reconcile every pushed batch (or --batch N) with Label Studio."

    def add_arguments(self, parser):
        parser.add_argument("--batch", type=int, help="only this batch")
        parser.add_argument("--full", action="store_true",
                            help="every task, not only those changed since the last sync")
        parser.add_argument("--loop", action="store_true", help="keep pulling every --interval seconds")
        parser.add_argument("--interval", type=float, default=15.0)

    def handle(self, *args, batch, full, loop, interval, **opts):
        while True:
            try:
                if batch is None and not full:
                    summary = reconcile_all()
                    self.stdout.write(f"{summary['batches']} batch(es): {summary['created']} new, {summary['updated']} "
                                      f"changed, {summary['retired']} retired annotation(s)"
                                      + ("; Label Studio unavailable" if summary["unavailable"] else ""))
                    if summary["unavailable"] and not loop:
                        raise CommandError("Label Studio is unavailable: nothing was pulled after the batches above; "
                                           "the next sync pulls everything since the last successful one")
                else:
                    for b in selectors.batches_pushed(pk=batch):
                        r = batch_sync(batch=b, full=full)
                        self.stdout.write(f"batch {b.pk}: {r.tasks_seen} task(s), {r.annotations_created} new, "
                                          f"{r.annotations_updated} changed, {r.annotations_retired} retired, "
                                          f"{r.rejected_regions} rejected region(s)")
            except LabelStudioError as exc:
                if not loop:
                    raise CommandError(str(exc)) from None
                self.stderr.write(f"Label Studio: {exc}; retrying in {interval:.0f} s")
            if not loop:
                return
            time.sleep(interval)
