"""Reads for models, runs, progress and predictions."""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet, Sum
from django.shortcuts import get_object_or_404
from django.utils import timezone

from .models import EvaluationRun, ModelEndpoint, Prediction, RunBatch


def endpoint_list(*, active_only: bool = False) -> QuerySet[ModelEndpoint]:
    qs = ModelEndpoint.objects.all()
    return qs.filter(is_active=True) if active_only else qs


def endpoint_get(*, pk: int) -> ModelEndpoint:
    return get_object_or_404(ModelEndpoint, pk=pk)


def run_list(*, status: str = "") -> QuerySet[EvaluationRun]:
    qs = EvaluationRun.objects.select_related("created_by").prefetch_related("endpoints")
    return qs.filter(status=status) if status else qs


def run_get(*, pk: int) -> EvaluationRun:
    return get_object_or_404(EvaluationRun.objects.select_related("created_by").prefetch_related("endpoints"), pk=pk)


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


def run_progress(*, run: EvaluationRun) -> Progress:
    """Counts from the batch rows (one aggregate query, no scan of the predictions)."""
    agg = RunBatch.objects.filter(run=run).aggregate(
        done=Sum("n_done"), errors=Sum("n_errors"), total=Count("id"),
        finished=Count("id", filter=Q(status=RunBatch.Status.DONE)),
        failed=Count("id", filter=Q(status=RunBatch.Status.FAILED)),
        recent=Sum("n_done", filter=Q(finished_at__isnull=True) | Q(finished_at__gte=run.started_at))
        if run.started_at else Sum("n_done"))
    done = agg["done"] or 0
    rate = eta = None
    if run.started_at and run.status == EvaluationRun.Status.RUNNING:
        elapsed = (timezone.now() - run.started_at).total_seconds()
        recent = agg["recent"] or 0
        if elapsed > 0 and recent:
            rate = recent / elapsed
            eta = (run.total - done) / rate
    elif run.started_at and run.finished_at and done:
        elapsed = (run.finished_at - run.started_at).total_seconds()
        rate = done / elapsed if elapsed > 0 else None
    return Progress(done=done, total=run.total, errors=agg["errors"] or 0, batches_done=agg["finished"],
                    batches_failed=agg["failed"], batches_total=agg["total"], rate=rate, eta_seconds=eta)


PREDICTION_FILTERS = ("endpoint", "outcome", "kind", "stage", "correct")


def prediction_list(*, run: EvaluationRun, filters: dict | None = None) -> QuerySet[Prediction]:
    filters = filters or {}
    qs = Prediction.objects.filter(run=run).select_related(
        "endpoint", "variant", "item__stage", "item__category")
    if filters.get("endpoint"):
        qs = qs.filter(endpoint_id=filters["endpoint"])
    if filters.get("outcome"):
        qs = qs.filter(outcome=filters["outcome"])
    if filters.get("kind"):
        qs = qs.filter(variant__kind=filters["kind"])
    if filters.get("stage"):
        qs = qs.filter(item__stage__code=filters["stage"])
    if filters.get("correct") in ("true", "false", True, False):
        qs = qs.filter(correct=filters["correct"] in ("true", True))
    return qs.order_by("id")
