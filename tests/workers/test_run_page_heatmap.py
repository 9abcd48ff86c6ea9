"""The run page's robustness heatmap and plots (workers/charts.py): cividis cells whose text stays readable,
values printed in the cells, readable kind names, and each model drawn in its colour from common.palette."""
from __future__ import annotations

import re

from common.palette import model_colour
from workers.charts import heat_colours, heat_legend, robustness_heatmap, stage_degradation_svg


def _luminance(hex_colour: str) -> float:
    rgb = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_every_heat_colour_keeps_its_text_readable():
    for i in range(101):
        background, ink = heat_colours(i / 100)
        assert re.fullmatch(r"#[0-9a-f]{6}", background) and ink in ("#000000", "#ffffff")
        lighter, darker = sorted((_luminance(background), _luminance(ink)), reverse=True)
        assert (lighter + 0.05) / (darker + 0.05) >= 4.5, (i, background, ink)     # WCAG AA for normal text
    assert _luminance(heat_colours(0.0)[0]) < _luminance(heat_colours(1.0)[0])  # sequential: dark = wrong
    assert heat_colours(None) == ("", "") and heat_colours(1.7) == heat_colours(1.0)
    assert [label for _, label in heat_legend(3)] == ["0%", "50%", "100%"]


def _stat(value, lo=None, hi=None, n=10):
    return {"value": value, "lo": lo, "hi": hi, "n": n}


def test_the_heatmap_prints_accuracy_drop_and_flips_with_a_title_per_cell():
    cell = {"n_pairs": 1, "adversarial_accuracy": _stat(0.25), "drop": _stat(0.5, 0.1, 0.9),
            "harmful_flip_rate": _stat(0.5)}
    groups = [{"effect": "harmful", "title": "Harmful", "rows": [
        {"kind": "misleading_hint", "label": "Misleading hint", "cells": [cell, None],
         "by_stage": [[{"drop": _stat(0.5)}, None, None, None], [None] * 4]}]}]
    (group,) = robustness_heatmap(groups)
    (row,) = group["heat_rows"]
    first, missing = row["cells"]
    assert missing is None and row["label"] == "Misleading hint"
    assert (first["accuracy"], first["drop"], first["flips"]) == ("25.0%", "+50.0 pp", "50.0%")
    assert first["title"] == ("accuracy on the perturbed variants 25.0%; drop +50.0 pp (95% interval "
                              "[+10.0, +90.0] pp); harmful flips 50.0%; 1 pair; by stage: S1 +50.0 pp")
    assert (first["background"], first["ink"]) == heat_colours(0.25)


def test_a_model_has_its_palette_colour_and_line_style_in_the_plots():
    stage = {"accuracy": _stat(0.8, 0.7, 0.9), "chance": 0.25}
    series = [{"endpoint": pk, "label": f"model {pk}", "degradation": {
        "chains": 3, "by_kind": {"clean": {str(s): stage for s in (1, 2, 3, 4)}}}} for pk in (2, 4)]
    svg = stage_degradation_svg(series).lower()
    for pk in (2, 4):
        assert model_colour(pk).lower() in svg
    assert "model 2 (3 chains)" in svg
