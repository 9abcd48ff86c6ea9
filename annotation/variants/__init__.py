"""Adversarial variants: deterministic generation (`generator`: the registry and the text kinds;
`visual`: the visual kinds), prompt text (`prompt`) and exact, on-demand rendering of visual variants
(`render`). Pure Python; the Django service `annotation/services/variants.py` turns rows into
`ItemFacts` and stores the returned specs.

Kinds (`generator.KINDS`; each skipped silently where it does not apply; expected answers unchanged
unless said otherwise):
- clean: the item as authored (parent_kind None; every other variant has parent_kind "clean").
- misleading_hint / correct_hint (choice, yes/no, multi): "A senior colleague thinks the answer is
  B. x." before the question, naming a seeded wrong option (multi: the gold set with one seeded option
  flipped, never the gold set) or the gold. params: hinted_option, hinted_letter.
- false_premise / true_premise (S3/S4 single choice about an index lesion with an organ; not
  "distribution"; generated for exactly the same items, `premise.py`): the question re-targeted at
  "the {label} in the {organ}" (the item's lesion reference replaced, else "Consider the {label} in
  the {organ}." first). false_premise names a plausible pair absent from the image (drawn with the
  vocabulary's weights - default the phantom catalogue - from organs in the image); true_premise
  names the real index lesion. Options: every item option + one short rejecting option ("not seen",
  "no {label} in the {organ}", ...) at a seeded position, its phrasing chosen so that its length rank
  is uniform. expected: false -> the rejecting option, "rejects_premise": True; true -> the gold,
  "rejects_premise": False. params: label, organ, premise_holds, true_label, true_organ, rewrite,
  rejecting_option, rejecting_letter, length_rank, target_length_rank, rank_fit, phrasing.
- option_permutation (choice types): every non-identity circular rotation, params {"rotation": k}.
- negation (yes/no presence items, gold "yes"): a twin about an absent finding: the lesion's organ
  replaced by a lesion-free organ, else the lesion label by one absent from the image
  (nodule/mass never swapped for each other); expected "no", "absent_finding": True.
- correct_visual_cue: the evidence box (gold box for box items; else the index lesion, else the
  first evidence box) drawn with its true label; "The region of interest is marked with a box."
- wrong_visual_cue: "wrong_region": a same-size box centred on a lesion-free organ box (params
  source "organ", organ), else mirrored / shifted; never touching any evidence or lesion box; drawn
  with the true label. On a single-choice item without a box in its answer whose options name that
  organ (exactly, or "kidney" for "left kidney"; never the gold), params.cue_letter is that option's
  letter, and the box is drawn without a label when the true label is itself an option (it would
  answer the question too). Box and joint answer + box items: the model's box decides adoption.
  "mislabeled": the true box drawn with one of the item's NON-gold options as its label, so the cue
  is a plausible wrong answer to the question asked. Only where the gold states a property of the
  marked box (its label, organ, "{label} in the {organ}" for multi-choice findings, a text attribute
  such as shape / margin / diagnosis, or the size range holding its diameter); options that are
  true of the box all the same (nodule/mass, a size range on its boundary) are never drawn. params:
  label (the option text drawn), cue_letter (its letter as shown), property (what it misstates),
  true_label. No option can be the label (yes/no and box items, counts, next steps, differentials,
  supporting findings, ...): no mislabeled variant.
- box_dose_response: the evidence box shifted by whole pixels to IoU 0.7 / 0.5 / 0.3 (+-0.05, inside
  the image; levels that cannot be hit are skipped); params record target and achieved IoU.
- image_ablation: "blank", "noise" (noise_seed from SHA-256 of seed/item), "swap" (seeded
  swap_image_ids; skipped when there are none).
- premise_injection: a wrong answer to a seeded earlier choice / yes-no step as a context line.

Joint answer + box items (`ItemFacts.answer_with_box`, from the category rule; single choice / yes-no
with a lesion among the evidence): every variant's prompt asks for the letter and the box around the
lesion as (x0, y0, x1, y1) in pixels (`prompt.JOINT_INSTRUCTION`), and its expected answer carries
"answer_with_box": True and "evidence_box": the index lesion's box - kept under visual cues, dose
response and image ablation (the box to find does not move; grounding on a blank image fails); None
for false_premise and negation, where the lesion asked about does not exist.
"""
from annotation.variants import visual  # noqa: F401  (registers the visual kinds in generator's registry)
from annotation.variants.generator import KINDS, box_iou, generate_variants, lesion_free_organs
from annotation.variants.premise import catalogue_vocabulary
from annotation.variants.prompt import INSTRUCTIONS, JOINT_INSTRUCTION, format_prompt, hint_sentence, letters_for
from annotation.variants.render import canonical_json, pixel_box, recipe_hash, render_recipe

__all__ = [
    "INSTRUCTIONS", "JOINT_INSTRUCTION", "KINDS", "box_iou", "canonical_json", "catalogue_vocabulary",
    "format_prompt", "generate_variants",
    "hint_sentence", "lesion_free_organs", "letters_for", "pixel_box", "recipe_hash", "render_recipe",
]
