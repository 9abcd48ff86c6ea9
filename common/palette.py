"""The platform's colours: one gold colour, a colour-blind-safe palette for models, one style per model.

Every page, viewer layer and plot takes its colours from here, so a model has the same colour on
the case page, the run page, the comparison plots and the PDF report. The model palette is
Okabe & Ito's (2008) colour-universal-design set without its yellow, which is reserved for gold:
it stays distinguishable under the three common colour-vision deficiencies. A model's style is
keyed by its endpoint id (stable for the life of the endpoint, unlike a name sorted among the models
of one run); past six models the dash pattern changes, so twelve models still differ on grey.
"""
from __future__ import annotations

from dataclasses import dataclass

#: the reference standard: gold answers and gold boxes, never used for a model
GOLD = "#F0E442"
#: anatomy (non-lesion) gold boxes are drawn dashed in a neutral colour so lesions stand out
ANATOMY = "#FFFFFF"
#: baselines (random, blind, majority, ...) and a fine-tune's base model: neutral grey
NEUTRAL = "#7F7F7F"
#: Okabe-Ito without yellow (reserved for gold) and black (invisible on a dark image)
MODEL_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
#: SVG stroke-dasharray / matplotlib linestyle pairs, one per round through the colours
MODEL_DASHES = (("", "-"), ("6 3", "--"), ("2 2", ":"))


@dataclass(frozen=True)
class ModelStyle:
    colour: str
    dash_svg: str        # stroke-dasharray ("" = solid)
    linestyle: str       # matplotlib linestyle

    def as_dict(self) -> dict:
        return {"colour": self.colour, "dash": self.dash_svg}


def model_style(endpoint_id: int | None) -> ModelStyle:
    """The style of one model, from its endpoint id; `None` (no endpoint) gets the neutral colour."""
    if endpoint_id is None:
        return ModelStyle(NEUTRAL, "", "-")
    i = max(int(endpoint_id) - 1, 0)
    dash_svg, linestyle = MODEL_DASHES[(i // len(MODEL_COLOURS)) % len(MODEL_DASHES)]
    return ModelStyle(MODEL_COLOURS[i % len(MODEL_COLOURS)], dash_svg, linestyle)


def model_colour(endpoint_id: int | None) -> str:
    return model_style(endpoint_id).colour
