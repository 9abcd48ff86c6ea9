"""manage.py generate_variants — adversarial variants for QA items (resumable, batched)."""
from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotation import selectors
from annotation.models import VariantKind
from annotation.services.variants import variants_generate


class Command(BaseCommand):
    help = ("Generate the clean variant and every applicable adversarial variant for current QA items "
            "(approved ones by default). Items that already have variants for this seed are skipped.")

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--status", default="approved", help="item status to include, or 'any'")
        parser.add_argument("--kinds", default="", help=f"comma-separated subset of: {', '.join(VariantKind.values)}")
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, seed, status, kinds, batch_size, no_progress, **opts):
        chosen = [k.strip() for k in kinds.split(",") if k.strip()] or None
        unknown = sorted(set(chosen or ()) - set(VariantKind.values))
        if unknown:
            raise CommandError(f"unknown variant kinds: {', '.join(unknown)}")
        ids = selectors.item_id_list(status="" if status == "any" else status)
        bar = tqdm(total=len(ids), unit="item", disable=no_progress, file=sys.stderr, dynamic_ncols=True)
        summary = variants_generate(items=ids, actor=None, seed=seed, kinds=chosen, batch_size=batch_size,
                                    progress=bar.update)
        bar.close()
        self.stdout.write(f"Variants: {summary.variants} created for "
                          f"{summary.items - summary.skipped_existing} item(s); "
                          f"{summary.skipped_existing} item(s) already had variants for seed {seed}.")
