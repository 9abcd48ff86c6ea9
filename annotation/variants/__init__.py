"""Adversarial variants: deterministic generation (`generator`), prompt text (`prompt`) and exact,
on-demand rendering of visual variants (`render`). Pure Python; the Django service
`annotation/services/variants.py` turns rows into `ItemFacts` and stores the returned specs.

Kinds (`generator.KINDS`; each skipped silently where it does not apply; expected answers unchanged
unless said otherwise):
- clean: the item as authored (parent_kind None; every other variant has parent_kind "clean").
- misleading_hint / correct_hint (choice, yes/no, multi): "A senior colleague thinks the answer is
  B. x." before the question, naming a seeded wrong option (multi: the gold set with one seeded option
  flipped, never the gold set) or the gold. params: hinted_option, hinted_letter.
- false_premise (S2-S4 single choice with an index lesion; not lesion-count): the question is moved
  to a seeded organ of this image without a lesion (anatomy boxes, else the region's organ pool);
  options = the distractors + "The premise is false: there is no {label} in the {organ}" at a seeded
  position; expected = that option, "rejects_premise": True.
- option_permutation (choice types): every non-identity circular rotation, params {"rotation": k}.
- negation (yes/no presence items, gold "yes"): a twin about an absent finding: the lesion's organ
  replaced by a lesion-free organ, else the lesion label by one absent from the image
  (nodule/mass never swapped for each other); expected "no", "absent_finding": True.
- correct_visual_cue: the evidence box (gold box for box items; else the index lesion, else the
  first evidence box) drawn with its true label; "The region of interest is marked with a box."
- wrong_visual_cue: "wrong_region" (same-size box centred on a lesion-free organ box, else mirrored /
  shifted; never touching any evidence or lesion box) and "mislabeled" (the true box, a wrong label).
- box_dose_response: the evidence box shifted by whole pixels to IoU 0.7 / 0.5 / 0.3 (+-0.05, inside
  the image; levels that cannot be hit are skipped); params record target and achieved IoU.
- image_ablation: "blank", "noise" (noise_seed from SHA-256 of seed/item), "swap" (seeded
  swap_image_ids; skipped when there are none).
- premise_injection: a wrong answer to a seeded earlier choice / yes-no step as a context line.
"""
from annotation.variants.generator import KINDS, box_iou, generate_variants, lesion_free_organs
from annotation.variants.prompt import INSTRUCTIONS, format_prompt, hint_sentence, letters_for
from annotation.variants.render import canonical_json, pixel_box, recipe_hash, render_recipe

__all__ = [
    "INSTRUCTIONS", "KINDS", "box_iou", "canonical_json", "format_prompt", "generate_variants",
    "hint_sentence", "lesion_free_organs", "letters_for", "pixel_box", "recipe_hash", "render_recipe",
]
