"""What the run page shows of a run's stored metrics: built once per scoring, then read from the cache.

Everything the page shows below the progress bar is derived from `run.metrics` alone (workers/results.py
shapes the tables, workers/charts.py draws the figures and colours the heatmap). At the paper's scale the
stored JSON is ~2.5 MB (the cell table is most of it) and the stage figure is drawn by matplotlib: building
the page's structure costs several times what rendering it does. So it is built on the first view after a
scoring and kept in Django's cache (settings.CACHES) under the run's id and `scored_at`: `run_score` stores
new metrics and a new `scored_at` together, so a cached structure never outlives the metrics it came from,
and a view of a cached run never loads the metrics at all (`selectors.run_get(with_metrics=False)`).

Titles of codes (categories, variant kinds) stay in the template, read when the page renders: a category
renamed after the scoring shows its new name."""
from __future__ import annotations

from django.core.cache import cache
from django.utils.safestring import mark_safe

from . import results
from .charts import dose_response_svg, heat_legend, robustness_heatmap, stage_degradation_svg
from .models import EvaluationRun

CACHE_VERSION = 1                      # bump when the structure below changes shape
CACHE_SECONDS = 30 * 24 * 3600         # the key changes with every scoring; this only frees old entries


def run_results_page(run: EvaluationRun) -> dict:
    """The run page's results structure (`results_page`), from the cache when this scoring was seen before.
    Reads `run.metrics` (a query, when `run` was loaded without them) only on a miss."""
    if run.scored_at is None:      # no scoring to key on (metrics set by hand, or none): nothing worth caching
        return results_page(run.metrics)
    key = f"workers.run-results.v{CACHE_VERSION}:{run.pk}:{run.scored_at.isoformat()}"
    return cache.get_or_set(key, lambda: results_page(run.metrics), CACHE_SECONDS)


def results_page(metrics: dict | None) -> dict:
    """The template context of the run page's results (templates/workers/run_detail.html), from the stored
    metrics: only what the page shows, each table built once."""
    metrics = metrics or {}
    labels = metrics.get("endpoints", {})
    scored = bool(metrics.get("models"))
    if not scored:
        return {"scored": False, "complete": bool(metrics.get("complete"))}
    dose = results.dose_series(metrics)
    return {
        "scored": True, "complete": bool(metrics.get("complete")),
        "leaderboard": results.leaderboard(metrics),
        "robustness_groups": robustness_heatmap(results.robustness_groups(metrics)), "heat_legend": heat_legend(),
        "models": results.model_columns(metrics),
        "cues": results.cue_rows(metrics), "dose": results.dose_rows(metrics),
        "parse_rows": results.parse_rows(metrics), "stage_tables": results.stage_tables(metrics),
        "stage_chains": results.stage_chains(metrics),
        "split_leaderboards": results.split_leaderboards(metrics), "premise": results.premise_rows(metrics),
        "by_split": results.pivot(metrics.get("by_split", []), "split", labels),
        "grounded": results.grounded_rows(metrics, labels),
        "comparisons": [{**c, "a_label": labels.get(str(c["a"])), "b_label": labels.get(str(c["b"]))}
                        for c in metrics.get("comparisons", [])],
        "by_category": results.pivot(metrics.get("by_category", []), "category", labels),
        "by_modality": results.pivot(metrics.get("by_modality", []), "modality", labels),
        "chart": mark_safe(stage_degradation_svg(results.degradation_series(metrics))),
        "dose_chart": mark_safe(dose_response_svg(dose)) if dose else "",
    }
