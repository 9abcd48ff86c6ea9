"""How a model comparison (`finetune.comparison.model_comparison`) is shown on its page: one colour per
model, the numbers written one way, the tables and the two figures (matplotlib SVG through
`common.figures`). Pure: takes the comparison dict.

Numbers: a proportion is a percentage with one decimal and its 95% interval in brackets ("78.6% [70.1,
85.3]"); a difference is in signed percentage points ("+4.1 pp [−1.2, +9.3]", a true minus sign); a
missing value is an em dash. Colours: `common.palette` — the base model neutral grey, every other model the
colour of its endpoint id (Okabe–Ito, colour-blind safe), the same here, on the run page, the case page and
in the reports; the marker names the recipe (circle: base or no recipe)."""
from __future__ import annotations

import re

from common.figures import inline_svg, plt, shorten, whisker
from common.palette import NEUTRAL, model_colour

MISSING = "—"
MINUS = "\u2212"
BASE_COLOUR = NEUTRAL
MARKERS = {"stepwise": "s", "answer_only": "^", "mixed": "D"}
GROUPS = (("headline", "Accuracy"), ("stages", "Stage degradation (clean, the same full chains at every stage)"),
          ("robustness", "Robustness per variant kind (each perturbed answer paired with the clean one)"),
          ("adoption", "Hint and cue adoption"))
RC = {"font.size": 8.5, "svg.hashsalt": "medr2-finetune"}
GRID = "#e5e7eb"


# --- numbers ----------------------------------------------------------------------------------------------------
def _num(x: float, *, signed: bool = False) -> str:
    text = f"{x:+.1f}" if signed else f"{x:.1f}"
    if text in ("-0.0", "+0.0"):
        text = "+0.0" if signed else "0.0"
    return text.replace("-", MINUS)


def pct(stat: dict | None) -> tuple[str, str]:
    """(value, interval) of a proportion: ("78.6%", "[70.1, 85.3]")."""
    if not stat or stat.get("value") is None:
        return MISSING, ""
    interval = (f"[{_num(100 * stat['lo'])}, {_num(100 * stat['hi'])}]"
                if stat.get("lo") is not None and stat.get("hi") is not None else "")
    return f"{_num(100 * stat['value'])}%", interval


def pp(diff: dict | None) -> tuple[str, str]:
    """(value, interval) of a difference: ("+4.1 pp", "[−1.2, +9.3]")."""
    if not diff or diff.get("value") is None:
        return MISSING, ""
    interval = (f"[{_num(100 * diff['lo'], signed=True)}, {_num(100 * diff['hi'], signed=True)}]"
                if diff.get("lo") is not None and diff.get("hi") is not None else "")
    return f"{_num(100 * diff['value'], signed=True)} pp", interval


def written(number: dict | None, kind: str) -> str:
    """One string: "78.6% [70.1, 85.3]" or "+4.1 pp [−1.2, +9.3]"."""
    value, interval = pct(number) if kind == "pct" else pp(number)
    return f"{value} {interval}".strip()


def _excludes_zero(diff: dict | None) -> bool:
    return bool(diff) and diff.get("lo") is not None and diff.get("hi") is not None and (
        diff["lo"] > 0 or diff["hi"] < 0)


# --- colours and tables -------------------------------------------------------------------------------------------
def model_colours(comparison: dict) -> dict[str, str]:
    """Model name -> colour: the base neutral grey, the others their endpoint's colour (common.palette)."""
    return {m["name"]: BASE_COLOUR if m["is_base"] else model_colour(m.get("endpoint")) for m in comparison["models"]}


def _marker(model: dict) -> str:
    return MARKERS.get((model.get("lineage") or {}).get("recipe") or "", "o")


def metric_tables(comparison: dict) -> list[dict]:
    """One table per group of metrics: rows of cells in model order; each cell the model's number, and for
    every model but the base its difference from the base (bold where the interval excludes 0)."""
    differences = {p["model"]: p["differences"] for p in comparison["pairwise"]}
    effects = {k["kind"]: k["effect"] for k in comparison["kinds"]}
    tables = []
    for group, title in GROUPS:
        rows = []
        for metric in (r for r in comparison["metrics"] if r["group"] == group):
            cells = []
            for m in comparison["models"]:
                value, interval = (pct if metric["kind"] == "pct" else pp)(m["values"].get(metric["key"]))
                cell = {"value": value, "interval": interval}
                if not m["is_base"]:
                    diff = differences[m["name"]].get(metric["key"])
                    cell["diff"], cell["diff_interval"] = pp(diff)
                    cell["clear"] = _excludes_zero(diff)
                cells.append(cell)
            rows.append({"key": metric["key"], "label": metric["label"], "kind": metric["kind"],
                         "effect": effects.get(metric.get("variant_kind", ""), ""), "cells": cells})
        if rows:
            tables.append({"group": group, "title": title, "rows": rows})
    return tables


def recipe_table(comparison: dict) -> dict | None:
    """Per recipe with two or more seeds: per metric the mean over seeds, the mean difference from the base
    with its paired interval, and each seed's value. None when no recipe has two seeds."""
    recipes = [r for r in comparison["recipes"] if len(r["models"]) >= 2]
    if not recipes:
        return None
    rows = []
    for metric in comparison["metrics"]:
        cells = []
        for r in recipes:
            v = r["values"][metric["key"]]
            mean = {"value": v["mean"]}
            each = " · ".join(f"seed {s['seed']}: {(pct if metric['kind'] == 'pct' else pp)({'value': s['value']})[0]}"
                              for s in v["per_seed"])
            diff = r["differences"][metric["key"]]
            cells.append({"mean": (pct if metric["kind"] == "pct" else pp)(mean)[0], "diff": written(diff, "pp"),
                          "clear": _excludes_zero(diff), "per_seed": each})
        rows.append({"label": metric["label"], "cells": cells})
    return {"recipes": [{"recipe": r["recipe"], "label": r["label"], "n": len(r["models"]), "seeds": r["seeds"]}
                        for r in recipes], "rows": rows}


# --- figures --------------------------------------------------------------------------------------------------------
def _short(text: str, n: int = 34) -> str:
    return shorten(text, n)


def _scoped(svg: str, prefix: str) -> str:
    """Ids unique to one figure: two figures inline in one page would otherwise share matplotlib's ids."""
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m[1]}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m[1]})", svg)
    return re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}-{m[1]}"', svg)


def _legend(ax) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=7.5)


def stage_figure(comparison: dict, colours: dict[str, str]) -> str | None:
    """Clean accuracy at S1..S4 on the full chains, one line per model with its 95% interval."""
    stage_rows = [r for r in comparison["metrics"] if r["group"] == "stages" and r["kind"] == "pct"]
    models = comparison["models"]
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(7.4, 3.0))
        drawn = False
        for i, m in enumerate(models):
            dodge = (i - (len(models) - 1) / 2) * 0.07   # side by side: equal points stay visible
            points = [(x + 1 + dodge, whisker(m["values"].get(r["key"]))) for x, r in enumerate(stage_rows)]
            points = [(x, w) for x, w in points if w is not None]
            if not points:
                continue
            drawn = True
            ax.errorbar([x for x, _ in points], [w[0] for _, w in points],
                        yerr=[[w[1] for _, w in points], [w[2] for _, w in points]], color=colours[m["name"]],
                        marker=_marker(m), markersize=4.5, linewidth=1.5, capsize=2.5, elinewidth=1.0,
                        label=f"{_short(m['label'])} ({m['full_chains']} chains)")
        if not drawn:
            plt.close(fig)
            return None
        ax.set_xticks(range(1, len(stage_rows) + 1), [_short(r["label"], 22) for r in stage_rows])
        ax.set_ylim(0, 1.04)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])
        ax.set_ylabel("clean accuracy, full chains")
        ax.grid(axis="y", color=GRID)
        ax.spines[["top", "right"]].set_visible(False)
        _legend(ax)
        return _scoped(inline_svg(fig, "Stage degradation: clean accuracy by stage on the same chains, per model, "
                                       "with 95% intervals"), "fig-stages")


def robustness_figure(comparison: dict, colours: dict[str, str]) -> str | None:
    """Drop (clean − perturbed accuracy, paired) per variant kind, one point per model with its 95% interval."""
    kinds = comparison["kinds"]
    if not kinds:
        return None
    models = comparison["models"]
    step = 0.8 / max(len(models), 1)
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(7.4, 1.1 + 0.45 * len(kinds) * max(1, len(models) / 3)))
        drawn = False
        for i, m in enumerate(models):
            ys, xs, lo, hi = [], [], [], []
            for j, k in enumerate(kinds):
                w = whisker(m["values"].get(f"robustness.{k['kind']}.drop"))
                if w is None:
                    continue
                ys.append(len(kinds) - 1 - j + 0.4 - step * (i + 0.5))
                xs.append(100 * w[0])
                lo.append(100 * w[1])
                hi.append(100 * w[2])
            if xs:
                drawn = True
                ax.errorbar(xs, ys, xerr=[lo, hi], color=colours[m["name"]], fmt=_marker(m), markersize=4.5,
                            capsize=2.5, linewidth=1.3, label=_short(m["label"]))
        if not drawn:
            plt.close(fig)
            return None
        ax.axvline(0, color="#888", linewidth=1, linestyle=":")
        ax.set_yticks(range(len(kinds)), [_short(f"{k['label']} ({k['effect']})", 40) for k in reversed(kinds)])
        ax.set_xlabel("drop: clean − perturbed accuracy on the same items (percentage points)")
        ax.grid(axis="x", color=GRID)
        ax.spines[["top", "right"]].set_visible(False)
        _legend(ax)
        return _scoped(inline_svg(fig, "Robustness: accuracy drop per variant kind, per model, with 95% intervals"),
                       "fig-robustness")


def comparison_page(comparison: dict) -> dict:
    """What the page shows besides the form: colours, the models, the tables and the figures."""
    colours = model_colours(comparison)
    return {"comparison": comparison, "colours": colours,
            "models": [{**m, "colour": colours[m["name"]]} for m in comparison["models"]],
            "tables": metric_tables(comparison), "recipe_table": recipe_table(comparison),
            "stage_svg": stage_figure(comparison, colours), "robustness_svg": robustness_figure(comparison, colours)}
