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
from django.db.models import Case, F, FloatField, Func, IntegerField, TextField, Value, When
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Coalesce, Concat, NullIf
from django.utils import timezone

from annotation.splits import SPLITS, split_for_group
from audit.services import audit_record

from ..models import EvaluationRun, Prediction
from ..parsing import method_family
from ..scoring.item import cue_adopted_by
from ..scoring.metrics import PredictionTable, cell_table, compare_models, model_metrics

TABLE_COLUMNS = {
    "endpoint": "endpoint_id", "variant": "variant_id", "item": "item_id", "chain": "item__chain_id",
    "stage": "item__stage__order", "step": "item__step", "category": "item__category__code",
    "modality": "item__chain__image__modality", "kind": "variant__kind", "answer_type": "item__category__answer_type",
    "outcome": "outcome", "correct": "correct", "iou": "iou", "cue_adopted": "cue_adopted",
    "split": "item__chain__image__split_group",   # mapped to train / val / test below
    "cluster": "t_cluster",                        # the patient (split group), else the image: the bootstrap unit
    "n_options": "t_n_options", "answer": "t_answer", "cue": "t_cue", "level": "t_level", "subkind": "t_subkind",
    "family": "parse_method",                      # mapped to its family (workers.parsing.method_family) below
}
BREAKDOWNS = {
    "by_split": ("endpoint", "split"),
    "by_stage": ("endpoint", "stage"),
    "by_category": ("endpoint", "category"),
    "by_modality": ("endpoint", "modality"),
    "by_kind": ("endpoint", "kind"),
    "cells": ("endpoint", "split", "stage", "category", "modality", "kind"),
}
CHOICE_TYPES = ("single_choice", "yes_no", "multi_choice")
# Where "the answer adopts the cue" is "the answer equals the cue's letter(s)" (hints: the hinted letter(s);
# a visual cue's `cue_letter` on single-answer items) the table compares keys; the other visual cues (a box
# on the wrong region, a mislabeled option among several chosen) are decided by the rule itself.
KEY_CUE_TYPES = ("single_choice", "yes_no")


def splits_of(groups: np.ndarray) -> np.ndarray:
    """train / val / test for an array of split groups (each distinct group hashed once)."""
    if not len(groups):
        return np.zeros(0, dtype="U5")
    uniq, inv = np.unique(groups, return_inverse=True)
    return np.array([split_for_group(str(g)) for g in uniq], dtype="U5")[inv.ravel()]


def _families(methods: np.ndarray, outcomes: np.ndarray) -> np.ndarray:
    """The parse-method family of each row (each distinct method mapped once)."""
    if not len(methods):
        return np.zeros(0, dtype="U12")
    uniq, inv = np.unique(methods, return_inverse=True)
    fam = np.array([method_family(str(m)) for m in uniq], dtype="U12")[inv.ravel()]
    return np.where(outcomes == "error", "error", fam)


def _table_queryset(run: EvaluationRun):
    """The run's predictions with the columns the metrics need, computed in SQL: the cluster (patient,
    else image), the number of options shown, the parsed choice answer and the answer that adopts the
    variant's cue as comparable JSON texts, the dose level and the variant's sub-kind."""
    params = "variant__params"
    return (Prediction.objects.filter(run=run).order_by()
            .annotate(t_cluster=Coalesce(Cast(NullIf(F("item__chain__image__split_group"), Value("")), TextField()),
                                         Concat(Value("image:"), Cast(F("item__chain__image_id"), TextField()),
                                                output_field=TextField()), output_field=TextField()),
                      t_n_options=Coalesce(Func(F("variant__options"), function="jsonb_array_length",
                                                output_field=IntegerField()), Value(0)),
                      t_answer=Case(When(outcome="answered", item__category__answer_type__in=CHOICE_TYPES,
                                         then=Cast(F("parsed"), TextField())), default=Value(""),
                                      output_field=TextField()),
                      t_cue=Case(When(variant__kind__in=("misleading_hint", "correct_hint"),
                                      then=Coalesce(Cast(KeyTransform("hinted_letter", params), TextField()),
                                                    Value(""), output_field=TextField())),
                                 When(variant__kind="wrong_visual_cue", item__category__answer_type__in=KEY_CUE_TYPES,
                                      then=Coalesce(Cast(KeyTransform("cue_letter", params), TextField()),
                                                    Value(""), output_field=TextField())),
                                 default=Value(""), output_field=TextField()),
                      t_level=Case(When(variant__kind="box_dose_response",
                                        then=Cast(KeyTextTransform("target_iou", params), FloatField())),
                                   default=Value(None, output_field=FloatField())),
                      t_subkind=Coalesce(KeyTextTransform("cue", params), KeyTextTransform("ablation", params),
                                         KeyTextTransform("target_iou", params), Value(""), output_field=TextField())))


def prediction_table(*, run: EvaluationRun) -> PredictionTable:
    rows = _table_queryset(run).values_list(*TABLE_COLUMNS.values())
    table = PredictionTable.from_rows(rows.iterator(chunk_size=20000), list(TABLE_COLUMNS))
    table.split = splits_of(table.split)
    table.family = _families(table.family, table.outcome)
    table.cue_clean = _rule_cue_baseline(run, table)
    return table


def _rule_cue_baseline(run: EvaluationRun, table: PredictionTable) -> np.ndarray:
    """For visual cues not decided by comparing keys (a wrong-region box on box items and answer + box
    items, a mislabeled option on multi-choice items): whether the model's CLEAN prediction of the same
    item adopts this variant's cue, by the same rule (`cue_adopted_by`), so adoption can be
    chance-corrected. nan elsewhere."""
    out = np.full(len(table), np.nan)
    wanted = (table.kind == "wrong_visual_cue") & (table.cue == "")
    if not wanted.any():
        return out
    cue_rows = list(Prediction.objects.filter(run=run, variant__kind="wrong_visual_cue").order_by()
                    .exclude(item__category__answer_type__in=KEY_CUE_TYPES, variant__params__has_key="cue_letter")
                    .values_list("endpoint_id", "variant_id", "item_id", "item__category__answer_type",
                                 "variant__params", "variant__options", "variant__expected_answer"))
    if not cue_rows:
        return out
    items = {r[2] for r in cue_rows}
    clean: dict[tuple[int, int], tuple] = {}   # the first clean prediction (by variant id), as metrics pair them
    for e, i, o, v, b in (Prediction.objects.filter(run=run, variant__kind="clean", item_id__in=items)
                          .order_by("variant_id").values_list("endpoint_id", "item_id", "outcome", "parsed", "box")
                          .iterator(chunk_size=5000)):
        clean.setdefault((e, i), (o, v, b))
    key = table.endpoint.astype(np.int64) * (1 << 32) + table.variant.astype(np.int64)
    order = np.argsort(key, kind="stable")
    for endpoint, variant, item, answer_type, params, options, expected in cue_rows:
        found = clean.get((endpoint, item))
        if found is None:
            continue
        outcome, value, box = found
        adopted = cue_adopted_by("wrong_visual_cue", answer_type, params or {}, options or [], outcome, value,
                                 box=box, expected=expected or {})
        if adopted is None:
            continue
        pos = np.searchsorted(key, endpoint * (1 << 32) + variant, sorter=order)
        if pos < len(order) and key[order[pos]] == endpoint * (1 << 32) + variant:
            out[order[pos]] = float(adopted)
    return out


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


def run_score(*, run: EvaluationRun, actor, n_resamples: int = 1000) -> dict:
    """Compute and store every metric of the run (also for a cancelled or partly failed run: the
    numbers then cover what was predicted, and `complete` says so)."""
    table = prediction_table(run=run)
    endpoints = {e.pk: e.label for e in run.endpoints.all()}
    metrics = {
        "scored_at": timezone.now().isoformat(), "complete": run.status == EvaluationRun.Status.COMPLETED,
        "split": run.split, "n_predictions": len(table), "endpoints": {str(k): v for k, v in endpoints.items()},
        "models": model_metrics(table, seed=run.pk) if len(table) else {},
        "models_by_split": ({s: model_metrics(table, rows=table.split == s, seed=run.pk) for s in SPLITS
                             if np.any(table.split == s)} if run.split == "all" and len(table) else {}),
        **{name: cell_table(table, by, seed=run.pk) if len(table) else [] for name, by in BREAKDOWNS.items()},
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
