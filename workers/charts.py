"""Figures of a run's results, drawn server-side by matplotlib (Agg backend) as inline SVG: readable on
the results page without JavaScript, printable, reusable in reports. The numbers come from the stored
metrics (workers/scoring/metrics.py); every whisker is the metric's 95% cluster-bootstrap interval.

A model's colour and line style come from `common.palette.model_style(endpoint id)`, so it is the same in
these plots, on the run page's tables, the case page and the reports. The robustness heatmap is an HTML
table (accessible, values printed in the cells) whose cell colours come from `heat_colours`: cividis, a
sequential map that stays readable under the common colour-vision deficiencies and in grey."""
from __future__ import annotations

from matplotlib import colormaps, colors

from common.figures import inline_svg, plt  # pyplot on the Agg backend
from common.formatting import interval, pct, plural, pp
from common.palette import model_style

HEAT_MAP = colormaps["cividis"]
STAGE_NAMES = {1: "S1 perception", 2: "S2 detection", 3: "S3 characterization", 4: "S4 diagnosis"}
DOSE_LEVELS = ("clean", "0.7", "0.5", "0.3")


def _get(d: dict, key):
    """A stage- or level-keyed entry; stored metrics have string keys, fresh ones int keys."""
    return d.get(key, d.get(str(key))) if d else None


def _style(model: dict):
    return model_style(model.get("endpoint"))


def _whiskers(stat: dict | None) -> tuple[float, float, float] | None:
    if not stat or stat.get("value") is None:
        return None
    v = stat["value"]
    lo = stat.get("lo") if stat.get("lo") is not None else v
    hi = stat.get("hi") if stat.get("hi") is not None else v
    return v, v - lo, hi - v


def stage_degradation_svg(series: list[dict], *, kind: str = "clean") -> str:
    """Accuracy by stage on the same chains (those with clean predictions at all four stages), one line per
    model, with 95% cluster-bootstrap whiskers; the dotted grey line is the chance of a uniform guess on
    those items (it differs by stage because the number of options does).

    series: [{"endpoint": id, "label": str, "degradation": model_metrics(...)["stage_degradation"]}]
    """
    fig, ax = plt.subplots(figsize=(10.5, 4.2))
    stages = [1, 2, 3, 4]
    chance_drawn = False
    for model in series:
        by_stage = _get((model.get("degradation") or {}).get("by_kind") or {}, kind) or {}
        xs, ys, err_lo, err_hi, chance = [], [], [], [], []
        for s in stages:
            cell = _get(by_stage, s) or {}
            w = _whiskers(cell.get("accuracy"))
            if w is None:
                continue
            xs.append(s)
            ys.append(w[0])
            err_lo.append(w[1])
            err_hi.append(w[2])
            chance.append(cell.get("chance"))
        if not xs:
            continue
        n = (model.get("degradation") or {}).get("chains")
        style = _style(model)
        ax.errorbar(xs, ys, yerr=[err_lo, err_hi], color=style.colour, linestyle=style.linestyle, marker="o",
                    markersize=5, linewidth=1.8, capsize=3, label=f"{model['label'][:34]} ({n} chains)")
        if not chance_drawn and all(c is not None for c in chance):
            ax.plot(xs, chance, color="#888", linestyle=":", linewidth=1.2, label="chance (uniform guess)")
            chance_drawn = True
    ax.set_xticks(stages, [STAGE_NAMES[s] for s in stages])
    ax.set_ylim(0, 1.02)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])
    ax.set_ylabel(f"accuracy ({kind} variants)")
    ax.grid(axis="y", color="#e5e7eb")
    ax.spines[["top", "right"]].set_visible(False)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=9)
    return inline_svg(fig, f"Stage degradation on the same chains: accuracy by stage, {kind} variants, with chance")


def dose_response_svg(series: list[dict]) -> str:
    """Mean IoU of the model's box with the gold box when the image shows a box drawn at IoU 0.7 / 0.5 /
    0.3 with the gold one (and on the clean image), one line per model, 95% cluster-bootstrap whiskers.
    A model that copies the drawn box lands on the diagonal of the drawn levels.

    series: [{"endpoint": id, "label": str, "dose": model_metrics(...)["dose_response"]}]
    """
    fig, ax = plt.subplots(figsize=(9.0, 4.0))
    positions = {lvl: i for i, lvl in enumerate(DOSE_LEVELS)}
    drawn = False
    for model in series:
        dose = model.get("dose") or {}
        xs, ys, lo, hi = [], [], [], []
        for lvl in DOSE_LEVELS:
            w = _whiskers((dose.get(lvl) or {}).get("mean_iou"))
            if w is None:
                continue
            xs.append(positions[lvl])
            ys.append(w[0])
            lo.append(w[1])
            hi.append(w[2])
        if xs:
            drawn = True
            style = _style(model)
            ax.errorbar(xs, ys, yerr=[lo, hi], color=style.colour, linestyle=style.linestyle, marker="o",
                        markersize=5, linewidth=1.8, capsize=3, label=model["label"][:34])
    ax.plot([1, 2, 3], [0.7, 0.5, 0.3], color="#888", linestyle=":", linewidth=1.2, label="the drawn box's IoU")
    ax.set_xticks(range(len(DOSE_LEVELS)), ["clean image", "box at IoU 0.7", "box at IoU 0.5", "box at IoU 0.3"])
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("mean IoU with the gold box")
    ax.grid(axis="y", color="#e5e7eb")
    ax.spines[["top", "right"]].set_visible(False)
    if drawn:
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=9)
    return inline_svg(fig, "Box dose-response: mean IoU with the gold box by the IoU of the drawn box")


# --------------------------------------------------------------------------- the robustness heatmap (HTML)

def heat_colours(value: float | None) -> tuple[str, str]:
    """(background, text colour) of a heatmap cell for a proportion in [0, 1] on the cividis map; the text is
    black on light cells and white on dark ones (contrast ≥ 4.5:1 either way)."""
    if value is None:
        return "", ""
    rgb = HEAT_MAP(min(max(float(value), 0.0), 1.0))[:3]
    luminance = sum(w * (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
                    for w, c in zip((0.2126, 0.7152, 0.0722), rgb, strict=True))
    return colors.to_hex(rgb), "#000000" if luminance > 0.179 else "#ffffff"


def heat_legend(steps: int = 6) -> list[tuple[str, str]]:
    """(colour, label) stops of the heatmap's scale, 0% to 100%."""
    return [(heat_colours(i / (steps - 1))[0], pct(i / (steps - 1), 0)) for i in range(steps)]


def robustness_heatmap(groups: list[dict]) -> list[dict]:
    """The robustness groups (workers.results.robustness_groups) as heatmap rows: one row per variant kind,
    one cell per model, coloured by the accuracy on the perturbed variants (paired with clean ones), with
    the drop and the harmful flip rate printed beside it and the interval, pairs and stages in its title."""
    out = []
    for group in groups:
        rows = []
        for row in group["rows"]:
            cells = []
            for cell, stages in zip(row["cells"], row["by_stage"], strict=True):
                accuracy = ((cell or {}).get("adversarial_accuracy") or {}).get("value")
                if not cell or not cell.get("n_pairs") or accuracy is None:
                    cells.append(None)
                    continue
                background, ink = heat_colours(accuracy)
                drop = cell.get("drop") or {}
                flips = (cell.get("harmful_flip_rate") or {}).get("value")
                by_stage = " · ".join(f"S{i} {pp((s.get('drop') or {}).get('value'))}"
                                      for i, s in enumerate(stages, start=1) if s)
                cells.append({
                    "accuracy": pct(accuracy), "drop": pp(drop.get("value")), "flips": pct(flips),
                    "background": background, "ink": ink,
                    "title": "; ".join(part for part in (
                        f"accuracy on the perturbed variants {pct(accuracy)}",
                        f"drop {pp(drop.get('value'))} (95% interval {interval(drop.get('lo'), drop.get('hi'), 'pp')})",
                        f"harmful flips {pct(flips)}", plural(cell["n_pairs"], "pair"),
                        f"by stage: {by_stage}" if by_stage else "") if part),
                })
            rows.append({"kind": row["kind"], "label": row["label"], "cells": cells})
        out.append({**group, "heat_rows": rows})
    return out
