"""manage.py audit_shortcuts: run a shortcut audit now, with a progress bar (docs/validity.md)."""
from __future__ import annotations

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.selectors import user_find
from validity.services import shortcut_audit_run


class Command(BaseCommand):
    help = "Audit current QA items for text-only shortcuts (blind baselines fitted on train, scored on --split)."

    def add_arguments(self, parser):
        parser.add_argument("--status", default="approved", help="item status (default approved; 'any' for all)")
        parser.add_argument("--stage", default="")
        parser.add_argument("--category", default="", help="comma-separated category codes")
        parser.add_argument("--modality", default="")
        parser.add_argument("--source-dataset", default="")
        parser.add_argument("--split", default="test", help="split the baselines are scored on: test (default) or val")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates")
        parser.add_argument("--json", action="store_true", help="print the results as JSON")
        parser.add_argument("--user", default="", help="the actor recorded in the audit trail")

    def handle(self, *args, **opts):
        actor = None
        if opts["user"]:
            actor = user_find(username=opts["user"])
            if actor is None:
                raise CommandError(f"no such user: {opts['user']}")
        filters = {k: opts[k] for k in ("status", "stage", "category", "modality", "source_dataset") if opts[k]}
        bar = tqdm(total=1, desc="shortcut audit", disable=opts["json"] or opts["verbosity"] == 0, file=self.stderr)

        def progress(done, total, label):
            bar.total = total
            bar.n = done
            bar.set_postfix_str(label)
            bar.refresh()

        try:
            audit = shortcut_audit_run(filters=filters, split=opts["split"], actor=actor, progress=progress,
                                       params={"seed": opts["seed"], "n_boot": opts["n_boot"]})
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        finally:
            bar.close()
        if audit.status != "done":
            raise CommandError(f"shortcut audit #{audit.seq} {audit.status}: {audit.error}")
        if opts["json"]:
            self.stdout.write(json.dumps({"id": audit.pk, "seq": audit.seq, "digest": audit.digest, **audit.results},
                                         indent=1))
            return
        r = audit.results
        o = r["overall"]
        best = o.get("best") or {}
        counts = r["counts"]
        self.stdout.write(f"shortcut audit #{audit.seq}: {counts['items']} items, {counts['scored']} scored on "
                          f"{audit.split}, {counts['image_necessary']} image-necessary")
        if best:
            self.stdout.write(f"overall best blind: {best['code']} {best['accuracy']:.3f} vs chance {o['chance']:.3f} "
                              f"({best['minus_chance'] * 100:+.1f} points) [{o['flag']}]")
        for cell in r["categories"]:
            b = cell.get("best") or {}
            acc = f"{b['code']} {b['accuracy']:.3f} vs {cell['chance']:.3f}" if b else "not scored"
            self.stdout.write(f"  {cell['flag']:<5} {cell['stage']} {cell['key']:<28} n={cell['n_scored']:<6} {acc}")
