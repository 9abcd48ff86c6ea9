"""Scoring a run: one query reads the run's predictions as columns, numpy computes every metric
(workers/scoring/metrics.py), the result is stored on the run and audited by digest.

Every prediction carries the patient-level split of its item's image, so the stored metrics name the
run's split and break every cell down by split; a run over `all` splits also gets the per-model
metrics of each split (`by_split`), so train accuracy is never read as test accuracy."""
from __future__ import annotations

import hashlib
import itertools
import json
import math

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.splits import SPLITS, split_for_group
from audit.services import audit_record

from ..models import EvaluationRun, Prediction
from ..scoring.metrics import PredictionTable, cell_table, compare_models, model_metrics

TABLE_COLUMNS = {
    "endpoint": "endpoint_id", "variant": "variant_id", "item": "item_id", "chain": "item__chain_id",
    "stage": "item__stage__order", "step": "item__step", "category": "item__category__code",
    "modality": "item__chain__image__modality", "kind": "variant__kind", "answer_type": "item__category__answer_type",
    "outcome": "outcome", "correct": "correct", "iou": "iou", "cue_adopted": "cue_adopted",
    "split": "item__chain__image__split_group",   # mapped to train / val / test below
}
BREAKDOWNS = {
    "by_split": ("endpoint", "split"),
    "by_stage": ("endpoint", "stage"),
    "by_category": ("endpoint", "category"),
    "by_modality": ("endpoint", "modality"),
    "by_kind": ("endpoint", "kind"),
    "cells": ("endpoint", "split", "stage", "category", "modality", "kind"),
}


def splits_of(groups: np.ndarray) -> np.ndarray:
    """train / val / test for an array of split groups (each distinct group hashed once)."""
    if not len(groups):
        return np.zeros(0, dtype="U5")
    uniq, inv = np.unique(groups, return_inverse=True)
    return np.array([split_for_group(str(g)) for g in uniq], dtype="U5")[inv.ravel()]


def prediction_table(*, run: EvaluationRun) -> PredictionTable:
    rows = Prediction.objects.filter(run=run).order_by().values_list(*TABLE_COLUMNS.values())
    table = PredictionTable.from_rows(rows.iterator(chunk_size=20000), list(TABLE_COLUMNS))
    table.split = splits_of(table.split)
    return table


def _clean(value):
    """JSON-safe: numpy scalars to Python, NaN to None, keys to str."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def run_score(*, run: EvaluationRun, actor, n_resamples: int = 2000) -> dict:
    """Compute and store every metric of the run (also for a cancelled or partly failed run: the
    numbers then cover what was predicted, and `complete` says so)."""
    table = prediction_table(run=run)
    endpoints = {e.pk: e.label for e in run.endpoints.all()}
    metrics = {
        "scored_at": timezone.now().isoformat(), "complete": run.status == EvaluationRun.Status.COMPLETED,
        "split": run.split, "n_predictions": len(table), "endpoints": {str(k): v for k, v in endpoints.items()},
        "models": model_metrics(table) if len(table) else {},
        "models_by_split": ({s: model_metrics(table.take(table.split == s)) for s in SPLITS
                             if np.any(table.split == s)} if run.split == "all" and len(table) else {}),
        **{name: cell_table(table, by) if len(table) else [] for name, by in BREAKDOWNS.items()},
        "comparisons": [
            {"a": a, "b": b, **compare_models(table, a, b, n_resamples=n_resamples, seed=run.pk, answered_only=False)}
            for a, b in itertools.combinations(sorted(endpoints), 2)
        ] if len(table) else [],
    }
    metrics = _clean(metrics)
    digest = hashlib.sha256(json.dumps(metrics, sort_keys=True, default=str).encode()).hexdigest()
    with transaction.atomic():
        EvaluationRun.objects.filter(pk=run.pk).update(metrics=metrics, scored_at=timezone.now())
        audit_record(actor=actor, action="workers.run.score", target=run,
                     after={"n_predictions": len(table), "metrics_sha256": digest})
        if len(table):
            # a scored run feeds the adjudication queue (annotation/services/adjudication.py)
            from annotation.tasks import detect_cases_later

            detect_cases_later(run.pk)
    run.metrics = metrics
    return metrics
