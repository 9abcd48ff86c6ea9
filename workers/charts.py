"""Figures as inline SVG (no plotting library, no JavaScript): readable on the results page,
printable, and reusable in reports."""
from __future__ import annotations

from html import escape

PALETTE = ("#1f6feb", "#d1495b", "#2a9d8f", "#e9a03b", "#6f42c1", "#6c757d", "#0b7285", "#8d6e63")
STAGE_NAMES = {1: "S1 perception", 2: "S2 detection", 3: "S3 characterization", 4: "S4 diagnosis"}


def stage_degradation_svg(series: list[dict], *, width: int = 760, height: int = 300) -> str:
    """One line per model: conditional accuracy A(s | all earlier stages right) by stage, with
    Wilson 95% whiskers; step accuracy (unconditional) dashed.

    series: [{"label": str, "stages": {stage: {"value", "lo", "hi", "conditional": {...}}}}]
    """
    left, right, top, bottom = 52, 230, 16, 42
    pw, ph = width - left - right, height - top - bottom
    stages = sorted({int(s) for m in series for s in m["stages"]}) or [1, 2, 3, 4]
    xs = {s: left + (pw * i / max(1, len(stages) - 1) if len(stages) > 1 else pw / 2) for i, s in enumerate(stages)}

    def y(v: float) -> float:
        return top + ph * (1 - v)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="Stage degradation: conditional accuracy by stage" class="chart">',
           '<style>text{font:11px system-ui,sans-serif;fill:#333}.grid{stroke:#e5e7eb}.axis{stroke:#888}</style>']
    for v in (0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>')
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{int(v * 100)}%</text>')
    for s in stages:
        out.append(f'<text x="{xs[s]:.1f}" y="{top + ph + 16}" text-anchor="middle">{escape(STAGE_NAMES.get(s, f"S{s}"))}</text>')
    out.append(f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}"/>')
    for i, model in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        for key, dash in (("conditional", ""), ("step", ' stroke-dasharray="4 3"')):
            points = []
            for s in stages:
                cell = model["stages"].get(s) or model["stages"].get(str(s))
                if not cell:
                    continue
                c = cell.get("conditional") if key == "conditional" else cell
                if not c or c.get("value") is None:
                    continue
                points.append((xs[s], c["value"], c.get("lo"), c.get("hi")))
            if len(points) > 1:
                path = " ".join(f"{px:.1f},{y(v):.1f}" for px, v, _, _ in points)
                out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{path}"/>')
            for px, v, lo, hi in points:
                if key == "conditional" and lo is not None and hi is not None:
                    out.append(f'<line stroke="{color}" x1="{px:.1f}" x2="{px:.1f}" y1="{y(lo):.1f}" y2="{y(hi):.1f}"/>')
                out.append(f'<circle cx="{px:.1f}" cy="{y(v):.1f}" r="{3 if key == "conditional" else 2}" fill="{color}">'
                           f'<title>{escape(model["label"])} · {key} · {v * 100:.1f}%</title></circle>')
        ly = top + 14 + 18 * i
        out.append(f'<line stroke="{color}" stroke-width="2" x1="{left + pw + 14}" x2="{left + pw + 34}" y1="{ly - 4}" y2="{ly - 4}"/>')
        out.append(f'<text x="{left + pw + 40}" y="{ly}">{escape(model["label"][:34])}</text>')
    ly = top + 14 + 18 * len(series) + 8
    out.append(f'<text x="{left + pw + 14}" y="{ly}" class="muted">solid: A(s | earlier right)</text>')
    out.append(f'<text x="{left + pw + 14}" y="{ly + 14}">dashed: step accuracy</text>')
    out.append("</svg>")
    return "\n".join(out)
