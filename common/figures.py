"""Server-side figures: matplotlib on the Agg backend, written as inline SVG that pages embed without
JavaScript (and reports can reuse). One set-up for every app that draws (validity/charts.py,
workers/charts.py): text stays text in the SVG, ids are stable (a fixed hash salt), the same font."""
from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen; apps import it from here)

matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "medr2", "font.size": 9,
                            "font.family": "sans-serif"})


def inline_svg(fig, label: str) -> str:
    """The figure as an <svg> element with an accessible label (the figure is closed). No date is written
    and ids come from the fixed hash salt, so the same figure gives the same bytes (reports hash them)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    return re.sub(r"<svg ", f'<svg role="img" aria-label="{label}" class="chart mpl" ', text, count=1)

__all__ = ["inline_svg", "plt"]


def whisker(stat: dict | None):
    """(value, below, above) of a stat with its interval, for `errorbar`; the interval collapses to the value
    without one; None without a value."""
    if not stat or stat.get("value") is None:
        return None
    v = stat["value"]
    lo = stat["lo"] if stat.get("lo") is not None else v
    hi = stat["hi"] if stat.get("hi") is not None else v
    return v, max(v - lo, 0.0), max(hi - v, 0.0)


def shorten(label: str, n: int = 30) -> str:
    """A label cut to `n` characters with an ellipsis."""
    return label if len(label) <= n else label[:n - 1] + "…"
