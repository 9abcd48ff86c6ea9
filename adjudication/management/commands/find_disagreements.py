"""manage.py find_disagreements — run the adjudication detection rules on evaluation runs (and open
Label Studio annotator disagreements) and print the cases they would open, highest priority first
(any run: a preview; baselines never count as models). With --save the cases around the runs are
re-synced in the adjudication queue from the reference runs only (what scoring a reference run does by
itself); a run that is not a reference run opens nothing (manage.py run_reference marks one)."""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from adjudication import selectors
from adjudication.facts import detect_cases
from adjudication.rules import RULES
from adjudication.services import cases_sync


class Command(BaseCommand):
    help = "Print (or --save) the disagreement cases the detection rules find in --run N[,M]."

    def add_arguments(self, parser):
        parser.add_argument("--run", required=True, help="evaluation run id(s), comma-separated, or 'latest'")
        parser.add_argument("--save", action="store_true", help="store the cases in the adjudication queue")
        parser.add_argument("--rules", default="", help=f"subset of: {', '.join(RULES)}")
        parser.add_argument("--limit", type=int, default=25)
        parser.add_argument("--json", action="store_true", help="every case as JSON lines")
        parser.add_argument("--no-annotators", action="store_true", help="leave Label Studio disagreements out")

    def handle(self, *args, run, rules, limit, json: bool, no_annotators, save, **opts):
        if run == "latest":
            latest = selectors.latest_completed_run_id()
            if latest is None:
                raise CommandError("no completed evaluation run")
            run = str(latest)
        if save:
            summary = cases_sync(run_ids=[int(r) for r in run.split(",") if r])
            self.stdout.write(f"adjudication queue: {summary.created} case(s) opened, {summary.updated} updated, "
                              f"{summary.unchanged} unchanged, {summary.resolved_kept} already decided, "
                              f"{summary.reopened} reopened, {summary.withdrawn} withdrawn")
            if summary.ignored_runs:
                self.stdout.write(f"not reference runs (they open no case): {', '.join(map(str, summary.ignored_runs))}"
                                  " — mark one with manage.py run_reference RUN --user NAME")
            return
        try:
            run_ids = [int(r) for r in run.split(",") if r]
            cases = detect_cases(run_ids=run_ids, rules=[r for r in rules.split(",") if r] or None,
                                 with_annotators=not no_annotators)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if json:
            for case in cases:
                self.stdout.write(_json({"key": case.key, "item": case.item_id, "image": case.image_id,
                                         "priority": case.priority,
                                         "hits": [{"rule": h.rule, "priority": h.priority, "models": list(h.models),
                                                   "evidence": h.evidence} for h in case.hits]}))
            return
        by_rule: dict[str, int] = {}
        for case in cases:
            for hit in case.hits:
                by_rule[hit.rule] = by_rule.get(hit.rule, 0) + 1
        self.stdout.write(f"{len(cases)} case(s); hits by rule: "
                          + (", ".join(f"{k} {v}" for k, v in sorted(by_rule.items())) or "none"))
        for case in cases[:limit]:
            rules_text = "; ".join(f"{h.rule} ({', '.join(h.models) or 'gold'})" for h in case.hits)
            self.stdout.write(f"  {case.priority:.2f}  {case.key:44s} image {case.image_id:<6} {rules_text}")


def _json(obj) -> str:
    return json.dumps(obj, sort_keys=True, default=str)
