"""Adversarial variant generation and exact rendering (pure Python: no database)."""
from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np
import pytest
from PIL import Image

from annotation.chains.types import BoxFact, ImageFacts, ItemFacts, StepSpec
from annotation.variants import (
    KINDS,
    box_iou,
    format_prompt,
    generate_variants,
    letters_for,
    recipe_hash,
    render_recipe,
)
from annotation.variants.render import drawable, label_rect, pixel_box
from annotation.variants.visual import dose_box

RED = (255, 0, 0)
NODULE = BoxFact(id=11, finding_id=1, kind="lesion", label="nodule", xyxy=(60.0, 50.0, 90.0, 80.0),
                 attributes={"organ": "liver", "diameter_mm": 22, "shape": "round"})
LIVER = BoxFact(id=21, finding_id=2, kind="anatomy", label="liver", xyxy=(20.0, 30.0, 120.0, 130.0),
                attributes={"organ": "liver"})
SPLEEN = BoxFact(id=22, finding_id=3, kind="anatomy", label="spleen", xyxy=(160.0, 40.0, 220.0, 120.0),
                 attributes={"organ": "spleen"})
BODY = BoxFact(id=23, finding_id=4, kind="anatomy", label="body", xyxy=(0.0, 0.0, 256.0, 256.0),
               attributes={"organ": "body"})
EARLIER = (
    StepSpec(step=1, stage="S1", category="modality", answer_type="single_choice",
             question="What imaging modality was used to acquire this image?",
             options=["MRI", "CT", "Ultrasound", "X-ray"], gold="CT"),
    StepSpec(step=2, stage="S2", category="finding-presence", answer_type="yes_no",
             question="Is there a nodule in the liver?", options=["yes", "no"], gold="yes"),
    StepSpec(step=3, stage="S2", category="lesion-grounding", answer_type="box",
             question="Draw a box around the nodule.", options=[], gold=[60.0, 50.0, 90.0, 80.0]),
)


def image(boxes=(NODULE, LIVER, SPLEEN, BODY), **kw) -> ImageFacts:
    return ImageFacts(image_id=7, width=256, height=256, modality="CT", body_region="ABDOMEN",
                      boxes=tuple(boxes), **kw)


def s3_item(**kw) -> ItemFacts:
    base = dict(item_id=100, stage="S3", category="shape", answer_type="single_choice",
                question="What is the shape of the nodule?", options=["oval", "round", "lobulated", "irregular"],
                gold="round", image=image(), evidence=(NODULE,), earlier_steps=EARLIER, swap_image_ids=(8, 9, 10))
    base.update(kw)
    return ItemFacts(**base)


def presence_item(**kw) -> ItemFacts:
    base = dict(item_id=200, stage="S2", category="finding-presence", answer_type="yes_no",
                question="Is there a nodule in the liver?", options=["yes", "no"], gold="yes",
                image=image(), evidence=(NODULE,))
    base.update(kw)
    return ItemFacts(**base)


def box_item(**kw) -> ItemFacts:
    base = dict(item_id=300, stage="S2", category="lesion-grounding", answer_type="box",
                question="Draw a box around the nodule.", options=[], gold=[60.0, 50.0, 90.0, 80.0],
                image=image(), evidence=(NODULE,))
    base.update(kw)
    return ItemFacts(**base)


def of_kind(specs, kind):
    return [s for s in specs if s.kind == kind]


def one(specs, kind):
    found = of_kind(specs, kind)
    assert len(found) == 1, (kind, found)
    return found[0]


def blank_loader(size=(256, 256)):
    calls = []

    def load(image_id):
        calls.append(image_id)
        return Image.new("L", size, 40 + image_id)
    load.calls = calls
    return load


# ------------------------------------------------------------------ prompt
def test_prompt_letters_options_and_instruction_per_answer_type():
    text = format_prompt("Q?", ["a", "b"], answer_type="single_choice", preamble="Hint.", context_lines=["Ctx."])
    assert text == "Ctx.\nHint.\nQ?\nA. a\nB. b\nAnswer with the letter of the correct option."
    assert format_prompt("Yes?", ["yes", "no"], answer_type="yes_no").splitlines()[1:3] == ["A. yes", "B. no"]
    assert format_prompt("Box?", [], answer_type="box", image_size=(512, 400)).endswith(
        "pixel coordinates of the image (512x400).")
    assert "separated by commas" in format_prompt("M?", ["x", "y", "z"], answer_type="multi_choice")
    assert letters_for(["x", "y", "z"], ["z", "x"], "multi_choice") == ["A", "C"]
    assert letters_for(["yes", "no"], "no", "yes_no") == "B"
    assert letters_for([], [1, 2, 3, 4], "box") is None
    with pytest.raises(ValueError):
        letters_for(["x", "y"], "w", "single_choice")


# ------------------------------------------------------------------ determinism and structure
def test_same_seed_gives_identical_specs_and_clean_comes_first():
    a, b = generate_variants(s3_item(), seed=5), generate_variants(s3_item(), seed=5)
    assert a == b
    assert a[0].kind == "clean" and a[0].parent_kind is None and a[0].image_recipe is None
    assert all(s.parent_kind == "clean" for s in a[1:])
    assert a[0].expected_answer == {"value": "round", "letter": "B"}
    order = [KINDS.index(s.kind) for s in a]
    assert order == sorted(order)


def test_different_seeds_change_seeded_choices():
    hints = {one(generate_variants(s3_item(), seed=s), "misleading_hint").params["hinted_option"] for s in range(20)}
    assert len(hints) > 1
    noise = {next(v for v in generate_variants(s3_item(), seed=s, kinds=["image_ablation"])
                  if v.params.get("ablation") == "noise").params["noise_seed"] for s in range(5)}
    assert len(noise) == 5


def test_typical_s3_item_yields_eighteen_variants():
    specs = generate_variants(s3_item(), seed=0)
    assert Counter(s.kind for s in specs) == {
        "clean": 1, "misleading_hint": 1, "correct_hint": 1, "false_premise": 1, "true_premise": 1,
        "option_permutation": 3, "correct_visual_cue": 1, "wrong_visual_cue": 2, "box_dose_response": 3,
        "image_ablation": 3, "premise_injection": 1,
    }
    assert len(specs) == 18
    assert len({(s.kind, s.prompt, tuple(s.options), recipe_hash(s.image_recipe)) for s in specs}) == 18
    for s in specs:   # everything a Variant row stores survives a JSON round trip unchanged
        stored = [s.params, s.options, s.expected_answer, s.image_recipe]
        assert json.loads(json.dumps(stored)) == stored     # no tuples or other non-JSON values


def test_kinds_filter_keeps_clean_and_refuses_unknown_kinds():
    specs = generate_variants(s3_item(), seed=0, kinds=["correct_hint"])
    assert [s.kind for s in specs] == ["clean", "correct_hint"]
    with pytest.raises(ValueError):
        generate_variants(s3_item(), seed=0, kinds=["sarcasm"])


# ------------------------------------------------------------------ text kinds
def test_misleading_hint_never_names_gold_and_correct_hint_does():
    for seed in range(30):
        specs = generate_variants(s3_item(), seed=seed, kinds=["misleading_hint", "correct_hint"])
        bad, good = one(specs, "misleading_hint"), one(specs, "correct_hint")
        assert bad.params["hinted_option"] != "round" and bad.params["hinted_letter"] != "B"
        letter = bad.params["hinted_letter"]
        assert bad.options[ord(letter) - 65] == bad.params["hinted_option"]
        hinted = bad.params["hinted_option"]
        assert bad.prompt.startswith(f"A senior colleague thinks the answer is {letter}. {hinted}.")
        assert bad.expected_answer == {"value": "round", "letter": "B"}
        assert good.params == {"hinted_option": "round", "hinted_letter": "B"}
        assert good.prompt.startswith("A senior colleague thinks the answer is B. round.\n")


def test_multi_choice_misleading_hint_is_never_the_gold_set():
    item = s3_item(category="list-findings", stage="S2", answer_type="multi_choice",
                   question="Select every finding present in this image.",
                   options=["nodule", "cyst", "calcification"], gold=["nodule", "calcification"])
    for seed in range(10):
        spec = one(generate_variants(item, seed=seed), "misleading_hint")
        assert spec.params["hinted_option"] and spec.params["hinted_option"] != ["nodule", "calcification"]
        assert spec.expected_answer == {"value": ["nodule", "calcification"], "letter": ["A", "C"]}


def test_false_premise_names_an_absent_lesion_and_keeps_every_option():
    # (was: the finding moved to a lesion-free organ, the gold removed and a long rejecting option
    # added; now the premise is a plausible absent (label, organ), every option stays, and a short
    # rejecting option is added; more in test_variants_premise.py)
    for seed in range(20):
        spec = one(generate_variants(s3_item(), seed=seed), "false_premise")
        p = spec.params
        assert (p["label"], p["organ"]) in {("cyst", "liver"), ("abscess", "liver"), ("calcification", "liver"),
                                            ("cyst", "spleen"), ("infarct", "spleen"), ("nodule", "spleen"),
                                            ("mass", "spleen")}
        assert f"What is the shape of the {p['label']} in the {p['organ']}?" in spec.prompt
        reject = p["rejecting_option"]
        assert sorted(spec.options) == sorted(["oval", "round", "lobulated", "irregular", reject])
        assert spec.expected_answer == {"value": reject, "letter": "ABCDE"[spec.options.index(reject)],
                                        "rejects_premise": True}
        assert p["rejecting_letter"] == spec.expected_answer["letter"]
        true = one(generate_variants(s3_item(), seed=seed), "true_premise")
        assert "What is the shape of the nodule in the liver?" in true.prompt
        assert true.expected_answer == {"value": "round", "letter": "ABCDE"[true.options.index("round")],
                                        "rejects_premise": False}


def test_false_premise_replaces_the_organ_named_in_the_question_and_never_names_a_present_lesion():
    item = s3_item(category="density-intensity",
                   question="What is the density of the nodule relative to the surrounding liver?")
    for seed in range(10):
        spec = one(generate_variants(item, seed=seed), "false_premise")
        assert f"relative to the surrounding {spec.params['organ']}?" in spec.prompt
    diseased_spleen = BoxFact(id=12, finding_id=5, kind="lesion", label="cyst", xyxy=(170.0, 60.0, 190.0, 80.0),
                              attributes={"organ": "spleen"})
    crowded = s3_item(image=image(boxes=(NODULE, diseased_spleen, LIVER, SPLEEN, BODY)))
    for seed in range(30):
        p = one(generate_variants(crowded, seed=seed), "false_premise").params
        assert (p["label"], p["organ"]) not in {("cyst", "spleen"), ("nodule", "liver"), ("mass", "liver")}
        assert p["organ"] in ("liver", "spleen")            # the only lesion-carrying organs in the image
    assert of_kind(generate_variants(s3_item(stage="S1", category="modality"), seed=0), "false_premise") == []
    assert of_kind(generate_variants(s3_item(stage="S1", category="modality"), seed=0), "true_premise") == []


def test_option_permutation_has_every_rotation_and_the_letter_follows_gold():
    specs = of_kind(generate_variants(s3_item(), seed=0), "option_permutation")
    assert sorted(s.params["rotation"] for s in specs) == [1, 2, 3]
    expected = {1: ["round", "lobulated", "irregular", "oval"], 2: ["lobulated", "irregular", "oval", "round"],
                3: ["irregular", "oval", "round", "lobulated"]}
    for s in specs:
        assert s.options == expected[s.params["rotation"]]
        assert s.expected_answer == {"value": "round", "letter": "ABCD"[s.options.index("round")]}
    assert [s.expected_answer["letter"] for s in specs] == ["A", "D", "C"]
    yn = one(generate_variants(presence_item(), seed=0), "option_permutation")
    assert yn.options == ["no", "yes"] and yn.expected_answer["letter"] == "B"


def test_negation_twin_asks_about_an_absent_finding_and_expects_no():
    spec = one(generate_variants(presence_item(), seed=0), "negation")
    assert spec.params == {"swap": "organ", "from": "liver", "to": "spleen", "finding_box_id": 11}
    assert "Is there a nodule in the spleen?" in spec.prompt
    assert spec.expected_answer == {"value": "no", "letter": "B", "absent_finding": True}
    in_box = presence_item(category="finding-in-box", question="Is there a nodule inside the marked box?")
    twin = one(generate_variants(in_box, seed=1), "negation")
    assert twin.params["swap"] == "label" and twin.params["to"] not in ("nodule", "mass")
    assert f"Is there {'an' if twin.params['to'][0] in 'aeiou' else 'a'} {twin.params['to']} inside" in twin.prompt
    assert twin.expected_answer["value"] == "no"
    assert of_kind(generate_variants(presence_item(gold="no"), seed=0), "negation") == []


def test_premise_injection_gives_a_wrong_earlier_answer_as_context():
    for seed in range(10):
        spec = one(generate_variants(s3_item(), seed=seed), "premise_injection")
        p = spec.params
        step = EARLIER[p["injected_step"] - 1]
        assert step.answer_type in ("single_choice", "yes_no")
        assert p["injected_answer"] in step.options and p["injected_answer"] != step.gold == p["true_answer"]
        assert spec.prompt.startswith(
            f'Earlier in this case, the answer to "{step.question}" was: {p["injected_answer"]}.')
        assert spec.expected_answer == {"value": "round", "letter": "B"}
    assert of_kind(generate_variants(s3_item(earlier_steps=()), seed=0), "premise_injection") == []


# ------------------------------------------------------------------ visual kinds
def test_visual_cues_mark_the_evidence_and_wrong_region_does_not_overlap_it():
    specs = generate_variants(s3_item(), seed=0)
    cue = one(specs, "correct_visual_cue")
    assert cue.image_recipe["base"] == {"image_id": 7}
    assert cue.image_recipe["draw"][0]["box"] == [60, 50, 90, 80] and cue.image_recipe["draw"][0]["label"] == "nodule"
    assert cue.prompt.startswith("The region of interest is marked with a box.")
    wrong = {s.params["cue"]: s for s in of_kind(specs, "wrong_visual_cue")}
    region = wrong["wrong_region"].image_recipe["draw"][0]["box"]
    assert box_iou(region, NODULE.xyxy) == 0 and wrong["wrong_region"].params["organ"] == "spleen"
    assert (region[2] - region[0], region[3] - region[1]) == (30, 30)
    mislabeled = wrong["mislabeled"].image_recipe["draw"][0]
    assert mislabeled["box"] == [60, 50, 90, 80] and mislabeled["label"] in ("oval", "lobulated", "irregular")
    letter = wrong["mislabeled"].params["cue_letter"]            # a non-gold option of the shape question
    assert wrong["mislabeled"].options[ord(letter) - 65] == mislabeled["label"] == wrong["mislabeled"].params["label"]
    assert "cue_letter" not in wrong["wrong_region"].params      # the options name no organ
    assert all(s.expected_answer == {"value": "round", "letter": "B"} for s in of_kind(specs, "wrong_visual_cue"))


def test_wrong_region_falls_back_to_a_shifted_box_without_anatomy():
    item = s3_item(image=image(boxes=(NODULE,)))
    for seed in range(10):
        spec = next(s for s in generate_variants(item, seed=seed) if s.params.get("cue") == "wrong_region")
        b = spec.image_recipe["draw"][0]["box"]
        assert box_iou(b, NODULE.xyxy) == 0 and 0 <= b[0] and 0 <= b[1] and b[2] <= 256 and b[3] <= 256
        assert spec.params["source"] != "organ"


def test_box_dose_response_hits_each_target_iou_inside_the_image():
    for seed in range(10):
        specs = of_kind(generate_variants(s3_item(), seed=seed), "box_dose_response")
        assert [s.params["target_iou"] for s in specs] == [0.7, 0.5, 0.3]
        for s in specs:
            b = s.image_recipe["draw"][0]["box"]
            achieved = box_iou(b, NODULE.xyxy)
            assert abs(achieved - s.params["target_iou"]) <= 0.05
            assert abs(achieved - s.params["achieved_iou"]) < 1e-4
            assert 0 <= b[0] and 0 <= b[1] and b[2] <= 256 and b[3] <= 256
            assert (b[2] - b[0], b[3] - b[1]) == (30, 30) and all(float(v).is_integer() for v in b)


def test_box_dose_response_skips_levels_it_cannot_reach():
    tiny = BoxFact(id=13, finding_id=6, kind="lesion", label="calcification", xyxy=(100.0, 100.0, 103.0, 103.0),
                   attributes={"organ": "liver"})
    rng_free = random.Random(0)
    assert dose_box([100.0, 100.0, 103.0, 103.0], 0.7, rng_free, 256, 256) is None   # 3 px: IoU 0.5 or 1.0
    specs = of_kind(generate_variants(s3_item(evidence=(tiny,)), seed=0), "box_dose_response")
    assert [s.params["target_iou"] for s in specs] == [0.5]
    edge = BoxFact(id=14, finding_id=7, kind="lesion", label="nodule", xyxy=(0.0, 0.0, 256.0, 256.0))
    assert of_kind(generate_variants(s3_item(evidence=(edge,)), seed=0), "box_dose_response") == []


def test_box_items_get_cues_on_the_gold_box_but_no_hints_or_permutations():
    specs = generate_variants(box_item(), seed=0)
    kinds = Counter(s.kind for s in specs)
    assert [s.params["cue"] for s in of_kind(specs, "wrong_visual_cue")] == ["wrong_region"]   # no option to mislabel
    assert not {"misleading_hint", "correct_hint", "option_permutation", "false_premise", "true_premise",
                "negation"} & set(kinds)
    assert specs[0].expected_answer == {"value": [60.0, 50.0, 90.0, 80.0], "letter": None}
    assert specs[0].prompt.endswith("pixel coordinates of the image (256x256).")
    assert one(specs, "correct_visual_cue").image_recipe["draw"][0]["box"] == [60, 50, 90, 80]


def test_image_ablation_blank_noise_and_swap():
    specs = {s.params["ablation"]: s for s in of_kind(generate_variants(s3_item(), seed=0), "image_ablation")}
    assert specs["blank"].image_recipe == {"base": {"blank": [256, 256]}, "draw": []}
    noise = specs["noise"]
    assert noise.image_recipe["base"] == {"noise": [256, 256], "seed": noise.params["noise_seed"], "sigma": 40}
    assert specs["swap"].params["swap_image_id"] in (8, 9, 10)
    assert all(s.expected_answer == {"value": "round", "letter": "B"} for s in specs.values())
    no_swap = of_kind(generate_variants(s3_item(swap_image_ids=()), seed=0), "image_ablation")
    assert [s.params["ablation"] for s in no_swap] == ["blank", "noise"]


# ------------------------------------------------------------------ rendering
def red_mask(img):
    a = np.asarray(img)
    return (a[..., 0] == 255) & (a[..., 1] == 0) & (a[..., 2] == 0)


def test_render_outline_is_exact_with_exclusive_corners():
    img = render_recipe({"base": {"blank": [50, 40]},
                         "draw": [{"box": [10, 5, 20, 15], "color": [255, 0, 0], "width": 1, "label": None}]},
                        load_image=blank_loader())
    assert img.mode == "RGB" and img.size == (50, 40)
    m = red_mask(img)
    expected = np.zeros((40, 50), bool)
    expected[5, 10:20] = expected[14, 10:20] = True
    expected[5:15, 10] = expected[5:15, 19] = True
    assert (m == expected).all()
    for xy in [(10, 5), (19, 5), (10, 14), (19, 14), (15, 5), (10, 10)]:
        assert img.getpixel(xy) == RED
    for xy in [(9, 5), (20, 5), (10, 4), (10, 15), (15, 10)]:
        assert img.getpixel(xy) != RED


def test_render_width_two_stays_inside_and_fractional_boxes_round_outward():
    img = render_recipe({"base": {"blank": [50, 40]},
                         "draw": [{"box": [10, 5, 20, 15], "color": [255, 0, 0], "width": 2, "label": None}]},
                        load_image=blank_loader())
    m = red_mask(img)
    assert m[5:15, 10:20].sum() == m.sum() == 10 * 10 - 6 * 6
    assert not m[7:13, 12:18].any()
    assert pixel_box([10.2, 5.9, 19.1, 14.0]) == (10, 5, 20, 14)

    def outline(box):
        recipe = {"base": {"blank": [50, 40]}, "draw": [{"box": box, "color": [255, 0, 0], "width": 1, "label": None}]}
        return red_mask(render_recipe(recipe, load_image=blank_loader()))
    assert (outline([10.2, 5.9, 19.1, 14.5]) == outline([10, 5, 20, 15])).all()


def test_label_sits_above_the_box_and_never_inside_when_there_is_room():
    box = (20, 30, 60, 70)
    left, top, right, bottom = label_rect("nodule", box, (100, 100))
    assert bottom == 30 and left == 20 and top >= 0
    plain = render_recipe({"base": {"blank": [100, 100]},
                           "draw": [{"box": list(box), "color": [255, 0, 0], "width": 2, "label": None}]},
                          load_image=blank_loader())
    labelled = render_recipe({"base": {"blank": [100, 100]}, "draw": [{"box": list(box), "color": [255, 0, 0],
                                                                      "width": 2, "label": "nodule"}]},
                             load_image=blank_loader())
    a, b = np.asarray(plain), np.asarray(labelled)
    assert (a[30:100] == b[30:100]).all()            # the box and everything below it unchanged
    assert (a[:30] != b[:30]).any()                  # the label was drawn above
    low = label_rect("nodule", (20, 2, 60, 40), (100, 100))
    assert low[1] == 40                              # no room above: just below


def test_labels_outside_latin_1_render_with_the_bitmap_font():
    """Size ranges like "10\u201320 mm" crashed the bitmap font (Latin-1 only); they render as ASCII."""
    assert drawable("10\u201320 mm \u2265 3\u00d7") == "10-20 mm >= 3x" and drawable("\u80ba") == "?"
    box = [20, 30, 60, 70]
    dashed = render_recipe({"base": {"blank": [100, 100]}, "draw": [{"box": box, "color": [255, 0, 0], "width": 2,
                                                                     "label": "10\u201320 mm"}]},
                           load_image=blank_loader())
    ascii_ = render_recipe({"base": {"blank": [100, 100]}, "draw": [{"box": box, "color": [255, 0, 0], "width": 2,
                                                                     "label": "10-20 mm"}]},
                           load_image=blank_loader())
    assert (np.asarray(dashed) == np.asarray(ascii_)).all()


def test_noise_is_deterministic_and_seed_dependent():
    r = {"base": {"noise": [32, 24], "seed": 123, "sigma": 40}, "draw": []}
    a, b = render_recipe(r, load_image=blank_loader()), render_recipe(dict(r), load_image=blank_loader())
    assert a.mode == "RGB" and a.size == (32, 24) and a.tobytes() == b.tobytes()
    c = render_recipe({"base": {"noise": [32, 24], "seed": 124, "sigma": 40}, "draw": []}, load_image=blank_loader())
    assert a.tobytes() != c.tobytes()
    assert 100 < np.asarray(a).mean() < 156


def test_swap_and_cue_recipes_load_the_base_through_load_image():
    load = blank_loader()
    img = render_recipe({"base": {"image_id": 9}, "draw": []}, load_image=load)
    assert load.calls == [9] and img.mode == "RGB" and img.getpixel((0, 0)) == (49, 49, 49)
    for spec in generate_variants(s3_item(), seed=0):
        if spec.image_recipe:
            out = render_recipe(spec.image_recipe, load_image=load)
            assert out.size == (256, 256) and out.mode == "RGB"


def test_recipe_hash_is_stable_across_key_order_and_integral_floats():
    a = {"base": {"image_id": 3}, "draw": [{"box": [1, 2, 3, 4], "color": [255, 0, 0], "width": 2, "label": None}]}
    b = {"draw": [{"label": None, "width": 2, "color": [255, 0, 0], "box": [1.0, 2.0, 3.0, 4.0]}],
         "base": {"image_id": 3}}
    assert recipe_hash(a) == recipe_hash(b) and len(recipe_hash(a)) == 64
    assert recipe_hash(a) != recipe_hash({**a, "base": {"image_id": 4}})
