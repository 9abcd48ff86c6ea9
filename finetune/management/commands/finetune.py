"""manage.py finetune --base MODEL --release VERSION --recipe stepwise|answer_only|mixed [--steps N] - a
LoRA fine-tune with a progress bar; the fine-tuned model is registered and its paired evaluation started."""
from __future__ import annotations

import json
import time

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from finetune.core.recipes import RECIPES
from finetune.selectors import job_completed_named, job_find
from finetune.services import job_create, job_execute
from releases.selectors import release_find
from workers.selectors import endpoint_find


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


class Command(BaseCommand):
    help = ("Fine-tune a local transformers VLM with LoRA on a release's train split (or an item set) with one of "
            "the recipes, in this process with a progress bar (or on the gpu queue with --queue). When it "
            "finishes, the fine-tuned model is registered as a new model with its lineage and a paired "
            "evaluation (base vs fine-tuned, test split) starts.")

    def add_arguments(self, parser):
        parser.add_argument("--base", required=True, help="the base model's name (a transformers model)")
        parser.add_argument("--release", default="", help="release version whose train split is used")
        parser.add_argument("--stage", default="", help="without --release: comma-separated stage codes")
        parser.add_argument("--category", default="", help="without --release: comma-separated category codes")
        parser.add_argument("--recipe", required=True, choices=RECIPES)
        parser.add_argument("--steps", type=int, default=200, help="the budget: optimizer steps (default 200)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--name", default="")
        parser.add_argument("--config", default="{}",
                            help='training settings as JSON, e.g. \'{"tokens_per_step": 4096, "lr": 0.0005, '
                                 '"target_modules": ["q_proj", "v_proj", "lm_head"]}\'')
        parser.add_argument("--queue", action="store_true",
                            help="send the job to the gpu queue and follow it, instead of training in this process")
        parser.add_argument("--no-wait", action="store_true", help="with --queue: return once the job is sent")
        parser.add_argument("--skip-if-done", action="store_true",
                            help="do nothing when a completed job of this --name exists (makes the demo re-runnable)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, base, release, stage, category, recipe, steps, seed, name, config, queue, no_progress,
               no_wait, skip_if_done, **opts):
        done = job_completed_named(name=name) if skip_if_done and name else None
        if done:
            self.stdout.write(f"Fine-tuning job {done.pk} ({name}) is already complete; skipping.")
            return
        endpoint = endpoint_find(name=base)
        if endpoint is None:
            raise CommandError(f"unknown model {base!r} (see manage.py register_model)")
        chosen = None
        if release:
            chosen = release_find(version=release)
            if chosen is None:
                raise CommandError(f"unknown release {release!r}")
        try:
            settings = json.loads(config)
        except ValueError as exc:
            raise CommandError(f"--config is not JSON: {exc}") from exc
        if not isinstance(settings, dict):
            raise CommandError("--config must be a JSON object")
        filters = {"stage": _csv(stage), "category": _csv(category)}
        try:
            job = job_create(actor=None, base_endpoint=endpoint, recipe=recipe, steps=steps, release=chosen,
                             item_filters=filters, seed=seed, config=settings, name=name, start=queue)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"Fine-tuning job {job.pk}: {job.name} ({steps} steps of "
                          f"{job.config['tokens_per_step']} tokens)")
        if queue and no_wait:
            return
        bar = tqdm(total=steps, unit="step", disable=no_progress, dynamic_ncols=True)

        def show(entry: dict) -> None:
            bar.n = entry.get("step", 0)
            bar.set_postfix_str(f"loss {entry.get('loss', 0):.3f}" +
                                (f" val {entry['val_loss']:.3f}" if "val_loss" in entry else ""), refresh=False)
            bar.refresh()

        if queue:
            while True:
                job = job_find(pk=job.pk)
                show(job.progress or {})
                if not job.is_active:
                    break
                time.sleep(2)
        else:
            job = job_execute(job_id=job.pk, on_progress=show)
        bar.close()
        if job.status != job.Status.COMPLETED:
            raise CommandError(f"job {job.pk} {job.status}: {job.error or 'see its page'}")
        result = job.result
        self.stdout.write(
            f"Done: {result['steps']} steps, {result['tokens']} tokens, {result['tokens_per_s']:.0f} tokens/s, "
            f"best val loss {result['best_val_loss']}; registered {job.result_endpoint.name}"
            + (f"; paired evaluation run {job.evaluation_run_id}" if job.evaluation_run_id else ""))
