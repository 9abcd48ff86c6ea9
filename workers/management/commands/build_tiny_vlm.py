"""manage.py build_tiny_vlm PATH — a small random-weight LLaVA-style VLM, built offline."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from workers.tiny_vlm import build_tiny_vlm, describe_tiny_vlm


class Command(BaseCommand):
    help = ("Build a tiny LLaVA-style vision-language model offline (locally trained tokenizer, random weights) "
            "and save it with save_pretrained. It loads through the same transformers backend as a real model.")

    def add_arguments(self, parser):
        parser.add_argument("path", help="directory to write (created; must be empty or absent unless --force)")
        parser.add_argument("--hidden-size", type=int, default=64)
        parser.add_argument("--layers", type=int, default=2)
        parser.add_argument("--heads", type=int, default=4)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--force", action="store_true", help="overwrite an existing model directory")

    def handle(self, *args, path, hidden_size, layers, heads, seed, force, **opts):
        target = Path(path)
        if target.exists() and any(target.iterdir()) and not force:
            if (target / "config.json").exists():
                self.stdout.write(f"{target} already holds a model; keeping it (use --force to rebuild)")
                return
            raise CommandError(f"{target} exists and is not empty")
        try:
            build_tiny_vlm(target, hidden_size=hidden_size, num_layers=layers, num_heads=heads, seed=seed)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        info = describe_tiny_vlm(target)
        self.stdout.write(f"Built a tiny VLM in {target}: {info}")
