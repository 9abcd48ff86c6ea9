"""manage.py run_evaluation — evaluate models on the selected items and variants."""
from __future__ import annotations

import sys
import time

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.selectors import user_find
from common.errors import ServiceError
from workers.models import EvaluationRun
from workers.selectors import endpoint_by_names, run_completed_named, run_find, run_progress
from workers.services.reference import run_set_reference
from workers.services.runs import run_create, runs_reconcile

SCORED_WAIT_S = 600   # --reference: how long to wait for the scoring that follows the last batch


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


class Command(BaseCommand):
    help = ("Create an evaluation run and follow it to the end with a progress bar. Batches go to the models' "
            "Celery queues (or run in-process when Celery is eager, as in the demo).")

    def add_arguments(self, parser):
        parser.add_argument("--models", required=True, help="comma-separated model endpoint names")
        parser.add_argument("--name", default="")
        parser.add_argument("--stage", default="", help="comma-separated stage codes (S1..S4)")
        parser.add_argument("--category", default="")
        parser.add_argument("--modality", default="")
        parser.add_argument("--status", default="approved")
        parser.add_argument("--kinds", default="", help="variant kinds (clean is always included); default: all")
        parser.add_argument("--split", default="test",
                            help="patient-level split to evaluate: test (default: the benchmark's held-out patients), "
                                 "val, train or all (results then shown per split)")
        parser.add_argument("--allow-train-overlap", action="store_true",
                            help="allow a fitted baseline (the prior, fitted on train) to be scored on its training "
                                 "items (split train or all); recorded in the run's provenance")
        parser.add_argument("--batch-size", type=int, default=64)
        parser.add_argument("--no-wait", action="store_true", help="return once dispatched")
        parser.add_argument("--skip-if-done", action="store_true",
                            help="do nothing when a completed run of this name exists (makes the demo re-runnable)")
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument("--reference", action="store_true",
                            help="once scored, mark the run as a reference run (only reference runs open adjudication "
                                 "cases; audited as --user, a curator or admin). Also applies to a run --skip-if-done "
                                 "finds complete")
        parser.add_argument("--user", default="", help="with --reference: who marks it (recorded in the audit trail)")

    def handle(self, *args, models, name, stage, category, modality, status, kinds, batch_size, no_wait,
               no_progress, skip_if_done, split, allow_train_overlap, reference, user, **opts):
        names = _csv(models)
        name = name or ", ".join(names)
        marker = user_find(username=user) if reference else None
        if reference and marker is None:
            raise CommandError(f"--reference needs --user NAME, a curator or admin (no user named {user!r})")
        if reference and no_wait:
            raise CommandError("--reference waits for the run to be scored: leave out --no-wait")
        done = run_completed_named(name=name) if skip_if_done else None
        if done:
            self.stdout.write(f"Run {done.pk} ({name}) is already complete; skipping.")
            if marker is not None:
                self._mark_reference(done, marker)
            return
        endpoints, missing = endpoint_by_names(names=names)
        if missing:
            raise CommandError(f"unknown models: {', '.join(missing)} (see manage.py register_model)")
        filters = {"stage": _csv(stage), "category": _csv(category), "modality": _csv(modality),
                   "status": _csv(status)}
        try:
            run = run_create(name=name, endpoints=endpoints, item_filters=filters, variant_kinds=_csv(kinds),
                             batch_size=batch_size, split=split, allow_train_overlap=allow_train_overlap, actor=None)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"Run {run.pk} ({run.split} split): {run.n_variants} variants × {len(endpoints)} models "
                          f"= {run.total} predictions")
        if no_wait:
            return
        bar = tqdm(total=run.total, unit="pred", disable=no_progress, file=sys.stderr, dynamic_ncols=True)
        swept = time.monotonic()
        while True:
            if time.monotonic() - swept >= settings.MEDR2_EVAL_RECONCILE_S:   # as beat does: a lost batch is re-sent
                runs_reconcile()
                swept = time.monotonic()
            run.refresh_from_db()
            progress = run_progress(run=run)
            bar.n = progress.done
            bar.refresh()
            if not run.is_active:
                break
            time.sleep(1)
        bar.close()
        if run.status != EvaluationRun.Status.COMPLETED:
            raise CommandError(f"run {run.pk} ended {run.status}: {run.error}")
        self.stdout.write(f"Run {run.pk} {run.status}: {progress.done} predictions, {progress.errors} errors.")
        metrics = run.metrics or {}
        sections = [(run.split, metrics.get("models", {}))]
        sections += [(s, metrics["models_by_split"][s]) for s in ("test", "val", "train")
                     if s in (metrics.get("models_by_split") or {})]
        for split_name, models_metrics in sections:
            self.stdout.write(f" {split_name} split:")
            for pk, label in metrics.get("endpoints", {}).items():
                m = models_metrics.get(pk, {})
                step, chain = m.get("step_accuracy", {}), m.get("chain_accuracy", {})
                answered, unparseable = m.get("answered_accuracy", {}), m.get("unparseable_rate", {})
                self.stdout.write(f"  {label:<24} step accuracy {_pct(step)}  over answered {_pct(answered)}  "
                                  f"chain accuracy {_pct(chain)}  unparseable {_pct(unparseable)}")
        if marker is not None:
            self._mark_reference(run, marker)

    def _mark_reference(self, run: EvaluationRun, actor) -> None:
        """Mark the run as a reference run once its scoring (which follows the last batch) is written."""
        deadline = time.monotonic() + SCORED_WAIT_S
        while run.scored_at is None and time.monotonic() < deadline:
            time.sleep(0.5)
            run = run_find(pk=run.pk) or run
        try:
            run = run_set_reference(run=run, reference=True, actor=actor,
                                    reason="marked by manage.py run_evaluation --reference")
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        except (PermissionDenied, ServiceError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Run {run.pk} is a reference run: its models' disagreements open adjudication cases.")


def _pct(cell: dict) -> str:
    value = cell.get("value")
    if value is None:
        return "   n/a"
    interval = (f" [{100 * cell['lo']:.0f}–{100 * cell['hi']:.0f}]" if cell.get("lo") is not None
                and cell.get("hi") is not None else "")
    return f"{100 * value:5.1f}%{interval} (n={cell.get('n')})"
