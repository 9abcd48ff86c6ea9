"""The report's fine-tuning section (docs/reports.md): for each of the report's runs that evaluated a
fine-tuned model (one with lineage: `ModelEndpoint.lineage` or the job that made it), the comparison of its
base model with the fine-tuned ones, read from `finetune.comparison.model_comparison` (the run's stored
metrics, paired cluster-bootstrap differences with the run's seed, fine-tuned models grouped by recipe
with the mean over seeds). Nothing is re-estimated here.

The section exists only when some run has a fine-tuned model, placed after the robustness section; a
report without one keeps the eleven sections (and the numbers) it always had."""
from __future__ import annotations

from django.core.exceptions import ValidationError

from finetune.comparison import finetuned_comparison_models, model_comparison

KEY, TITLE, AFTER = "finetuning", "Fine-tuning: base and fine-tuned models", "robustness"
MODELS_PER_TABLE = 4     # fine-tuned models per table: an A4 page holds the label and four number columns
NOTE = ("Fine-tuned minus base, on the same variants of the same run: each difference is paired (both models "
        "resampled over the same patients; 95% cluster-bootstrap interval, 1,000 resamples seeded by the run id). "
        "Per recipe: the mean over seeds of each seed's difference; its interval holds the seeds fixed, so it "
        "covers patient sampling and not training randomness: read it beside the seeds' own values.")


def section_order(sections, present: bool) -> list[tuple[str, str]]:
    """The report's sections, with this one after AFTER when `present`."""
    out = list(sections)
    if present:
        at = next(i for i, (key, _) in enumerate(out) if key == AFTER) + 1
        out.insert(at, (KEY, TITLE))
    return out


def finetuning_section(*, runs) -> dict | None:
    """The section's numbers, or None when no run evaluated a fine-tuned model."""
    entries, skipped = [], []
    for run in runs:
        names = finetuned_comparison_models(run=run)
        if names is None:
            if any(e.lineage for e in run.endpoints.all()):
                skipped.append({"run": run.pk, "reason": "the fine-tuned models' base model is not in this run"})
            continue
        try:
            comparison = model_comparison(run=run, endpoints=names)
        except ValidationError as exc:        # e.g. a cancelled run that never reached a fine-tuned model
            skipped.append({"run": run.pk, "reason": " ".join(exc.messages)})
            continue
        keys = {m["name"]: f"{run.pk}:{m['endpoint']}" for m in comparison["models"]}
        entries.append({"run": run.pk, "base": keys[comparison["base"]], "keys": keys, "comparison": comparison})
    if not entries and not skipped:
        return None
    return {"runs": entries, "not_compared": skipped, "note": NOTE}


def _report_rows(metrics: list[dict]) -> list[dict]:
    """The rows a report shows: accuracy, stages, adoption, and of robustness the drop per kind."""
    return [r for r in metrics if r["group"] != "robustness" or r["key"].endswith(".drop")]


def finetuning_context(document: dict) -> dict | None:
    """What the report's template shows for the section: per run, the models with their lineage and colour,
    tables of the base's numbers and each fine-tuned model's value and difference (MODELS_PER_TABLE per
    table), and the per-recipe means."""
    section = document["sections"].get(KEY)
    if not section:
        return None
    colours = {m["key"]: m["colour"] for m in document["models"]}
    out = []
    for entry in section["runs"]:
        c = entry["comparison"]
        models = [{**m, "colour": colours.get(entry["keys"][m["name"]], "#4d4d4d")} for m in c["models"]]
        base, tuned = models[0], models[1:]
        differences = {p["model"]: p["differences"] for p in c["pairwise"]}
        rows = _report_rows(c["metrics"])
        tables = []
        for start in range(0, len(tuned), MODELS_PER_TABLE):
            part = tuned[start:start + MODELS_PER_TABLE]
            tables.append({"models": part, "rows": [
                {"label": r["label"], "kind": r["kind"], "base": base["values"].get(r["key"]),
                 "cells": [{"value": m["values"].get(r["key"]), "diff": differences[m["name"]].get(r["key"])}
                           for m in part]} for r in rows]})
        recipes = None
        if c["recipes"]:
            recipes = {"recipes": [{"recipe": rc["recipe"], "seeds": rc["seeds"]} for rc in c["recipes"]], "rows": [
                {"label": r["label"], "kind": r["kind"], "cells": [
                    {"mean": rc["values"][r["key"]]["mean"], "per_seed": rc["values"][r["key"]]["per_seed"],
                     "diff": rc["differences"][r["key"]]} for rc in c["recipes"]]} for r in rows]}
        out.append({"run": entry["run"], "run_name": c["run"]["name"], "split": c["run"]["split"], "base": base,
                    "models": models, "tables": tables, "recipes": recipes})
    return {"runs": out, "not_compared": section["not_compared"], "note": section["note"]}
