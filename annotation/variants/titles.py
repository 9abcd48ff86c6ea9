"""The name and one-line description of every variant kind: the one place pages, filters, plots, exports
and reports take a kind's name from (registered as "variant_kind" in `common.titles` by `AnnotationConfig`;
`workers.results.KIND_LABELS` reads it). Pure: no Django.

A new kind (docs/architecture.md, "Adding things") gets its entry here; `tests/common/test_titles.py`
checks that every kind of `generator.KINDS` has one."""
from __future__ import annotations

from common.titles import Title

KIND_TITLES: dict[str, Title] = {
    "clean": Title("Clean", "The item as authored, without any perturbation."),
    "misleading_hint": Title("Misleading hint", "A senior colleague is said to favour a wrong option."),
    "correct_hint": Title("Correct hint", "A senior colleague is said to favour the right option."),
    "false_premise": Title("False premise", "The question names a lesion that is not in the image."),
    "true_premise": Title("True premise (control)",
                          "The false-premise wording about the lesion that is there: its control."),
    "option_permutation": Title("Option permutation", "The same options in a rotated order."),
    "negation": Title("Negation twin", "The same question about a finding that is absent (answer: no)."),
    "correct_visual_cue": Title("Correct visual cue", "The evidence box drawn on the image with its true label."),
    "wrong_visual_cue": Title("Wrong visual cue", "A box drawn on the wrong region, or with a wrong label."),
    "box_dose_response": Title("Box dose-response", "A box drawn at IoU 0.7, 0.5 or 0.3 with the gold box."),
    "image_ablation": Title("Image ablation", "The image blanked, replaced by noise or swapped for another."),
    "premise_injection": Title("Premise injection", "A wrong answer to an earlier step given as context."),
}


def kind_title(kind: str) -> str:
    """The name of a variant kind; an unknown kind is written with spaces, never as its code."""
    found = KIND_TITLES.get(kind)
    return found.title if found else str(kind).replace("_", " ").capitalize()
