"""Scoring a run: the run's predictions are read as compact numpy columns, numpy computes every metric
(workers/scoring/metrics.py) one model at a time, the result is stored on the run and audited by digest.

Bounded memory (issue 19: 15 M predictions in one run): the variants' attributes are read once (a run
asks every model the same variants), the predictions' own narrow columns in one pass as 29 bytes
per prediction (a position in the variants table, codes, the IoU), split by model as they arrive. Each
model's rows, in variant order, then become a `CodedTable` (strings as codes, widened only where a
metric needs the values) from which that model's metrics, its per-split metrics, its rows of every cell
table and its per-item outcomes for the paired comparisons are computed; the table is dropped before
the next model. Every metric of a model depends only on that model's rows (its bootstrap weights are
drawn from its own clusters), so this gives the numbers `model_metrics` / `cell_table` give on the whole
table. After an adjudication correction (`run_score(..., changed_endpoints=...)`) only the models whose
predictions changed are scored again; the stored parts of the others are kept.

Every prediction carries the patient-level split of its item's image, so the stored metrics name the
run's split and break every cell down by split; a run over `all` splits also gets the per-model
metrics of each split (`by_split`), so train accuracy is never read as test accuracy."""
from __future__ import annotations

import hashlib
import itertools
import json
from collections import defaultdict
from collections.abc import Sequence
from itertools import islice
from operator import itemgetter

import numpy as np
from django.db import transaction
from django.db.models import Case, Count, F, FloatField, Func, IntegerField, TextField, Value, When
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Coalesce, Concat, NullIf
from django.utils import timezone

from annotation.models import Variant
from annotation.splits import SPLITS, split_for_group
from audit.services import audit_record

from ..models import EvaluationRun, Prediction
from ..parsing import method_family
from ..scoring.coded import CodedTable, answer_keys, blank_where, json_safe, relabel, set_where
from ..scoring.item import IOU_HIT, box_iou_array, cue_adopted_by
from ..scoring.metrics import PredictionTable, cell_table, compare_outcomes, endpoint_metrics, item_outcomes
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
_answer_keys, _relabel, _set_where, _blank_where, _clean = answer_keys, relabel, set_where, blank_where, json_safe
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


def _variant_rows(run: EvaluationRun, kinds: tuple[str, ...] | None = None,
                  endpoints: tuple[int, ...] | None = None):
    """The attributes of every variant the run has a prediction of (of `kinds` only, when given), computed
    in SQL: the cluster (patient, else image), the number of options shown, the answer that adopts the
    variant's cue as a comparable JSON key, the dose level and the sub-kind."""
    params = "params"
    asked = Prediction.objects.filter(run=run)
    if endpoints is not None:
        asked = asked.filter(endpoint_id__in=endpoints)
    asked = asked.values("variant_id")
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


def _prediction_rows(run: EvaluationRun, kinds: tuple[str, ...] | None = None,
                     endpoints: tuple[int, ...] | None = None):
    """The predictions' own columns; the parsed answer of an answered prediction as a JSON key."""
    predictions = Prediction.objects.filter(run=run)
    if endpoints is not None:
        predictions = predictions.filter(endpoint_id__in=endpoints)
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


def prediction_table(*, run: EvaluationRun, kinds: tuple[str, ...] | None = None,
                     endpoints: Sequence[int] | None = None) -> PredictionTable:
    """The run's predictions as a PredictionTable (every column of TABLE_COLUMNS). With `kinds`, only the
    predictions on variants of those kinds are read (a report's clean-only breakdowns read a tenth of a
    full run's rows); the cue baseline then covers the kinds read. With `endpoints` (model ids), only
    those models' predictions (a comparison of 2 of a run's 14 models reads a seventh of it)."""
    endpoints = None if endpoints is None else tuple(int(e) for e in endpoints)
    variants = _read(_variant_rows(run, kinds, endpoints).iterator(chunk_size=CHUNK), list(VARIANT_COLUMNS))
    preds = _read(_prediction_rows(run, kinds, endpoints).iterator(chunk_size=CHUNK), list(PREDICTION_COLUMNS))
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


def _rule_cue_baseline(run: EvaluationRun, table: PredictionTable | CodedTable, endpoint: int | None = None,
                       cache: dict | None = None) -> np.ndarray:
    """For visual cues not decided by comparing keys: whether the model's CLEAN prediction of the same
    item adopts this variant's cue, by the rule of `cue_adopted_by`, so adoption can be chance-corrected.
    A wrong-region box on box items and answer + box items: the clean prediction's box (`Prediction.box`;
    None when it gave none) at IoU >= 0.5 with the cue's box (vectorised: `box_iou_array`); a mislabeled
    option on multi-choice items: `cue_adopted_by` itself. nan elsewhere. With `endpoint`, the table holds
    that model's rows only (its clean predictions alone are read); `cache` keeps the cue variants' boxes
    and parameters from one model to the next (every model is asked the same variants)."""
    cache = {} if cache is None else cache
    out = np.full(len(table), np.nan)
    cue = table.is_("kind", "wrong_visual_cue") & table.is_("cue", "")
    boxed = cue & table.is_("subkind", "wrong_region") & (
        table.is_("answer_type", "box") | (table.isin("answer_type", KEY_CUE_TYPES) & ~np.isnan(table.iou)))
    listed = np.flatnonzero(cue & table.is_("subkind", "mislabeled") & table.is_("answer_type", "multi_choice"))
    rows = np.flatnonzero(boxed)
    if not rows.size and not listed.size:
        return out
    items = np.unique(table.item[np.concatenate([rows, listed])])
    clean_variants = np.unique(table.variant[table.is_("kind", "clean") & np.isin(table.item, items)]).tolist()
    corners = [Cast(KeyTextTransform(str(i), "box"), FloatField()) for i in range(4)]
    clean: dict[tuple[int, int], tuple] = {}   # the first clean prediction (by variant id), as metrics pair them
    asked = Prediction.objects.filter(run=run, variant_id__in=clean_variants)
    if endpoint is not None:
        asked = asked.filter(endpoint_id=endpoint)
    asked = (asked.order_by("variant_id").annotate(c0=corners[0], c1=corners[1], c2=corners[2], c3=corners[3])
             .values_list("endpoint_id", "item_id", "outcome",
                          Case(When(item__category__answer_type="multi_choice", then=F("parsed"))),
                          "c0", "c1", "c2", "c3"))
    # one model's rows are few: read at once (a server-side cursor plans for the first rows: 10x slower here)
    for e, i, o, v, *box in (asked if endpoint is not None else asked.iterator(chunk_size=20000)):
        clean.setdefault((e, i), (o, v, box))
    if rows.size:
        cue_boxes = cache.setdefault("boxes", {})
        missing = np.setdiff1d(table.variant[rows], np.fromiter(cue_boxes, np.int64, len(cue_boxes))).tolist()
        cue_boxes.update({pk: c for pk, *c in Variant.objects.filter(pk__in=missing)
                          .annotate(**{f"b{i}": Cast(KeyTextTransform(str(i), KeyTransform("box", "params")),
                                                     FloatField()) for i in range(4)})
                          .values_list("pk", "b0", "b1", "b2", "b3")} if missing else {})
        pairs = [(r, clean.get((e, i)), cue_boxes.get(v)) for r, e, i, v in
                 zip(rows.tolist(), table.endpoint[rows].tolist(), table.item[rows].tolist(),
                     table.variant[rows].tolist())]
        pairs = [(r, c[2], b) for r, c, b in pairs if c is not None and b is not None and None not in b]
        if pairs:
            at = np.array([r for r, _, _ in pairs])
            model = np.array([[np.nan if x is None else x for x in c] for _, c, _ in pairs], dtype=float)
            out[at] = (box_iou_array(model, np.array([b for _, _, b in pairs], dtype=float)) >= IOU_HIT).astype(float)
    if listed.size:
        variants = cache.setdefault("listed", {})
        missing = np.setdiff1d(table.variant[listed], np.fromiter(variants, np.int64, len(variants))).tolist()
        variants.update({pk: (params or {}, options or [], expected or {}) for pk, params, options, expected in
                         Variant.objects.filter(pk__in=missing).values_list("pk", "params", "options",
                                                                             "expected_answer")} if missing else {})
        for r in listed.tolist():
            found, info = clean.get((int(table.endpoint[r]), int(table.item[r]))), variants.get(int(table.variant[r]))
            if found is not None and info is not None:
                adopted = cue_adopted_by("wrong_visual_cue", "multi_choice", info[0], info[1], found[0], found[1],
                                         expected=info[2])
                out[r] = np.nan if adopted is None else float(adopted)
    return out


# ------------------------------------------------------------------ scoring one model at a time
_VARIANT_NUMBERS = ("item", "chain", "stage", "step", "n_options", "level", "cluster")
_VARIANT_LABELS = ("category", "modality", "kind", "answer_type", "split", "cue", "subkind")
_CODED = ("outcome", "answer", "family")     # per-prediction strings, coded as they arrive
_PART_DTYPES = {"vpos": np.int32, "correct": bool, "iou": float, "cue_adopted": np.float32,
                **{name: np.int32 for name in _CODED}}


def _variant_table(run: EvaluationRun) -> dict[str, np.ndarray | tuple[np.ndarray, np.ndarray]]:
    """The attributes of the run's variants, one row per variant sorted by variant id: numbers as arrays,
    strings as (sorted labels, codes); `choice` says whether a variant's answer is a choice key."""
    v = _read(_variant_rows(run).iterator(chunk_size=CHUNK), list(VARIANT_COLUMNS))
    uniq, inv = v["split"]
    v["split"] = _relabel(splits_of(uniq), inv)
    v["cue"] = _relabel(_answer_keys(v["cue"][0]), v["cue"][1])
    vid = v.pop("variant")[0]
    order = np.argsort(vid, kind="stable")
    out: dict = {"variant": vid[order]}
    for name, col in v.items():
        out[name] = col[0][order] if len(col) == 1 else (col[0], col[1][order])
    out["cluster"] = out["cluster"][1]       # only equality matters: the codes are the cluster ids
    types, codes = out["answer_type"]
    out["choice"] = np.isin(types, CHOICE_TYPES)[codes]
    return out


def _read_predictions(rows, variants: dict) -> tuple[dict[int, dict[str, list]], dict[str, dict]]:
    """The predictions' narrow columns from a row iterator (PREDICTION_COLUMNS order), CHUNK rows at a
    time, split by model: per endpoint id, lists of chunks of `vpos` (int32 row of `variants`), correct,
    iou (float64), cue_adopted (float32: 0, 1, nan) and the codes (int32, first seen first) of outcome,
    answer (a choice variant's only: other answers are no key) and family; and each coded column's labels."""
    vid, choice = variants["variant"], variants["choice"]
    seen: dict[str, dict] = {name: {} for name in _CODED}
    parts: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    it = iter(rows)
    while chunk := list(islice(it, CHUNK)):
        n = len(chunk)
        endpoint = np.fromiter(map(itemgetter(0), chunk), np.int64, n)
        variant = np.fromiter(map(itemgetter(1), chunk), np.int64, n)
        vpos = np.minimum(np.searchsorted(vid, variant), max(len(vid) - 1, 0))
        known = vid[vpos] == variant if len(vid) else np.zeros(n, bool)   # a prediction newer than the variants read
        is_choice = (choice[vpos] & known).tolist()
        cols = {"vpos": vpos.astype(np.int32), "correct": np.fromiter(map(itemgetter(3), chunk), bool, n),
                "iou": np.array([r[4] for r in chunk], dtype=float),
                "cue_adopted": np.array([r[5] for r in chunk], dtype=np.float32)}
        for name, values in (("outcome", map(itemgetter(2), chunk)),
                             ("answer", (r[6] if c else "" for r, c in zip(chunk, is_choice))),
                             ("family", map(itemgetter(7), chunk))):
            codes, values = seen[name], list(values)
            for value in set(values).difference(codes):
                codes[value] = len(codes)
            cols[name] = np.fromiter(map(codes.__getitem__, values), np.int32, n)
        del chunk
        order = np.argsort(endpoint, kind="stable")
        ends, starts = np.unique(endpoint[order], return_index=True)
        for e, lo, hi in zip(ends.tolist(), starts.tolist(), [*starts[1:].tolist(), n]):
            take = order[lo:hi][known[order[lo:hi]]]
            for name, col in cols.items():
                parts[e][name].append(col[take])
    return parts, seen


def _labels(seen: dict[str, dict]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per coded column: (sorted distinct labels, new code of each first-seen code)."""
    out = {}
    for name, codes in seen.items():
        raw = np.array(["" if v is None else str(v) for v in codes] or [""], dtype=str)
        labels = (_answer_keys(raw) if name == "answer" else
                  np.array([method_family(str(m)) for m in raw.tolist()], dtype=str) if name == "family" else raw)
        out[name] = _relabel(labels, np.arange(len(raw)))
    return out


def _endpoint_table(run: EvaluationRun, endpoint: int, parts: dict[str, list], variants: dict,
                    labels: dict[str, tuple[np.ndarray, np.ndarray]], cache: dict | None = None) -> CodedTable:
    """One model's rows, in variant order, as a CodedTable with the cue baseline of `_rule_cue_baseline`."""
    cols = {name: np.concatenate(parts.get(name) or [np.zeros(0, dtype)]) for name, dtype in _PART_DTYPES.items()}
    parts.clear()
    order = np.argsort(cols["vpos"], kind="stable")
    vpos = cols.pop("vpos")[order]
    n = len(vpos)
    numbers = {"endpoint": np.full(n, endpoint, dtype=np.int64), "variant": variants["variant"][vpos],
               **{name: variants[name][vpos] for name in _VARIANT_NUMBERS},
               **{name: cols.pop(name)[order] for name in ("correct", "iou", "cue_adopted")}}
    coded = {name: (variants[name][0], variants[name][1][vpos]) for name in _VARIANT_LABELS}
    for name in _CODED:
        uniq, remap = labels[name]
        coded[name] = (uniq, remap[cols.pop(name)[order]])
    outcomes, outcome_codes = coded["outcome"]       # an errored prediction's family is "error"
    coded["family"] = _set_where(*coded["family"], np.isin(outcome_codes, np.flatnonzero(outcomes == "error")),
                                 "error")
    table = CodedTable(n, numbers, coded)
    table.cue_clean = _rule_cue_baseline(run, table, endpoint, cache)
    return table


def _score_endpoint(run: EvaluationRun, table: CodedTable, endpoint: int, n_resamples: int) -> dict:
    """Everything the run's metrics hold about one model (JSON-safe), and its per-item outcomes."""
    seed = run.pk
    out = {"models": endpoint_metrics(table, seed=seed),
           "by_split": {}, "cells": {name: cell_table(table, by, seed=seed) for name, by in BREAKDOWNS.items()},
           "items": item_outcomes(table, endpoint, answered_only=False)}
    if run.split == "all":
        for s in SPLITS:
            rows = np.flatnonzero(table.is_("split", s))
            if rows.size:
                out["by_split"][s] = endpoint_metrics(table.view(rows), seed=seed)
    return {**_clean({k: v for k, v in out.items() if k != "items"}), "items": out["items"]}


def _reusable(run: EvaluationRun, changed: set[int]) -> tuple[dict[int, int], set[int]] | None:
    """(predictions per model, models whose stored metrics can be kept) when the run's stored metrics
    still describe every model outside `changed` (same models, same number of predictions), else None."""
    stored = run.metrics or {}
    models = stored.get("models")
    if not models or any(name not in stored for name in (*BREAKDOWNS, "comparisons", "models_by_split")):
        return None
    counts = dict(Prediction.objects.filter(run=run).order_by().values_list("endpoint_id").annotate(n=Count("id")))
    if {str(e) for e in counts} != set(models) or stored.get("n_predictions") != sum(counts.values()):
        return None
    keep = {e for e in counts if e not in changed}
    if any(models[str(e)].get("n_predictions") != counts[e] for e in keep):
        return None
    return counts, keep


def _scored_parts(run: EvaluationRun, n_resamples: int, changed: set[int] | None):
    """(predictions per model, per model: its scored parts, or None where the stored ones are kept)."""
    variants = _variant_table(run)
    labels_all = None
    plan = _reusable(run, changed) if changed is not None else None
    if plan is None:        # every model: one pass over the predictions
        parts, seen = _read_predictions(_prediction_rows(run).iterator(chunk_size=CHUNK), variants)
        labels_all = _labels(seen)
        counts = {e: sum(len(c) for c in p["vpos"]) for e, p in parts.items()}
        keep: set[int] = set()
    else:
        counts, keep = plan
    out, cache = {}, {}
    for e in sorted(counts):
        if labels_all is not None:
            part, labels = parts.pop(e), labels_all
        else:               # one model at a time; the kept ones only for their clean predictions' outcomes
            rows = _prediction_rows(run).filter(endpoint_id=e)
            if e in keep:
                rows = rows.filter(variant__kind="clean")
            got, seen = _read_predictions(rows.iterator(chunk_size=CHUNK), variants)
            part, labels = got.pop(e, {}), _labels(seen)
        table = _endpoint_table(run, e, part, variants, labels, cache)
        out[e] = ({"items": item_outcomes(table, e, answered_only=False)} if e in keep
                  else _score_endpoint(run, table, e, n_resamples))
        del table
    return counts, out


def run_score(*, run: EvaluationRun, actor, n_resamples: int = 1000, changed_endpoints=None) -> dict:
    """Compute and store every metric of the run (also for a cancelled or partly failed run: the
    numbers then cover what was predicted, and `complete` says so).

    `changed_endpoints`: the models whose predictions changed since the run was last scored (a rescoring
    after an adjudication correction). Only those are scored again, and only the comparisons that involve
    one of them; the stored metrics of the other models are kept, provided they still describe those
    models' predictions (same models, same counts), else the whole run is scored."""
    changed = None if changed_endpoints is None else {int(e) for e in changed_endpoints}
    endpoints = {e.pk: e.label for e in run.endpoints.all()}
    counts, parts = _scored_parts(run, n_resamples, changed)
    stored = run.metrics or {}
    models, by_split, cells = {}, defaultdict(dict), {name: [] for name in BREAKDOWNS}
    for e, part in parts.items():
        if "models" in part:
            models[str(e)] = part["models"]
            for s, m in part["by_split"].items():
                by_split[s][str(e)] = m
            for name in BREAKDOWNS:
                cells[name] += part["cells"][name]
        else:
            models[str(e)] = stored["models"][str(e)]
            for s, m in stored["models_by_split"].items():
                if str(e) in m:
                    by_split[s][str(e)] = m[str(e)]
            for name in BREAKDOWNS:
                cells[name] += [row for row in stored[name] if row["endpoint"] == e]
    kept = {(c["a"], c["b"]): c for c in stored.get("comparisons", [])} if changed is not None else {}
    comparisons = []
    for a, b in itertools.combinations(sorted(endpoints), 2):
        if (a, b) in kept and "models" not in parts.get(a, {}) and "models" not in parts.get(b, {}):
            comparisons.append(kept[(a, b)])
        elif a in parts and b in parts:
            comparisons.append(_clean({"a": a, "b": b, **compare_outcomes(
                parts[a]["items"], parts[b]["items"], a, b, n_resamples=n_resamples, seed=run.pk)}))
        else:    # a model without predictions: compared on no item
            comparisons.append(_clean({"a": a, "b": b, **compare_outcomes(*_no_items(a, b), a, b,
                                                                             n_resamples=n_resamples, seed=run.pk)}))
    n = sum(counts.values())
    metrics = {
        "scored_at": timezone.now().isoformat(), "complete": run.status == EvaluationRun.Status.COMPLETED,
        "split": run.split, "n_predictions": n, "endpoints": {str(k): v for k, v in endpoints.items()},
        "models": models, "models_by_split": {s: by_split[s] for s in SPLITS if s in by_split},
        **cells, "comparisons": comparisons if n else [],
    }
    # the parts are JSON-safe already (each model's when computed, the kept ones as stored)
    digest = hashlib.sha256(json.dumps(metrics, sort_keys=True, default=str).encode()).hexdigest()
    with transaction.atomic():
        EvaluationRun.objects.filter(pk=run.pk).update(metrics=metrics, scored_at=timezone.now())
        audit_record(actor=actor, action="workers.run.score", target=run,
                     after={"n_predictions": n, "metrics_sha256": digest,
                            "models_rescored": sorted(e for e, p in parts.items() if "models" in p)})
        # the layers above subscribe (adjudication opens cases from it); workers never imports them
        run_scored.send(sender=EvaluationRun, run=run, n_predictions=n)
    run.metrics = metrics
    return metrics


def _no_items(a: int, b: int) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    empty = (np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int64))
    return empty, empty
