"""manage.py finetune_experiment --release VERSION - the stepwise vs answer-only experiment (docs/finetuning.md)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from finetune.experiment import EXPERIMENT_KINDS, run_experiment
from releases.selectors import release_find


class Command(BaseCommand):
    help = ("Pre-train a tiny VLM on the release's S1/S2 train items, fine-tune it with each recipe and seed at "
            "equal budget, evaluate all on the test split's clean and adversarial variants, and write "
            "results.json (the comparison) into --out.")

    def add_arguments(self, parser):
        parser.add_argument("--release", required=True)
        parser.add_argument("--out", required=True, help="folder for the models and results.json")
        parser.add_argument("--pretrain-steps", type=int, default=3000)
        parser.add_argument("--steps", type=int, default=300, help="the fine-tuning budget of every job")
        parser.add_argument("--seeds", default="0,1,2")
        parser.add_argument("--recipes", default="stepwise,answer_only")
        parser.add_argument("--tokens-per-step", type=int, default=1024)
        parser.add_argument("--kinds", default=",".join(EXPERIMENT_KINDS),
                            help="variant kinds evaluated (clean always); \"\" for all (slow on a CPU)")

    def handle(self, *args, release, out, pretrain_steps, steps, seeds, recipes, tokens_per_step, kinds, **opts):
        chosen = release_find(version=release)
        if chosen is None:
            raise CommandError(f"unknown release {release!r}")
        record = run_experiment(release=chosen, out=out, pretrain_steps=pretrain_steps, steps=steps,
                                seeds=[int(s) for s in seeds.split(",") if s.strip()],
                                recipes=[r.strip() for r in recipes.split(",") if r.strip()],
                                tokens_per_step=tokens_per_step, say=self.stdout.write,
                                kinds=[k.strip() for k in kinds.split(",") if k.strip()])
        self.stdout.write(f"results: {out}/results.json (run {record['run']})")
