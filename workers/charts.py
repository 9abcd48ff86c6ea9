"""Figures of a run's results, drawn server-side by matplotlib (Agg backend) as inline SVG: readable on
the results page without JavaScript, printable, reusable in reports. The numbers come from the stored
metrics (workers/scoring/metrics.py); every whisker is the metric's 95% cluster-bootstrap interval."""
from __future__ import annotations

from common.figures import inline_svg, plt  # pyplot on the Agg backend

PALETTE = ("#1f6feb", "#d1495b", "#2a9d8f", "#e9a03b", "#6f42c1", "#6c757d", "#0b7285", "#8d6e63")
STAGE_NAMES = {1: "S1 perception", 2: "S2 detection", 3: "S3 characterization", 4: "S4 diagnosis"}
DOSE_LEVELS = ("clean", "0.7", "0.5", "0.3")


def _get(d: dict, key):
    """A stage- or level-keyed entry; stored metrics have string keys, fresh ones int keys."""
    return d.get(key, d.get(str(key))) if d else None


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

    series: [{"label": str, "degradation": model_metrics(...)["stage_degradation"]}]
    """
    fig, ax = plt.subplots(figsize=(7.6, 3.0))
    stages = [1, 2, 3, 4]
    chance_drawn = False
    for i, model in enumerate(series):
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
        ax.errorbar(xs, ys, yerr=[err_lo, err_hi], color=PALETTE[i % len(PALETTE)], marker="o", markersize=4,
                    linewidth=1.6, capsize=3, label=f"{model['label'][:34]} (n={n} chains)")
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
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=8)
    return inline_svg(fig, f"Stage degradation on the same chains: accuracy by stage, {kind} variants, with chance")


def dose_response_svg(series: list[dict]) -> str:
    """Mean IoU of the model's box with the gold box when the image shows a box drawn at IoU 0.7 / 0.5 /
    0.3 with the gold one (and on the clean image), one line per model, 95% cluster-bootstrap whiskers.
    A model that copies the drawn box lands on the diagonal of the drawn levels.

    series: [{"label": str, "dose": model_metrics(...)["dose_response"]}]
    """
    fig, ax = plt.subplots(figsize=(6.0, 2.8))
    positions = {lvl: i for i, lvl in enumerate(DOSE_LEVELS)}
    drawn = False
    for i, model in enumerate(series):
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
            ax.errorbar(xs, ys, yerr=[lo, hi], color=PALETTE[i % len(PALETTE)], marker="o", markersize=4,
                        linewidth=1.6, capsize=3, label=model["label"][:34])
    ax.plot([1, 2, 3], [0.7, 0.5, 0.3], color="#888", linestyle=":", linewidth=1.2, label="the drawn box's IoU")
    ax.set_xticks(range(len(DOSE_LEVELS)), ["clean image", "box at IoU 0.7", "box at IoU 0.5", "box at IoU 0.3"])
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("mean IoU with the gold box")
    ax.grid(axis="y", color="#e5e7eb")
    ax.spines[["top", "right"]].set_visible(False)
    if drawn:
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=8)
    return inline_svg(fig, "Box dose-response: mean IoU with the gold box by the IoU of the drawn box")
