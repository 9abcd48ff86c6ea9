"""The report's figures, drawn by matplotlib (Agg) from the report document alone, as inline SVG.

Each model keeps the colour the document gave it (`document["models"][i]["colour"]`) in every figure and
table. Bytes are deterministic: a fixed hash salt for the SVG ids, no date in the metadata, text kept as
text, and everything drawn in the document's order; two renders of one document are byte-identical."""
from __future__ import annotations

import math
import re

from common.figures import inline_svg, plt, shorten, whisker

RC = {"svg.hashsalt": "medr2-report", "svg.fonttype": "none", "font.size": 8, "font.family": "DejaVu Sans"}
STAGE_NAMES = {"1": "S1 perception", "2": "S2 detection", "3": "S3 characterization", "4": "S4 diagnosis"}
DOSE_LEVELS = (("clean", "clean image"), ("0.7", "box at IoU 0.7"), ("0.5", "box at IoU 0.5"),
               ("0.3", "box at IoU 0.3"))
FOREST_DIMENSIONS = (("modality", "modality"), ("body_region", "body region"), ("category", "task category"))
MAX_FOREST_GROUPS = 40
GRID = "#e5e7eb"


def _short(text: str, n: int = 30) -> str:
    return shorten(text, n)


def _tidy(ax, *, percent_y: bool = False) -> None:
    ax.grid(axis="y", color=GRID)
    ax.spines[["top", "right"]].set_visible(False)
    if percent_y:
        ax.set_ylim(0, 1.02)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])


def _legend(ax) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=7)


def stage_degradation_svg(document: dict) -> str | None:
    """Accuracy per stage on the same chains (clean variants), one line per model with its 95% interval;
    the dotted grey line is the chance of a uniform guess on the first model's chains."""
    perf = document["sections"]["performance"]["models"]
    stages = list(STAGE_NAMES)
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(7.0, 2.8))
        drawn = chance_drawn = False
        models = document["models"]
        for i, m in enumerate(models):
            dodge = (i - (len(models) - 1) / 2) * 0.05   # models side by side: identical points stay visible
            deg = perf[m["key"]]["stage_degradation"]
            points = [(int(s), whisker((deg["clean"].get(s) or {}).get("accuracy")), (deg["clean"].get(s) or {})
                       .get("chance")) for s in stages]
            points = [(x, w, c) for x, w, c in points if w is not None]
            if not points:
                continue
            drawn = True
            ax.errorbar([x + dodge for x, _, _ in points], [w[0] for _, w, _ in points],
                        yerr=[[w[1] for _, w, _ in points], [w[2] for _, w, _ in points]], color=m["colour"],
                        marker="o", markersize=4, linewidth=1.5, capsize=3,
                        label=f"{_short(m['label'])} ({deg['chains']} chains)")
            if not chance_drawn and all(c is not None for _, _, c in points):
                ax.plot([x for x, _, _ in points], [c for _, _, c in points], color="#888", linestyle=":",
                        linewidth=1.1, label="chance (uniform guess)")
                chance_drawn = True
        if not drawn:
            plt.close(fig)
            return None
        ax.set_xticks([int(s) for s in stages], [STAGE_NAMES[s] for s in stages])
        ax.set_ylabel("accuracy, clean variants")
        _tidy(ax, percent_y=True)
        _legend(ax)
        return inline_svg(fig, "Stage degradation: accuracy by stage on the same chains, with 95% intervals")


def forest_svg(document: dict, dimension: str) -> str | None:
    """Clean accuracy per group of `dimension` (modality, body_region or category), one point per model
    with its 95% interval, groups sorted by name (at most MAX_FOREST_GROUPS)."""
    rows = document["sections"]["performance"]["breakdowns"].get(dimension) or []
    groups = sorted({r["group"] for r in rows})[:MAX_FOREST_GROUPS]
    if not groups:
        return None
    models = document["models"]
    cells = {(r["model"], r["group"]): r for r in rows}
    step = 0.8 / max(len(models), 1)
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(6.6, 0.9 + 0.32 * len(groups) * max(1, math.ceil(len(models) / 3))))
        for i, m in enumerate(models):
            ys, xs, lo, hi = [], [], [], []
            for g, group in enumerate(groups):
                w = whisker(cells.get((m["key"], group)))
                if w is None:
                    continue
                ys.append(len(groups) - 1 - g + 0.4 - step * (i + 0.5))
                xs.append(w[0])
                lo.append(w[1])
                hi.append(w[2])
            if xs:
                ax.errorbar(xs, ys, xerr=[lo, hi], color=m["colour"], fmt="o", markersize=3.5, capsize=2,
                            linewidth=1.2, label=_short(m["label"]))
        ax.set_yticks(range(len(groups)), [_short(g, 28) for g in reversed(groups)])
        ax.set_xlim(0, 1.0)
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])
        ax.set_xlabel("accuracy, clean variants (95% interval)")
        ax.grid(axis="x", color=GRID)
        ax.spines[["top", "right"]].set_visible(False)
        _legend(ax)
        return inline_svg(fig, f"Forest plot: accuracy by {dimension.replace('_', ' ')} with 95% intervals")


def kind_stage_heatmap_svg(document: dict) -> str | None:
    """Robustness drop (clean − adversarial accuracy, paired) per variant kind × stage, one panel per
    model; blue is a gain, red a drop, blank where the kind has no pairs at that stage."""
    robust = document["sections"]["robustness"]
    kinds, models = robust["kinds"], document["models"]
    if not kinds:
        return None
    labels = document["labels"]["kinds"]
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, len(models), figsize=(2.3 * len(models) + 1.6, 0.8 + 0.26 * len(kinds)),
                                 squeeze=False, sharey=True)
        image = None
        for ax, m in zip(axes[0], models):
            entry = robust["models"][m["key"]]["kinds"]
            grid = [[((entry.get(k) or {}).get("by_stage", {}).get(s) or {}).get("drop", {}).get("value")
                     for s in STAGE_NAMES] for k in kinds]
            values = [[math.nan if v is None else v for v in row] for row in grid]
            image = ax.imshow(values, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
            for y, row in enumerate(grid):
                for x, v in enumerate(row):
                    if v is not None:
                        ax.text(x, y, f"{100 * v:+.0f}", ha="center", va="center", fontsize=6,
                                color="white" if abs(v) > 0.6 else "black")
            ax.set_title(_short(m["label"], 24), fontsize=8, color=m["colour"])
            ax.set_xticks(range(4), [f"S{s}" for s in STAGE_NAMES])
            ax.set_yticks(range(len(kinds)), [_short(labels.get(k, k), 26) for k in kinds])
        fig.colorbar(image, ax=list(axes[0]), shrink=0.8, label="drop (percentage points / 100)")
        return inline_svg(fig, "Heatmap: robustness drop by variant kind and stage, per model")


def dose_response_svg(document: dict) -> str | None:
    """Mean IoU of the model's box with the gold box when the image shows a box drawn at IoU 0.7 / 0.5 /
    0.3 (and on the clean image), one line per model with 95% intervals; a model that copies the drawn
    box lands on the dotted diagonal."""
    robust = document["sections"]["robustness"]["models"]
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(6.0, 2.6))
        drawn = False
        models = document["models"]
        for j, m in enumerate(models):
            dodge = (j - (len(models) - 1) / 2) * 0.05
            dose = robust[m["key"]]["dose_response"]
            points = [(i + dodge, whisker((dose.get(lvl) or {}).get("mean_iou")))
                      for i, (lvl, _) in enumerate(DOSE_LEVELS)]
            points = [(x, w) for x, w in points if w is not None]
            if not points:
                continue
            drawn = True
            ax.errorbar([x for x, _ in points], [w[0] for _, w in points],
                        yerr=[[w[1] for _, w in points], [w[2] for _, w in points]], color=m["colour"], marker="o",
                        markersize=4, linewidth=1.5, capsize=3, label=_short(m["label"]))
        if not drawn:
            plt.close(fig)
            return None
        ax.plot([1, 2, 3], [0.7, 0.5, 0.3], color="#888", linestyle=":", linewidth=1.1, label="the drawn box's IoU")
        ax.set_xticks(range(len(DOSE_LEVELS)), [label for _, label in DOSE_LEVELS])
        ax.set_ylabel("mean IoU with the gold box")
        _tidy(ax, percent_y=False)
        ax.set_ylim(0, 1.02)
        _legend(ax)
        return inline_svg(fig, "Box dose-response: mean IoU with the gold box by the IoU of the drawn box")


def _scoped(svg: str, prefix: str) -> str:
    """Ids made unique to one figure (matplotlib numbers them per figure: line2d_1, ...): several figures
    inline in one HTML document would otherwise share ids, and a reference could reach another figure."""
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m[1]}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m[1]})", svg)
    return re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}-{m[1]}"', svg)


def report_figures(document: dict) -> dict[str, dict]:
    """Every figure the document supports: key -> {"title", "svg"} (figures without data are left out)."""
    out = {}
    made = [("stage_degradation", "Stage degradation on the same chains", stage_degradation_svg(document))]
    made += [(f"forest_{d}", f"Accuracy by {label}", forest_svg(document, d)) for d, label in FOREST_DIMENSIONS]
    made += [("kind_stage", "Robustness drop by variant kind and stage", kind_stage_heatmap_svg(document)),
             ("dose_response", "Box dose-response", dose_response_svg(document))]
    for key, title, svg in made:
        if svg:
            out[key] = {"title": title, "svg": _scoped(svg, f"fig-{key}")}
    return out
