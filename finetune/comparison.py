"""Comparing two or more models evaluated in the same run (a selector: reads only).

`model_comparison(run=, endpoints=None)` returns one plain, JSON-ready dict. The models answered the same
variants of the same run, so every comparison is paired. Definitions are the platform's own
(`workers/scoring/metrics.py`); nothing here defines a new metric:

- ``step_accuracy`` (clean accuracy) and ``chain_accuracy`` (every clean step of a chain right);
- ``stage.S<n>.accuracy``: clean accuracy at stage n on the *full chains* (clean answers at all four
  stages), and ``stage.S4.drop`` = accuracy(S1) − accuracy(S4) on those chains (`stage_degradation`);
- ``robustness.<kind>.adversarial_accuracy`` / ``.drop`` (clean − adversarial, paired per item) /
  ``.flip_rate`` for every non-clean kind (`robustness`);
- hint and cue adoption, for ``misleading_hint`` and ``wrong_visual_cue``:
  ``robustness.<kind>.cue_adoption_rate`` (P(answer = cue | cue shown)) and ``.cue_adoption_corrected``
  (minus P(answer = cue | clean), over the decidable pairs).

The metric names are those of the report's acceptance criteria (`reports.criteria`).

Where the numbers come from. A model's own numbers are read from the run's stored metrics
(`EvaluationRun.metrics["models"]`, written by `run_score`) while they still describe its predictions (same
count, same clean k); the clean-accuracy difference from the stored paired comparison of the two models
(`metrics["comparisons"]`, `compare_models`: items, McNemar, cluster bootstrap). Everything else a pairwise
comparison needs (the other differences; every number of a run not scored yet) is computed from the run's
predictions (`prediction_table`) by the same analysis functions (`chain_metrics`, `stage_degradation`,
`robustness`), with the same seed (the run id) and resamples.

Paired intervals. Each model's statistics are resampled over the clusters (patients) of all the compared
models, numbered alike for every model, so resample r draws the same patients for each of them (when the
models share their clusters, as models of one run do, the per-model intervals are exactly the stored
ones). A difference "model − base" is then the difference of the two models' resampled values, with its
95% percentile interval: the rule of `StatBatch.difference` (value None unless both are defined; no
interval with fewer than 2 clusters). Its ``n`` is the smaller of the two models' units; ``p_value`` is
`bootstrap_p_value` of those resamples.

Cached. Each comparison is kept in Django's cache (settings.CACHES; on a page: with the page's tables and
figures, `model_comparison_derived`) under the run, the compared models (base first) and a fingerprint of
everything it is computed from, so a cached comparison is never stale: the run's status and `scored_at`
(every scoring, a rescore's included, stores new metrics), its batches (how many finished, how many
predictions they wrote: a running run's predictions), the latest `PredictionRescore` of its predictions (a
gold correction changed `correct` / `iou`, even before the run is scored again), and what the comparison
shows besides the numbers (the models' names, labels and lineage, the jobs, the stage names). A view of a
cached comparison costs a few small queries and never reads the predictions.

Fine-tuned models. A model with lineage (`ModelEndpoint.lineage`, or the job that produced it,
`FineTuneJob.result_endpoint`) carries it (job, base, recipe, seed, steps, release). Fine-tuned models
are grouped by recipe: per metric the mean over the seeds and each seed's value, and the mean of the
per-seed differences from the base with its paired interval (the resampled mean of the differences;
the seeds are held fixed, so the interval covers patient sampling, not training randomness).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db.models import Count

from adjudication.models import PredictionRescore
from common.errors import NotFound
from workers.models import EvaluationRun, ModelEndpoint
from workers.results import KIND_LABELS
from workers.scoring.analyses import KIND_ORDER, Endpoint, effect_of, robustness, stage_degradation
from workers.scoring.metrics import _chain_metrics as chain_metrics
from workers.scoring.stats import CONFIDENCE, N_RESAMPLES, Pending, StatBatch, bootstrap_p_value, percentiles
from workers.scoring.table import PredictionTable, factorize
from workers.selectors import run_find, run_progress, stage_list
from workers.services.scoring import prediction_table

from .models import FineTuneJob, Recipe

STAGES = ("1", "2", "3", "4")
ADOPTION_KINDS = ("misleading_hint", "wrong_visual_cue")
LINEAGE_KEYS = ("job", "base", "recipe", "seed", "steps", "release")
MAX_RUN_CHOICES = 200
CACHE_VERSION = 1                   # bump when the comparison (or a derived page) changes shape
CACHE_SECONDS = 30 * 24 * 3600      # the key changes with the data; this only frees old entries
EMPTY_DIFF = {"value": None, "lo": None, "hi": None, "n": None, "p_value": None}


# --- which metrics, and where each lives in a model's metrics (stored or computed: the same keys) ----------
def _at(d: Any, path: Sequence[str]) -> Any:
    """The entry at `path`; stage keys are strings when stored and ints when fresh."""
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key, d.get(int(key)) if key.isdigit() else None)
    return d


def metric_rows(kinds: Sequence[str], stage_names: dict[str, str] | None = None) -> list[dict]:
    """The compared metrics in display order: {"key", "label", "kind" (pct: a proportion, pp: a
    difference), "group", "path" (in a model's metrics), and "variant_kind" for the robustness rows}."""
    names = stage_names or {}
    rows = [
        {"key": "step_accuracy", "label": "Clean accuracy", "kind": "pct", "group": "headline",
         "path": ("step_accuracy",)},
        {"key": "chain_accuracy", "label": "Chain accuracy (every clean step right)", "kind": "pct",
         "group": "headline", "path": ("chain_accuracy",)},
    ]
    rows += [{"key": f"stage.S{s}.accuracy", "label": names.get(s, f"S{s}"), "kind": "pct", "group": "stages",
              "path": ("stage_degradation", "by_kind", "clean", s, "accuracy")} for s in STAGES]
    rows.append({"key": "stage.S4.drop", "label": "Drop S1 → S4 (S1 − S4)", "kind": "pp", "group": "stages",
                 "path": ("stage_degradation", "drop", "4")})
    for kind in kinds:
        label = KIND_LABELS.get(kind, kind)
        rows += [{"key": f"robustness.{kind}.{field}", "label": f"{label}: {text}", "kind": unit,
                  "group": "robustness", "variant_kind": kind, "path": ("robustness", kind, field)}
                 for field, text, unit in (("adversarial_accuracy", "accuracy", "pct"),
                                           ("drop", "drop (clean − perturbed)", "pp"),
                                           ("flip_rate", "flip rate", "pct"))]
    for kind in (k for k in ADOPTION_KINDS if k in kinds):
        label = KIND_LABELS.get(kind, kind)
        rows += [{"key": f"robustness.{kind}.cue_adoption_rate", "label": f"{label}: adopted", "kind": "pct",
                  "group": "adoption", "variant_kind": kind, "path": ("robustness", kind, "cue_adoption_rate")},
                 {"key": f"robustness.{kind}.cue_adoption_corrected",
                  "label": f"{label}: adopted beyond the clean answer", "kind": "pp", "group": "adoption",
                  "variant_kind": kind, "path": ("robustness", kind, "cue_adoption_corrected")}]
    return rows


def _kind_key(kind: str) -> tuple[int, str]:
    return (KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER), kind)


# --- the paired statistics, from the run's predictions -------------------------------------------------------
class _PairedEndpoint(Endpoint):
    """One model's predictions whose statistics are resampled over the clusters of every compared model,
    numbered alike for all of them (`codes` of these rows among `n_clusters`): resample r draws the same
    patients for each model, so differences between models are paired."""

    def __init__(self, t, codes: np.ndarray, n_clusters: int, seed: int) -> None:
        super().__init__(t, N_RESAMPLES, seed, CONFIDENCE)
        self.codes_of_rows = codes
        self.b = StatBatch(codes, n_clusters, n_resamples=N_RESAMPLES, seed=seed, confidence=CONFIDENCE)


def _paired_statistics(t: PredictionTable, endpoint_ids: list[int], seed: int) -> tuple[dict[int, dict], int]:
    """Per endpoint, its analyses with `Pending` statistics run (results and resamples set), and the
    number of clusters resampled."""
    selected = np.isin(t.endpoint, endpoint_ids)
    rows = np.flatnonzero(selected)
    _, codes = factorize(t.cluster[rows])
    n_clusters = int(codes.max()) + 1 if codes.size else 0
    code_of = np.full(len(t), -1, dtype=np.int64)
    code_of[rows] = codes
    out = {}
    for pk in endpoint_ids:
        mine = np.flatnonzero(t.endpoint == pk)
        e = _PairedEndpoint(t.view(mine), code_of[mine], n_clusters, seed)
        stats = {**chain_metrics(e), "stage_degradation": stage_degradation(e), "robustness": robustness(e)}
        e.b.run()
        out[pk] = stats
    return out, n_clusters


def _result(p: Any) -> Any:
    return p.result if isinstance(p, Pending) else p


def _between(a: Any, b: Any) -> dict:
    """a − b for two models' statistics resampled with the same clusters (module docstring)."""
    if not isinstance(a, Pending) or not isinstance(b, Pending) or a.samples is None or b.samples is None:
        return dict(EMPTY_DIFF)
    return _difference([a], b)


def _difference(models: list[Pending], base: Pending) -> dict:
    """mean over `models` of (model − base), value and paired interval from the joint resamples."""
    values = [(p.result or {}).get("value") for p in models]
    base_value = (base.result or {}).get("value")
    if base_value is None or any(v is None for v in values):
        return dict(EMPTY_DIFF)
    value = float(np.mean([v - base_value for v in values]))
    samples = np.mean([p.samples - base.samples for p in models], axis=0)
    clusters = min([base.clusters, *(p.clusters for p in models)])
    ns = [(p.result or {}).get("n") for p in (*models, base)]
    n = min(ns) if all(isinstance(x, (int, float)) for x in ns) else None
    lo, hi = percentiles(samples[:, None], CONFIDENCE)
    ok = clusters >= 2 and not np.isnan(lo[0])
    return {"value": value, "lo": float(lo[0]) if ok else None, "hi": float(hi[0]) if ok else None, "n": n,
            "p_value": bootstrap_p_value(value, samples) if ok else None}


def _stored_clean_difference(metrics: dict, model: int, base: int) -> dict | None:
    """model − base clean accuracy from the run's stored paired comparison (`compare_models`), if any."""
    for c in (metrics or {}).get("comparisons") or []:
        pair = (c.get("a"), c.get("b"))
        if set(pair) != {model, base}:
            continue
        boot = c.get("bootstrap") or {}
        if boot.get("diff") is None:
            return None
        sign = 1.0 if pair[0] == model else -1.0
        lo, hi = boot.get("lo"), boot.get("hi")
        if sign < 0:
            lo, hi = (None if hi is None else -hi), (None if lo is None else -lo)
        return {"value": sign * boot["diff"] + 0.0, "lo": lo, "hi": hi, "n": c.get("n"),
                "p_value": boot.get("p_value"), "mcnemar_p": (c.get("mcnemar") or {}).get("p_value"),
                "source": "stored comparison (items)"}
    return None


# --- which models, which base, their lineage ------------------------------------------------------------------
def _jobs(run: EvaluationRun, endpoints: list[ModelEndpoint]) -> tuple[dict[int, FineTuneJob], list[FineTuneJob]]:
    """The jobs that produced these endpoints (by endpoint id), and the jobs whose paired run this is."""
    made = {j.result_endpoint_id: j for j in FineTuneJob.objects.filter(result_endpoint__in=endpoints)
            .select_related("release", "base_endpoint").order_by("pk")}
    evaluated = list(FineTuneJob.objects.filter(evaluation_run=run).select_related("base_endpoint").order_by("pk"))
    return made, evaluated


def _lineage(endpoint: ModelEndpoint, job: FineTuneJob | None) -> dict | None:
    stored = endpoint.lineage or {}
    if not stored and job is None:
        return None
    from_job = ({"job": job.pk, "recipe": job.recipe, "seed": job.seed,
                 "steps": (job.result or {}).get("steps", job.steps),
                 "release": str(job.release) if job.release_id else None} if job else {})
    out = {key: stored.get(key, from_job.get(key)) for key in LINEAGE_KEYS}
    if out["recipe"] in Recipe.values:
        out["recipe_label"] = Recipe(out["recipe"]).label
    return out


def _names(endpoints: Iterable) -> list[str]:
    names = []
    for e in endpoints:
        name = e.name if isinstance(e, ModelEndpoint) else str(e).strip()
        if name and name not in names:
            names.append(name)
    return names


def _default_order(endpoint: ModelEndpoint, job: FineTuneJob | None) -> tuple:
    """Models not fine-tuned first (by name), then fine-tuned ones by recipe (Recipe order), seed and name."""
    lineage = _lineage(endpoint, job)
    if lineage is None:
        return (0, 0, 0, endpoint.name)
    recipes = list(Recipe.values)
    recipe = lineage.get("recipe")
    return (1, recipes.index(recipe) if recipe in recipes else len(recipes), lineage.get("seed") or 0, endpoint.name)


def _choose(run: EvaluationRun, endpoints, made: dict[int, FineTuneJob], evaluated: list[FineTuneJob],
            available: list[ModelEndpoint]) -> list[ModelEndpoint]:
    """The models compared, the base first: the base model of the job this run evaluates, else the model
    the others' lineage names as their base, else the first named (all models: in `_default_order`)."""
    by_name = {e.name: e for e in available}
    if endpoints is None:
        chosen = sorted(available, key=lambda e: _default_order(e, made.get(e.pk)))
    else:
        names = _names(endpoints)
        missing = [n for n in names if n not in by_name]
        if missing:
            raise ValidationError(f"{', '.join(repr(n) for n in missing)} "
                                  f"{'is' if len(missing) == 1 else 'are'} not a model of run {run.pk} "
                                  f"(its models: {', '.join(sorted(by_name)) or 'none'}).")
        chosen = [by_name[n] for n in names]
    if len(chosen) < 2:
        raise ValidationError(f"A comparison needs two or more models of run {run.pk}; "
                              f"{'it has' if endpoints is None else 'you chose'} {len(chosen)}.")
    ids = {e.pk for e in chosen}
    base = next((j.base_endpoint_id for j in evaluated if j.base_endpoint_id in ids), None)
    if base is None:
        named = [(e.lineage or {}).get("base") or (made[e.pk].base_endpoint.name if e.pk in made else None)
                 for e in chosen]
        base = next((by_name[n].pk for n in named if n in by_name and by_name[n].pk in ids), chosen[0].pk)
    return [e for e in chosen if e.pk == base] + [e for e in chosen if e.pk != base]


# --- the cache ---------------------------------------------------------------------------------------------------
def _cache_key(run: EvaluationRun, chosen: list[ModelEndpoint], made: dict[int, FineTuneJob],
               evaluated: list[FineTuneJob], stage_names: dict[str, str]) -> str:
    """The comparison's cache key: the run, the models (base first), and the fingerprint of what the
    comparison is computed from (module docstring). Two small queries, however many predictions."""
    progress = run_progress(run=run)
    rescore = (PredictionRescore.objects.filter(prediction__run_id=run.pk).order_by("-pk")
               .values_list("pk", flat=True).first())
    inputs = {"run": [run.name, run.split, run.status, run.scored_at],
              "batches": [progress.batches_done, progress.done], "rescore": rescore,
              "models": [[e.pk, e.name, e.label, e.backend, _lineage(e, made.get(e.pk))] for e in chosen],
              "jobs": [[j.pk, j.name, j.recipe, j.seed] for j in evaluated], "stages": stage_names}
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:32]
    return f"finetune.comparison.v{CACHE_VERSION}:{run.pk}:{'-'.join(str(e.pk) for e in chosen)}:{digest}"


# --- the comparison ----------------------------------------------------------------------------------------------
def model_comparison(*, run: EvaluationRun, endpoints: Sequence[ModelEndpoint | str] | None = None) -> dict:
    """The comparison of two or more models of `run` (module docstring): the run, the models (base first)
    with their lineage and numbers, the metric rows, the pairwise differences from the base, and the
    fine-tuned models grouped by recipe. `endpoints`: models or their names (default: every model of the
    run). Raises ValidationError for a model not in the run, fewer than two models or no predictions.
    Cached (module docstring): a fresh copy each call."""
    return model_comparison_derived(run=run, endpoints=endpoints)


def model_comparison_derived(*, run: EvaluationRun, endpoints: Sequence[ModelEndpoint | str] | None = None,
                             derive: Callable[[dict], Any] | None = None) -> Any:
    """`derive(comparison)` (a pure function of the comparison, e.g. a page's tables and figures), cached
    beside the comparison under its key; the comparison itself without `derive`."""
    available = list(run.endpoints.all())
    made, evaluated = _jobs(run, available)
    chosen = _choose(run, endpoints, made, evaluated, available)
    stage_names = {str(s.order): f"{s.code} {s.name}" for s in stage_list()}
    key = _cache_key(run, chosen, made, evaluated, stage_names)
    derived_key = f"{key}:{derive.__module__}.{derive.__qualname__}" if derive else key
    found = cache.get(derived_key)
    if found is not None:
        return found
    comparison = cache.get(key) if derive else None
    if comparison is None:
        comparison = _comparison(run, chosen, made, evaluated, stage_names)
        cache.set(key, comparison, CACHE_SECONDS)
    if derive is None:
        return comparison
    found = derive(comparison)
    cache.set(derived_key, found, CACHE_SECONDS)
    return found


def _comparison(run: EvaluationRun, chosen: list[ModelEndpoint], made: dict[int, FineTuneJob],
                evaluated: list[FineTuneJob], stage_names: dict[str, str]) -> dict:
    """The comparison, computed from the run's predictions (`model_comparison`)."""
    ids = [e.pk for e in chosen]
    table = prediction_table(run=run, endpoints=ids)   # the chosen models only, not the whole run
    counts = {pk: int(np.count_nonzero(table.endpoint == pk)) for pk in ids}
    silent = [e.name for e in chosen if not counts[e.pk]]
    if silent:
        raise ValidationError(f"Run {run.pk} has no predictions of {', '.join(silent)} yet.")
    computed, n_clusters = _paired_statistics(table, ids, seed=run.pk)
    del table
    metrics = run.metrics or {}
    # a model's stored numbers, unless they no longer describe its predictions (scored before some arrived)
    stored = {pk: m for pk in ids if (m := (metrics.get("models") or {}).get(str(pk)))
              and m.get("n_predictions") == counts[pk]
              and (m.get("step_accuracy") or {}).get("k") == computed[pk]["step_accuracy"].result["k"]}
    kinds = sorted({k for pk in ids for k in (computed[pk]["robustness"] or {})}, key=_kind_key)
    rows = metric_rows(kinds, stage_names)
    base = chosen[0]

    models = []
    for e in chosen:
        own = stored.get(e.pk) or computed[e.pk]
        degradation = own.get("stage_degradation") or {}
        models.append({
            "endpoint": e.pk, "name": e.name, "label": e.label, "backend": e.backend, "is_base": e.pk == base.pk,
            "lineage": _lineage(e, made.get(e.pk)), "source": "stored" if e.pk in stored else "computed",
            "n_predictions": counts[e.pk],
            "full_chains": degradation.get("chains") or 0,
            "values": {r["key"]: _result(_at(own, r["path"])) for r in rows},
        })

    pairwise = []
    for e in chosen[1:]:
        differences = {r["key"]: _between(_at(computed[e.pk], r["path"]), _at(computed[base.pk], r["path"]))
                       for r in rows}
        stored_clean = _stored_clean_difference(metrics, e.pk, base.pk) if {e.pk, base.pk} <= set(stored) else None
        if stored_clean:
            differences["step_accuracy"] = stored_clean
        pairwise.append({"model": e.name, "label": e.label, "base": base.name, "differences": differences})

    return {
        "run": {"id": run.pk, "name": run.name, "split": run.split, "status": run.status,
                "scored": bool(metrics.get("models")), "scored_at": metrics.get("scored_at"),
                "complete": bool(metrics.get("complete")), "seed": run.pk, "n_resamples": N_RESAMPLES,
                "confidence": CONFIDENCE, "clusters": n_clusters},
        "jobs": [{"id": j.pk, "name": j.name, "recipe": j.recipe, "seed": j.seed} for j in evaluated],
        "base": base.name,
        "kinds": [{"kind": k, "label": KIND_LABELS.get(k, k), "effect": effect_of(k)} for k in kinds],
        "metrics": [{k: v for k, v in r.items() if k != "path"} for r in rows],
        "models": models,
        "pairwise": pairwise,
        "recipes": _recipes(models, rows, computed, base.pk),
    }


def _recipes(models: list[dict], rows: list[dict], computed: dict[int, dict], base: int) -> list[dict]:
    """Fine-tuned models (not the base) grouped by recipe, in recipe order, seeds ascending."""
    groups: dict[str, list[dict]] = {}
    for m in models:
        recipe = (m["lineage"] or {}).get("recipe")
        if recipe and not m["is_base"]:
            groups.setdefault(recipe, []).append(m)
    order = {r: i for i, r in enumerate(Recipe.values)}
    out = []
    for recipe in sorted(groups, key=lambda r: (order.get(r, len(order)), r)):
        members = sorted(groups[recipe], key=lambda m: ((m["lineage"] or {}).get("seed") is None,
                                                        (m["lineage"] or {}).get("seed") or 0, m["name"]))
        values, differences = {}, {}
        for r in rows:
            per_seed = [{"model": m["name"], "seed": m["lineage"].get("seed"), "value": (m["values"][r["key"]] or {})
                         .get("value")} for m in members]
            known = [x["value"] for x in per_seed if x["value"] is not None]
            values[r["key"]] = {"mean": float(np.mean(known)) if known else None, "min": min(known, default=None),
                                "max": max(known, default=None), "per_seed": per_seed}
            pendings = [_at(computed[m["endpoint"]], r["path"]) for m in members]
            base_p = _at(computed[base], r["path"])
            ok = isinstance(base_p, Pending) and all(isinstance(p, Pending) for p in pendings)
            differences[r["key"]] = _difference(pendings, base_p) if ok else dict(EMPTY_DIFF)
        out.append({"recipe": recipe, "label": Recipe(recipe).label if recipe in order else recipe,
                    "models": [m["name"] for m in members], "seeds": [m["lineage"].get("seed") for m in members],
                    "values": values, "differences": differences})
    return out


# --- reads for the page's form and the report -----------------------------------------------------------------
def comparison_run_get(*, pk: int) -> EvaluationRun:
    """The run (NotFound when there is none), without its stored metrics: a cached comparison never
    reads them (a computed one loads them when it does)."""
    run = run_find(pk=pk, with_metrics=False)
    if run is None:
        raise NotFound(f"There is no evaluation run {pk}.")
    return run


def comparison_run_choices(*, include: int | None = None) -> list[dict]:
    """Runs with two or more models, newest first (at most MAX_RUN_CHOICES, plus `include`), each with the
    fine-tuning job it evaluates, if any."""
    runs = (EvaluationRun.objects.annotate(n_models=Count("endpoints")).filter(n_models__gte=2).order_by("-pk")
            .values("pk", "name", "split", "status", "n_models"))
    rows = list(runs[:MAX_RUN_CHOICES])
    if include is not None and include not in {r["pk"] for r in rows}:
        rows += list(runs.filter(pk=include))
    jobs = dict(FineTuneJob.objects.filter(evaluation_run__in=[r["pk"] for r in rows])
                .order_by("pk").values_list("evaluation_run_id", "name"))
    return [{**r, "job": jobs.get(r["pk"])} for r in rows]


def run_model_choices(*, run: EvaluationRun) -> list[dict]:
    """The run's models (name, label, fine-tuned or not): not fine-tuned first, then by recipe and seed."""
    available = list(run.endpoints.all())
    made, _ = _jobs(run, available)
    return [{"name": e.name, "label": e.label, "fine_tuned": bool(e.lineage) or e.pk in made}
            for e in sorted(available, key=lambda e: _default_order(e, made.get(e.pk)))]


def finetuned_comparison_models(*, run: EvaluationRun) -> list[str] | None:
    """For a run with fine-tuned models: the names to compare, their base first then the fine-tuned ones
    (by recipe, seed and name); None when the run has no fine-tuned model or their base is not among its models."""
    available = list(run.endpoints.all())
    made, evaluated = _jobs(run, available)
    tuned = sorted((e for e in available if e.lineage or e.pk in made), key=lambda e: _default_order(e, made.get(e.pk)))
    if not tuned:
        return None
    names = {e.name for e in available}
    bases = [j.base_endpoint.name for j in evaluated] + [
        (e.lineage or {}).get("base") or (made[e.pk].base_endpoint.name if e.pk in made else None) for e in tuned]
    base = next((b for b in bases if b in names and b not in {e.name for e in tuned}), None)
    return [base, *(e.name for e in tuned)] if base else None
