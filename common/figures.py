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
