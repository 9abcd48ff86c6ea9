"""Wrong visual cues whose adoption is decidable: the mislabeled cue draws a non-gold option (its letter in
params.cue_letter), and a wrong region on an organ that the options name carries that option's letter
(pure Python: no database).

Plain pytest (no DB): python -m pytest tests/annotation/test_variants_cues.py -q -p no:django --noconftest
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from functools import cache

import pytest

from annotation.chains import default_category_defs, generate_chain
from annotation.chains.types import ItemFacts
from annotation.variants import generate_variants

from .test_chain_generator import phantom_facts
from .test_variant_generator import BODY, LIVER, NODULE, SPLEEN, box_item, image, presence_item, s3_item

CATS = default_category_defs()
N_PHANTOMS = 200
# categories whose gold is not a property of the marked box: no option can be its label
NEVER_MISLABELED = {"lesion-count", "distribution", "next-step", "rule-out-differential", "supporting-finding",
                    "laterality-orientation"}


def mislabeled(specs):
    found = [s for s in specs if s.kind == "wrong_visual_cue" and s.params["cue"] == "mislabeled"]
    assert len(found) <= 1
    return found[0] if found else None


def wrong_region(specs):
    found = [s for s in specs if s.kind == "wrong_visual_cue" and s.params["cue"] == "wrong_region"]
    assert len(found) <= 1
    return found[0] if found else None


def golds(item: ItemFacts) -> list:
    return list(item.gold) if item.answer_type == "multi_choice" else [item.gold]


@cache
def phantom_items(n: int = N_PHANTOMS) -> tuple[ItemFacts, ...]:
    """Every step of the default chains of `n` phantoms as the variant generator sees it (as the
    services build ItemFacts: evidence boxes by id, earlier steps, the category's answer_with_box)."""
    out = []
    for facts in phantom_facts(n):
        by_id = {b.id: b for b in facts.boxes}
        steps = generate_chain(facts, CATS, seed=0)
        for s in steps:
            out.append(ItemFacts(
                item_id=facts.image_id * 100 + s.step, stage=s.stage, category=s.category, answer_type=s.answer_type,
                question=s.question, options=s.options, gold=s.gold, image=facts,
                evidence=tuple(by_id[b] for b in s.evidence_box_ids if b in by_id),
                earlier_steps=tuple(x for x in steps if x.step < s.step),
                answer_with_box=bool(s.meta.get("answer_with_box"))))
    return tuple(out)


@pytest.fixture(scope="module")
def phantom_cues():
    items = phantom_items()
    return items, [generate_variants(it, seed=0, kinds=["wrong_visual_cue"]) for it in items]


# ------------------------------------------------------------------ phantoms
def test_every_mislabeled_cue_on_phantoms_draws_a_non_gold_option_that_its_letter_names(phantom_cues):
    items, all_specs = phantom_cues
    with_cue = Counter()
    for item, specs in zip(items, all_specs):
        spec = mislabeled(specs)
        if spec is None:
            continue
        with_cue[item.category] += 1
        p = spec.params
        label, letter = p["label"], p["cue_letter"]
        assert spec.options == list(item.options)                       # shown as authored
        assert spec.options[ord(letter) - ord("A")] == label            # 100%: the label is the option the letter names
        assert label not in golds(item)                                 # the gold is never the cue
        gold_letters = spec.expected_answer["letter"]
        assert letter not in ([gold_letters] if isinstance(gold_letters, str) else gold_letters)
        draw = spec.image_recipe["draw"][0]
        marked = next((b for b in item.evidence if b.kind == "lesion"), item.evidence[0])
        assert draw["label"] == label and draw["box"] == p["box"] == [int(v) for v in marked.xyxy]  # the true box
        assert item.answer_type in ("single_choice", "multi_choice") and p["property"]
        assert item.category not in NEVER_MISLABELED
    n = sum(with_cue.values())
    print(f"\n{N_PHANTOMS} phantoms: {n} of {len(items)} items have a mislabeled cue",
          dict(sorted(with_cue.items())))
    assert n >= 150                                                     # 194 of 632 when written
    # where the gold states a property of the marked finding, the cue is there every time
    for category in ("organ-identification", "lesion-location", "shape", "margin", "diagnosis", "size",
                     "benign-vs-malignant", "list-findings"):
        assert with_cue[category] == sum(it.category == category for it in items) > 0, category


def test_no_mislabeled_cue_where_no_option_can_be_the_label(phantom_cues):
    items, all_specs = phantom_cues
    for item, specs in zip(items, all_specs):
        if item.answer_type in ("yes_no", "box", "short_text") or item.category in NEVER_MISLABELED:
            assert mislabeled(specs) is None, item.category


def test_wrong_region_cue_letters_on_phantoms_name_the_organ_under_the_box(phantom_cues):
    items, all_specs = phantom_cues
    lettered = 0
    for item, specs in zip(items, all_specs):
        spec = wrong_region(specs)
        if spec is None or "cue_letter" not in spec.params:
            continue
        lettered += 1
        p = spec.params
        named = spec.options[ord(p["cue_letter"]) - ord("A")]
        assert p["source"] == "organ" and named in (p["organ"], p["organ"].split(" ", 1)[-1])
        assert named != item.gold
        assert item.answer_type == "single_choice" and not item.answer_with_box
    assert lettered >= 3                                                # 7 of 632 when written (lesion location)


def test_phantom_cues_are_deterministic(phantom_cues):
    items, all_specs = phantom_cues
    for item, specs in list(zip(items, all_specs))[:120]:
        assert generate_variants(item, seed=0, kinds=["wrong_visual_cue"]) == specs


# ------------------------------------------------------------------ hand-made items
def test_mislabeled_cue_on_an_attribute_question_draws_a_rival_value():
    seen = set()
    for seed in range(30):
        spec = mislabeled(generate_variants(s3_item(), seed=seed))
        p = spec.params
        assert p["property"] == "shape" and p["label"] in ("oval", "lobulated", "irregular")
        assert spec.options[ord(p["cue_letter"]) - 65] == p["label"] and p["true_label"] == "nodule"
        assert spec.image_recipe["draw"][0]["box"] == [60, 50, 90, 80]
        assert spec.expected_answer == {"value": "round", "letter": "B"}
        seen.add(p["label"])
    assert seen == {"oval", "lobulated", "irregular"}                   # seeded over every rival


def test_mislabeled_cue_on_organ_identification_names_another_organ_option():
    item = s3_item(stage="S1", category="organ-identification", question="Which organ is marked?",
                   options=["kidney", "liver", "stomach", "brain"], gold="liver", evidence=(LIVER,))
    spec = mislabeled(generate_variants(item, seed=0))
    assert spec.params["property"] == "organ" and spec.params["label"] in ("kidney", "stomach", "brain")
    assert spec.image_recipe["draw"][0]["box"] == [20, 30, 120, 130]


def test_no_mislabeled_cue_on_yes_no_box_or_unrelated_questions():
    assert mislabeled(generate_variants(presence_item(), seed=0)) is None
    assert mislabeled(generate_variants(box_item(), seed=0)) is None
    next_step = s3_item(stage="S4", category="next-step", question="What is the next step for the nodule?",
                        options=["biopsy", "follow-up imaging", "no further work-up"], gold="follow-up imaging")
    assert mislabeled(generate_variants(next_step, seed=0)) is None
    # least likely diagnosis: the other options include the true one, so no option is a wrong label
    nodule = dataclasses.replace(NODULE, attributes={**NODULE.attributes, "diagnosis": "hemangioma"})
    rule_out = s3_item(stage="S4", category="rule-out-differential", evidence=(nodule,),
                       question="Which of these diagnoses is least likely for the nodule?",
                       options=["hemangioma", "metastasis", "glioblastoma"], gold="glioblastoma")
    assert mislabeled(generate_variants(rule_out, seed=0)) is None


def test_options_true_of_the_box_are_never_drawn():
    # a 20 mm lesion: "20-30 mm" is as true as the gold "10-20 mm"; the only rival left is "> 50 mm"
    nodule = dataclasses.replace(NODULE, attributes={**NODULE.attributes, "diameter_mm": 20.0})
    size = s3_item(category="size", question="What is the approximate largest diameter of the nodule?",
                   options=["10–20 mm", "20–30 mm", "> 50 mm"], gold="10–20 mm", evidence=(nodule,))
    for seed in range(10):
        p = mislabeled(generate_variants(size, seed=seed)).params
        assert (p["label"], p["cue_letter"], p["property"]) == ("> 50 mm", "C", "diameter_mm")
    # nodule and mass are one finding by size: "mass in the liver" is no wrong label for a nodule there
    findings = s3_item(stage="S2", category="list-findings", answer_type="multi_choice",
                       question="Select every finding present in this image.",
                       options=["nodule in the liver", "mass in the liver", "cyst in the spleen"],
                       gold=["nodule in the liver"])
    for seed in range(10):
        p = mislabeled(generate_variants(findings, seed=seed)).params
        assert (p["label"], p["cue_letter"], p["property"]) == ("cyst in the spleen", "C", "finding")
    only_true = s3_item(category="size", question="What is the approximate largest diameter of the nodule?",
                        options=["10–20 mm", "20–30 mm"], gold="10–20 mm", evidence=(nodule,))
    assert mislabeled(generate_variants(only_true, seed=0)) is None


def location_item(**kw) -> ItemFacts:
    base = dict(item_id=500, stage="S2", category="lesion-location", question="Where is the nodule located?",
                options=["liver", "spleen", "kidney", "pancreas"], gold="liver", evidence=(NODULE,))
    base.update(kw)
    return s3_item(**base)


def test_wrong_region_on_a_location_question_names_the_organ_it_lies_on():
    for seed in range(5):
        specs = generate_variants(location_item(), seed=seed)
        region = wrong_region(specs)
        assert region.params["source"] == "organ" and region.params["organ"] == "spleen"
        assert region.params["cue_letter"] == "B" and region.image_recipe["draw"][0]["label"] == "nodule"
        label = mislabeled(specs).params
        assert label["property"] == "organ" and label["label"] in ("spleen", "kidney", "pancreas")
    # the organ under the box is no option, or the item's answer also asks for a box: no letter
    assert "cue_letter" not in wrong_region(generate_variants(
        location_item(options=["liver", "kidney", "pancreas"]), seed=0)).params
    assert "cue_letter" not in wrong_region(generate_variants(s3_item(), seed=0)).params
    joint = location_item(answer_with_box=True)
    assert "cue_letter" not in wrong_region(generate_variants(joint, seed=0)).params


def test_wrong_region_whose_true_label_is_an_option_is_drawn_without_it():
    """Organ identification: the marked liver's box moved onto the spleen; labelled "liver" it would
    name the gold as well as point at the spleen, so it carries no label."""
    big = image(boxes=(LIVER, SPLEEN, BODY))
    item = s3_item(stage="S1", category="organ-identification", question="Which organ is marked?", image=big,
                   options=["liver", "spleen", "kidney", "stomach"], gold="liver", evidence=(LIVER,))
    region = wrong_region(generate_variants(item, seed=0))
    assert region.params["organ"] == "spleen" and region.params["cue_letter"] == "B"
    assert region.params["label"] is None and region.image_recipe["draw"][0]["label"] is None
