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
from itertools import islice
from operator import itemgetter

import numpy as np
from django.db import transaction
from django.db.models import Case, F, FloatField, Func, IntegerField, TextField, Value, When
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Coalesce, Concat, NullIf
from django.utils import timezone

from annotation.models import Variant
from annotation.splits import SPLITS, split_for_group
from audit.services import audit_record

from ..models import EvaluationRun, Prediction
from ..parsing import method_family
from ..scoring.item import IOU_HIT, box_iou_array, cue_adopted_by
from ..scoring.metrics import PredictionTable, cell_table, compare_models, model_metrics
from ..signals import run_scored

# A run's table is read with two queries joined in numpy: the variants' attributes once per variant
# (a run asks every model the same variants, so this is 1/models of the rows; the JSON extraction runs
# there), and the predictions' own narrow columns. Column name -> ORM path or annotation (below).
VARIANT_COLUMNS = {
    "variant": "id", "item": "item_id", "chain": "item__chain_id", "stage": "item__stage__order",
    "step": "item__step", "category": "item__category__code", "modality": "item__chain__image__modality",
    "kind": "kind", "answer_type": "item__category__answer_type",
    "split": "item__chain__image__split_group",    # mapped to train / val / test below
    "cluster": "t_cluster",                        # the patient (split group), else the image: the bootstrap unit
    "n_options": "t_n_options", "cue": "t_cue", "level": "t_level", "subkind": "t_subkind",
}
PREDICTION_COLUMNS = {
    "endpoint": "endpoint_id", "variant": "variant_id", "outcome": "outcome", "correct": "correct", "iou": "iou",
    "cue_adopted": "cue_adopted", "answer": "t_answer",
    "family": "parse_method",                      # mapped to its family (workers.parsing.method_family) below
}
TABLE_COLUMNS = {**VARIANT_COLUMNS, **PREDICTION_COLUMNS}   # every column of the run's PredictionTable
_KINDS = {"endpoint": "int", "variant": "int", "item": "int", "chain": "int", "stage": "int", "step": "int",
          "n_options": "int", "iou": "float", "cue_adopted": "float", "level": "float", "correct": "bool"}
CHUNK = 50_000
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


class JsonArrayLength(Func):
    """The length of a JSON array column: PostgreSQL's jsonb_array_length, SQLite's json_array_length
    (the demo runs on SQLite)."""

    function = "jsonb_array_length"
    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra):
        return super().as_sql(compiler, connection, function="json_array_length", **extra)


def _answer_keys(labels: np.ndarray) -> np.ndarray:
    """One canonical key per distinct answer / cue label, whatever JSON text the database gave ('"B"',
    'B', '["A", "C"]', '["A","C"]'): letters upper-cased, a list sorted and joined by commas."""
    out = []
    for label in labels.tolist():
        try:
            value = json.loads(label) if label else ""
        except ValueError:
            value = label
        if isinstance(value, list):
            out.append(",".join(sorted(str(v).strip().upper() for v in value)) or "[]")
        else:
            out.append(str(value).strip().upper() if value is not None else "")
    return np.array(out or [""], dtype=str)


def _variant_rows(run: EvaluationRun, kinds: tuple[str, ...] | None = None):
    """The attributes of every variant the run has a prediction of (of `kinds` only, when given), computed
    in SQL: the cluster (patient, else image), the number of options shown, the answer that adopts the
    variant's cue as a comparable JSON key, the dose level and the sub-kind."""
    params = "params"
    asked = Prediction.objects.filter(run=run).values("variant_id")
    variants = Variant.objects.filter(pk__in=asked)
    if kinds is not None:
        variants = variants.filter(kind__in=kinds)
    return (variants.order_by()
            .annotate(t_cluster=Coalesce(Cast(NullIf(F("item__chain__image__split_group"), Value("")), TextField()),
                                         Concat(Value("image:"), Cast(F("item__chain__image_id"), TextField()),
                                                output_field=TextField()), output_field=TextField()),
                      t_n_options=Coalesce(JsonArrayLength(F("options")), Value(0)),
                      t_cue=Case(When(kind__in=("misleading_hint", "correct_hint"),
                                      then=Coalesce(Cast(KeyTransform("hinted_letter", params), TextField()),
                                                    Value(""), output_field=TextField())),
                                 When(kind="wrong_visual_cue", item__category__answer_type__in=KEY_CUE_TYPES,
                                      then=Coalesce(Cast(KeyTransform("cue_letter", params), TextField()),
                                                    Value(""), output_field=TextField())),
                                 default=Value(""), output_field=TextField()),
                      t_level=Case(When(kind="box_dose_response",
                                        then=Cast(KeyTextTransform("target_iou", params), FloatField())),
                                   default=Value(None, output_field=FloatField())),
                      t_subkind=Coalesce(KeyTextTransform("cue", params), KeyTextTransform("ablation", params),
                                         KeyTextTransform("target_iou", params), Value(""), output_field=TextField()))
            .values_list(*VARIANT_COLUMNS.values()))


def _prediction_rows(run: EvaluationRun, kinds: tuple[str, ...] | None = None):
    """The predictions' own columns; the parsed answer of an answered prediction as a JSON key."""
    predictions = Prediction.objects.filter(run=run)
    if kinds is not None:
        predictions = predictions.filter(variant__kind__in=kinds)
    return (predictions.order_by()
            .annotate(t_answer=Case(When(outcome="answered", then=Cast(F("parsed"), TextField())),
                                    default=Value(""), output_field=TextField()))
            .values_list(*PREDICTION_COLUMNS.values()))


def _read(rows, names) -> dict[str, tuple]:
    """Columns from a row iterator, CHUNK rows at a time (bounded memory): numbers as numpy arrays,
    strings as (sorted distinct labels, int32 codes)."""
    parts: dict[str, list] = {n: [] for n in names}
    seen = {n: {} for n in names if _KINDS.get(n, "str") == "str"}
    it = iter(rows)
    while chunk := list(islice(it, CHUNK)):
        for j, name in enumerate(names):
            col = map(itemgetter(j), chunk)
            kind = _KINDS.get(name, "str")
            if kind == "str":
                codes, values = seen[name], list(col)
                for v in set(values).difference(codes):
                    codes[v] = len(codes)
                parts[name].append(np.fromiter(map(codes.__getitem__, values), np.int32, len(values)))
            elif kind == "float":
                parts[name].append(np.array(list(col), dtype=float))      # None -> nan
            else:
                parts[name].append(np.fromiter(col, bool if kind == "bool" else np.int64, len(chunk)))
        del chunk
    out: dict[str, tuple] = {}
    for name in names:
        kind = _KINDS.get(name, "str")
        col = np.concatenate(parts.pop(name)) if parts[name] else np.zeros(0, np.int32 if kind == "str" else np.int64)
        if kind != "str":
            out[name] = (col,)
            continue
        labels = np.array(["" if v is None else str(v) for v in seen[name]] or [""], dtype=str)
        uniq, remap = np.unique(labels, return_inverse=True)      # sorted; None and "" merge
        out[name] = (uniq, remap.ravel().astype(np.int32)[col])
    return out


def prediction_table(*, run: EvaluationRun, kinds: tuple[str, ...] | None = None) -> PredictionTable:
    """The run's predictions as a PredictionTable (every column of TABLE_COLUMNS). With `kinds`, only the
    predictions on variants of those kinds are read (a report's clean-only breakdowns read a tenth of a
    full run's rows); the cue baseline then covers the kinds read."""
    variants = _read(_variant_rows(run, kinds).iterator(chunk_size=CHUNK), list(VARIANT_COLUMNS))
    preds = _read(_prediction_rows(run, kinds).iterator(chunk_size=CHUNK), list(PREDICTION_COLUMNS))
    # per distinct label, not per row: the split of a split group, the family of a parse method
    uniq, inv = variants["split"]
    variants["split"] = _relabel(splits_of(uniq), inv)
    preds["answer"] = _relabel(_answer_keys(preds["answer"][0]), preds["answer"][1])
    variants["cue"] = _relabel(_answer_keys(variants["cue"][0]), variants["cue"][1])
    uniq, inv = preds["family"]
    preds["family"] = _relabel(np.array([method_family(str(m)) for m in uniq], dtype=str), inv)
    vid = variants.pop("variant")[0]
    order = np.argsort(vid, kind="stable")
    at = order[np.searchsorted(vid, preds["variant"][0], sorter=order)] if len(vid) else np.zeros(0, np.int64)
    data, codes = {}, {}
    for name, col in {**variants, **preds}.items():
        rows = at if name in variants else slice(None)
        if len(col) == 1:
            data[name] = col[0][rows]
        elif name == "cluster":           # only equality matters: the codes are the cluster ids
            data[name] = col[1][rows].astype(np.int64)
        else:
            codes[name] = (col[0], col[1][rows])
    # a box's coordinates are no answer key; an errored prediction's family is "error"
    types, type_codes = codes["answer_type"]
    not_choice = ~np.isin(types, CHOICE_TYPES)[type_codes]
    codes["answer"] = _blank_where(*codes["answer"], not_choice)
    outcomes, outcome_codes = codes["outcome"]
    codes["family"] = _set_where(*codes["family"], outcomes[outcome_codes] == "error", "error")
    table = PredictionTable(**data, **{name: uniq[inv] for name, (uniq, inv) in codes.items()})
    for name, (uniq, inv) in codes.items():
        table._codes[name] = (getattr(table, name), uniq, inv.astype(np.int64))
    table.cue_clean = _rule_cue_baseline(run, table)
    return table


def _relabel(labels: np.ndarray, inv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct labels, codes) after mapping each old label to `labels` (equal ones merge)."""
    uniq, remap = np.unique(labels, return_inverse=True)
    return uniq, remap.ravel().astype(np.int32)[inv]


def _set_where(uniq: np.ndarray, inv: np.ndarray, mask: np.ndarray, value: str) -> tuple[np.ndarray, np.ndarray]:
    labels = np.append(uniq, value)
    return _relabel(labels, np.where(mask, len(uniq), inv))


def _blank_where(uniq: np.ndarray, inv: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _set_where(uniq, inv, mask, "")


def _rule_cue_baseline(run: EvaluationRun, table: PredictionTable) -> np.ndarray:
    """For visual cues not decided by comparing keys: whether the model's CLEAN prediction of the same
    item adopts this variant's cue, by the rule of `cue_adopted_by`, so adoption can be chance-corrected.
    A wrong-region box on box items and answer + box items: the clean prediction's box (`Prediction.box`;
    None when it gave none) at IoU >= 0.5 with the cue's box (vectorised: `box_iou_array`); a mislabeled
    option on multi-choice items: `cue_adopted_by` itself. nan elsewhere."""
    out = np.full(len(table), np.nan)
    cue = (table.kind == "wrong_visual_cue") & (table.cue == "")
    boxed = cue & (table.subkind == "wrong_region") & (
        (table.answer_type == "box") | (np.isin(table.answer_type, KEY_CUE_TYPES) & ~np.isnan(table.iou)))
    listed = np.flatnonzero(cue & (table.subkind == "mislabeled") & (table.answer_type == "multi_choice"))
    rows = np.flatnonzero(boxed)
    if not rows.size and not listed.size:
        return out
    items = np.unique(table.item[np.concatenate([rows, listed])])
    clean_variants = np.unique(table.variant[(table.kind == "clean") & np.isin(table.item, items)]).tolist()
    corners = [Cast(KeyTextTransform(str(i), "box"), FloatField()) for i in range(4)]
    clean: dict[tuple[int, int], tuple] = {}   # the first clean prediction (by variant id), as metrics pair them
    for e, i, o, v, *box in (Prediction.objects.filter(run=run, variant_id__in=clean_variants).order_by("variant_id")
                             .annotate(c0=corners[0], c1=corners[1], c2=corners[2], c3=corners[3])
                             .values_list("endpoint_id", "item_id", "outcome",
                                          Case(When(item__category__answer_type="multi_choice",
                                                    then=F("parsed"))), "c0", "c1", "c2", "c3")
                             .iterator(chunk_size=20000)):
        clean.setdefault((e, i), (o, v, box))
    if rows.size:
        cue_boxes = {pk: c for pk, *c in Variant.objects.filter(pk__in=np.unique(table.variant[rows]).tolist())
                     .annotate(**{f"b{i}": Cast(KeyTextTransform(str(i), KeyTransform("box", "params")), FloatField())
                                  for i in range(4)}).values_list("pk", "b0", "b1", "b2", "b3")}
        pairs = [(r, clean.get((e, i)), cue_boxes.get(v)) for r, e, i, v in
                 zip(rows.tolist(), table.endpoint[rows].tolist(), table.item[rows].tolist(),
                     table.variant[rows].tolist())]
        pairs = [(r, c[2], b) for r, c, b in pairs if c is not None and b is not None and None not in b]
        if pairs:
            at = np.array([r for r, _, _ in pairs])
            model = np.array([[np.nan if x is None else x for x in c] for _, c, _ in pairs], dtype=float)
            out[at] = (box_iou_array(model, np.array([b for _, _, b in pairs], dtype=float)) >= IOU_HIT).astype(float)
    if listed.size:
        variants = {pk: (params or {}, options or [], expected or {}) for pk, params, options, expected in
                    Variant.objects.filter(pk__in=np.unique(table.variant[listed]).tolist())
                    .values_list("pk", "params", "options", "expected_answer")}
        for r in listed.tolist():
            found, info = clean.get((int(table.endpoint[r]), int(table.item[r]))), variants.get(int(table.variant[r]))
            if found is not None and info is not None:
                adopted = cue_adopted_by("wrong_visual_cue", "multi_choice", info[0], info[1], found[0], found[1],
                                         expected=info[2])
                out[r] = np.nan if adopted is None else float(adopted)
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
        # the layers above subscribe (adjudication opens cases from it); workers never imports them
        run_scored.send(sender=EvaluationRun, run=run, n_predictions=len(table))
    run.metrics = metrics
    return metrics
