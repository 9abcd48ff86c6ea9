"""Plots of a shortcut audit, drawn server-side by matplotlib (Agg backend) as inline SVG."""
from __future__ import annotations

import hashlib
import json

from django.core.cache import cache

from common.figures import inline_svg, plt  # pyplot on the Agg backend

RANK_COLORS = ("#d1495b", "#e9a03b", "#2a9d8f", "#1f6feb", "#6f42c1", "#adb5bd")
FLAG_COLORS = {"red": "#d1495b", "amber": "#e9a03b", "green": "#2a9d8f", "grey": "#adb5bd"}


#: bump when a plot's drawing changes, so no cache keeps the old drawing
CHARTS_VERSION = 1
CHARTS_TTL = 24 * 3600


def audit_chart_svgs(categories: list[dict]) -> dict[str, str]:
    """Both plots of an audit's per-category results, `{"gold_svg", "accuracy_svg"}`. Drawing them takes
    matplotlib about half a second, and a stored audit's results never change, so they are cached by a
    hash of the results they draw (a day): the same results always give the same plots."""
    digest = hashlib.sha256(json.dumps(categories, sort_keys=True, default=str).encode()).hexdigest()
    return cache.get_or_set(f"validity:charts:{CHARTS_VERSION}:{digest}", lambda: {
        "gold_svg": gold_distribution_svg(categories), "accuracy_svg": blind_accuracy_svg(categories)}, CHARTS_TTL)


def _label(cell: dict) -> str:
    return f"{cell['stage']} {cell['label'][:34]}"


def gold_distribution_svg(categories: list[dict]) -> str:
    """Stacked bars per category: the share of each gold value, the majority first."""
    cells = [c for c in categories if c.get("gold")]
    fig, ax = plt.subplots(figsize=(8.5, 0.28 * max(len(cells), 3) + 1.0))
    for y, cell in enumerate(cells):
        gold = cell["gold"]
        left = 0.0
        for rank, (_value, n) in enumerate(gold["counts"][:5]):
            share = n / gold["n"]
            ax.barh(y, share, left=left, color=RANK_COLORS[rank], edgecolor="white", linewidth=0.5)
            left += share
        if left < 1:
            ax.barh(y, 1 - left, left=left, color=RANK_COLORS[-1], edgecolor="white", linewidth=0.5)
        ax.text(1.01, y, f"{str(gold['majority'])[:22]} {gold['majority_share'] * 100:.0f}%", va="center", fontsize=7)
    ax.set_yticks(range(len(cells)), [_label(c) for c in cells], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.axvline(0.6, color="#333", linewidth=0.6, linestyle="--")
    ax.set_xlabel("share of items by gold answer (majority first; dashed: 60% balance limit)")
    ax.spines[["top", "right"]].set_visible(False)
    return inline_svg(fig, "Gold answer distribution per category")


def blind_accuracy_svg(categories: list[dict]) -> str:
    """Best blind baseline accuracy per category with its 95% cluster-bootstrap interval, against chance."""
    cells = [c for c in categories if c.get("best")]
    fig, ax = plt.subplots(figsize=(8.5, 0.28 * max(len(cells), 3) + 1.0))
    for y, cell in enumerate(cells):
        best = cell["best"]
        color = FLAG_COLORS.get(cell["flag"], "#333")
        if best.get("ci"):
            ax.plot(best["ci"], [y, y], color=color, linewidth=1.6)
        ax.plot([best["accuracy"]], [y], "o", color=color, markersize=4)
        ax.plot([best["chance"]], [y], "|", color="#333", markersize=9, markeredgewidth=1.5)
        ax.text(1.01, y, f"{best['code']} {best['accuracy'] * 100:.0f}% (n={best['n']})", va="center", fontsize=7)
    ax.set_yticks(range(len(cells)), [_label(c) for c in cells], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.03)
    ax.set_xlabel("best blind baseline accuracy (dot, 95% interval by patient) · chance (|)")
    ax.spines[["top", "right"]].set_visible(False)
    return inline_svg(fig, "Blind baseline accuracy against chance per category")
