"""manage.py generate_chains — stepwise QA chains for images (resumable, batched)."""
from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.selectors import user_find
from annotation import selectors
from annotation.chains import ChainPolicy
from annotation.services.chains import chains_generate


class Command(BaseCommand):
    help = ("Generate a stepwise chain (S1 perception → S2 detection → S3 characterization → S4 diagnosis, "
            "wherever the image's data supports each stage) for each image. Images that already have a chain "
            "for this seed are skipped, so the command can be re-run or resumed.")

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--images", default="", help="comma-separated image ids (default: all images)")
        parser.add_argument("--source-dataset", default="", help="only images of this source dataset")
        parser.add_argument("--steps-per-stage", type=int, default=ChainPolicy().steps_per_stage)
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument("--user", help="username recorded as the author (default: system)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, seed, images, source_dataset, steps_per_stage, batch_size, user, no_progress, **opts):
        actor = None
        if user:
            actor = user_find(username=user)
            if actor is None:
                raise CommandError(f"no user named {user!r}")
        chosen = [int(i) for i in images.split(",") if i.strip()] if images else None
        ids = selectors.image_id_list(ids=chosen, source_dataset=source_dataset)
        bar = tqdm(total=len(ids), unit="image", disable=no_progress, file=sys.stderr, dynamic_ncols=True)
        summary = chains_generate(image_ids=ids, actor=actor, seed=seed, batch_size=batch_size,
                                  policy=ChainPolicy(steps_per_stage=steps_per_stage), progress=bar.update)
        bar.close()
        for line in summary.violations:
            self.stdout.write(self.style.WARNING(f"  skipped invalid step: {line}"))
        self.stdout.write(
            f"Chains: {summary.chains} created with {summary.items} items for {summary.images} image(s); "
            f"{summary.skipped_existing} already had a chain (seed {seed}), {summary.skipped_no_steps} had no "
            f"applicable step, {summary.invalid_steps} invalid step(s) skipped."
        )
