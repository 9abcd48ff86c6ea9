"""Reads for models, runs, progress and predictions."""
from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Count, F, Q, QuerySet, Sum
from django.db.models.fields.json import KT
from django.shortcuts import get_object_or_404
from django.utils import timezone

from annotation.models import Image, Stage, TaskCategory
from common.filters import filter_by
from common.formatting import plural
from common.params import as_int

from .models import EvaluationRun, ModelEndpoint, Prediction, RunBatch
from .services.runs import run_items, run_variants, train_overlap


def endpoint_list(*, active_only: bool = False) -> QuerySet[ModelEndpoint]:
    qs = ModelEndpoint.objects.all()
    return qs.filter(is_active=True) if active_only else qs


def endpoint_by_names(*, names) -> tuple[list[ModelEndpoint], list[str]]:
    """The endpoints named (any order) and the names that match none, sorted."""
    endpoints = list(ModelEndpoint.objects.filter(name__in=names))
    return endpoints, sorted(set(names) - {e.name for e in endpoints})


def endpoint_by_ids(*, ids, active_only: bool = False) -> tuple[list[ModelEndpoint], list[int]]:
    """The endpoints with these ids (active ones only when asked) and the ids that match none, sorted."""
    endpoints = list(endpoint_list(active_only=active_only).filter(pk__in=list(ids)).order_by("pk"))
    return endpoints, sorted(set(ids) - {e.pk for e in endpoints})


def endpoint_find(*, name: str) -> ModelEndpoint | None:
    return ModelEndpoint.objects.filter(name=name).first()


def run_list(*, status: str = "") -> QuerySet[EvaluationRun]:
    """Runs without their stored metrics and provenance (megabytes for a large run; no list shows them)."""
    qs = EvaluationRun.objects.select_related("created_by").prefetch_related("endpoints").defer("metrics", "provenance")
    return qs.filter(status=status) if status else qs


def run_get(*, pk: int, with_metrics: bool = True) -> EvaluationRun:
    """The run (404 when there is none). `with_metrics=False` leaves out its stored metrics (megabytes of
    JSON at the paper's scale) for pages that do not read them; reading `run.metrics` then loads them."""
    qs = EvaluationRun.objects.select_related("created_by").prefetch_related("endpoints")
    return get_object_or_404(qs if with_metrics else qs.defer("metrics"), pk=pk)


def run_find(*, pk: int, with_metrics: bool = True) -> EvaluationRun | None:
    """The run, or None when it is gone (tasks: a deleted run is nothing to do). `with_metrics=False`: as
    in `run_get`."""
    qs = EvaluationRun.objects.filter(pk=pk)
    return (qs if with_metrics else qs.defer("metrics")).first()


def run_latest_scored() -> EvaluationRun | None:
    """The newest scored run (`manage.py run_reference latest`)."""
    return EvaluationRun.objects.filter(scored_at__isnull=False).order_by("-pk").first()


def run_completed_named(*, name: str) -> EvaluationRun | None:
    return EvaluationRun.objects.filter(name=name, status=EvaluationRun.Status.COMPLETED).first()


def run_failed_batches(*, run: EvaluationRun, limit: int = 20) -> QuerySet[RunBatch]:
    return run.batches.filter(status=RunBatch.Status.FAILED).order_by("index")[:limit]


def stage_list() -> QuerySet[Stage]:
    return Stage.objects.all()


def category_list(*, active_only: bool = True) -> QuerySet[TaskCategory]:
    qs = TaskCategory.objects.all()
    return qs.filter(is_active=True) if active_only else qs


def modality_list() -> list[str]:
    """The modalities of the imported images (the run form's choices), sorted."""
    return [m for m in Image.objects.order_by("modality").values_list("modality", flat=True).distinct() if m]


@dataclass(frozen=True)
class RunPreview:
    """What a run with these choices would evaluate, before it is made (the run form's live count)."""

    items: int
    variants: int
    models: int
    split: str
    problems: list[str]      # why run_create would refuse it, in its words

    @property
    def predictions(self) -> int:
        return self.variants * self.models

    @property
    def summary(self) -> str:
        return (f"{plural(self.items, 'item')} · {plural(self.variants, 'variant')} · {plural(self.models, 'model')}"
                f" → {plural(self.predictions, 'prediction')}")

    def as_dict(self) -> dict:
        return {"items": self.items, "variants": self.variants, "models": self.models,
                "predictions": self.predictions, "split": self.split, "summary": self.summary,
                "problems": self.problems}


def run_preview(*, item_filters: dict, variant_kinds, split: str, endpoints,
                allow_train_overlap: bool = False) -> RunPreview:
    """Counts of the items and variants `run_create` would take with these choices: the same querysets
    (workers.services.runs.run_items / run_variants), counted in the database. Two counts."""
    item_filters = {k: v for k, v in item_filters.items() if v not in (None, "", [])}
    endpoints = list(endpoints)
    n_items = run_items(item_filters=item_filters, split=split).count()
    n_variants = run_variants(item_filters=item_filters, variant_kinds=variant_kinds, split=split).count()
    problems = []
    if not endpoints:
        problems.append("choose at least one model")
    if not n_variants:
        problems.append(f"no variants match these filters in the {split} split (are the items approved and their "
                        f"variants generated?)")
    overlap = train_overlap(endpoints, split)
    if overlap and not allow_train_overlap:
        names = ", ".join(f"{n} (fitted on {s})" for n, s in sorted(overlap.items()))
        problems.append(f"{names} would be scored on the items it was fitted on: evaluate the test split, or allow "
                        f"the train overlap")
    return RunPreview(items=n_items, variants=n_variants, models=len(endpoints), split=split, problems=problems)


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    errors: int
    batches_done: int
    batches_failed: int
    batches_total: int
    rate: float | None        # predictions per second since the run (re)started
    eta_seconds: float | None

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.total if self.total else 100.0

    def as_dict(self) -> dict:
        return {"done": self.done, "total": self.total, "errors": self.errors, "percent": round(self.percent, 1),
                "batches_done": self.batches_done, "batches_failed": self.batches_failed,
                "batches_total": self.batches_total,
                "rate_per_s": round(self.rate, 2) if self.rate is not None else None,
                "eta_seconds": round(self.eta_seconds) if self.eta_seconds is not None else None}


PROGRESS_CACHE_SECONDS = 30 * 24 * 3600


def _progress_key(run: EvaluationRun) -> str | None:
    """A completed or failed run's batches no longer change (a resume first makes it run again, with a new
    finish time after): its progress is cached under its status and finish time. None for any other run."""
    if run.status not in (EvaluationRun.Status.COMPLETED, EvaluationRun.Status.FAILED) or run.finished_at is None:
        return None
    return f"workers.run-progress:{run.pk}:{run.status}:{run.finished_at.isoformat()}"


def run_progress_map(runs) -> dict[int, Progress]:
    """Progress of several runs from their batch rows: one grouped aggregate query, no scan of the
    predictions (list pages and the list API show a page of runs without one query per run). A finished
    run's progress comes from the cache (`_progress_key`): its aggregate reads every batch row, ~0.2 s at
    15M predictions in batches of 64."""
    runs = list(runs)
    if not runs:
        return {}
    keys = {run.pk: key for run in runs if (key := _progress_key(run))}
    cached = cache.get_many(list(keys.values())) if keys else {}
    found = {pk: cached[key] for pk, key in keys.items() if key in cached}
    todo = [run for run in runs if run.pk not in found]
    if todo:
        # batches finished before the latest (re)start are left out of the rate
        recent = (Q(finished_at__isnull=True) | Q(finished_at__gte=F("run__started_at"))
                  | Q(run__started_at__isnull=True))
        rows = (RunBatch.objects.filter(run__in=[r.pk for r in todo]).values("run_id").order_by()
                .annotate(done=Sum("n_done"), errors=Sum("n_errors"), total=Count("id"),
                          finished=Count("id", filter=Q(status=RunBatch.Status.DONE)),
                          failed=Count("id", filter=Q(status=RunBatch.Status.FAILED)),
                          recent=Sum("n_done", filter=recent)))
        aggs = {row["run_id"]: row for row in rows}
        now = timezone.now()
        fresh = {run.pk: _progress(run, aggs.get(run.pk, {}), now) for run in todo}
        cache.set_many({keys[pk]: p for pk, p in fresh.items() if pk in keys}, PROGRESS_CACHE_SECONDS)
        found.update(fresh)
    return {run.pk: found[run.pk] for run in runs}


def run_progress(*, run: EvaluationRun) -> Progress:
    return run_progress_map([run])[run.pk]


def _progress(run: EvaluationRun, agg: dict, now) -> Progress:
    done = agg.get("done") or 0
    rate = eta = None
    if run.started_at and run.status == EvaluationRun.Status.RUNNING:
        elapsed = (now - run.started_at).total_seconds()
        recent = agg.get("recent") or 0
        if elapsed > 0 and recent:
            rate = recent / elapsed
            eta = (run.total - done) / rate
    elif run.started_at and run.finished_at and done:
        elapsed = (run.finished_at - run.started_at).total_seconds()
        rate = done / elapsed if elapsed > 0 else None
    return Progress(done=done, total=run.total, errors=agg.get("errors") or 0, batches_done=agg.get("finished", 0),
                    batches_failed=agg.get("failed", 0), batches_total=agg.get("total", 0), rate=rate,
                    eta_seconds=eta)


PREDICTION_FILTERS = ("endpoint", "outcome", "kind", "stage", "correct")


def run_prediction_count(*, run: EvaluationRun) -> int | None:
    """How many predictions the run has, when it knows without counting them (one small query, however
    many predictions): a completed run scored after it completed stored the number it scored
    (`metrics["n_predictions"]`, `metrics["complete"]`), and no prediction is added after that. None
    otherwise (a run still running, cancelled, failed, or not scored since it completed)."""
    if run.status != EvaluationRun.Status.COMPLETED or run.scored_at is None:
        return None
    key = f"workers.run-prediction-count:{run.pk}:{run.scored_at.isoformat()}"   # a new scoring, a new key
    known = cache.get(key)
    if known is None:   # the two keys are read in the database: the metrics never travel
        row = (EvaluationRun.objects.filter(pk=run.pk).order_by()
               .values_list(KT("metrics__n_predictions"), KT("metrics__complete")).first())
        known = _stored_total(*row) if row else -1
        cache.set(key, known, 30 * 24 * 3600)
    return known if known >= 0 else None


def _stored_total(n_predictions, complete) -> int:
    """The stored count from the two JSON keys as the database returns them (text on PostgreSQL; on SQLite,
    the demo's, a number stays a number), or -1 when the metrics do not describe a complete run."""
    if str(complete).lower() not in ("true", "1") or not str(n_predictions or "").isdigit():
        return -1
    return int(n_predictions)


def prediction_list(*, run: EvaluationRun, filters: dict | None = None) -> QuerySet[Prediction]:
    """The run's predictions; `filters["endpoint"]` names the model by id (digits) or by name."""
    filters = filters or {}
    qs = Prediction.objects.filter(run=run).select_related(
        "endpoint", "variant", "item__stage", "item__category")
    qs = filter_by(qs, filters, {"outcome": "outcome", "kind": "variant__kind", "stage": "item__stage__code"})
    endpoint = filters.get("endpoint")
    if isinstance(endpoint, str):
        endpoint = endpoint.strip()
        endpoint = (as_int(endpoint, min_value=1) or 0) if endpoint.isascii() and endpoint.isdigit() else endpoint
    if isinstance(endpoint, int) and not isinstance(endpoint, bool):
        qs = qs.filter(endpoint_id=endpoint) if endpoint > 0 else qs.none()   # 0: an id past bigint
    elif endpoint:
        qs = qs.filter(endpoint__name=endpoint)
    if filters.get("correct") in ("true", "false", True, False):
        qs = qs.filter(correct=filters["correct"] in ("true", True))
    return qs.order_by("id")
