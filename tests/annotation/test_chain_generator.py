"""Stepwise chain generator: definitions, determinism, clinical sanity, step validation.

Plain pytest (no DB): python -m pytest tests/annotation/test_chain_generator.py -q -p no:django --noconftest
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path
from typing import Literal

import pytest
from pydantic import ValidationError

from annotation.chains import (
    DEFAULT_RULES,
    BoxFact,
    ChainPolicy,
    Draft,
    ImageFacts,
    RuleBase,
    StepSpec,
    category_errors,
    default_category_defs,
    definitions as defs,
    generate_chain,
    parse_category,
    prepare_categories,
    rule_kind,
    unregister_rule_kind,
    validate_step,
)
from annotation.phantoms import generate_phantom
from annotation.phantoms.catalogue import CATALOGUE
from annotation.taxonomy_seed import CATEGORIES

ROOT = Path(__file__).resolve().parents[2]
STAGE_ORDER = {"S1": 1, "S2": 2, "S3": 3, "S4": 4}
CATS = default_category_defs()
BY_CODE = {c.code: c for c in CATS}


def facts_from_ground_truth(gt: dict, image_id: int) -> ImageFacts:
    """Phantom ground truth -> ImageFacts, with fake box ids (image_id * 1000 + n)."""
    boxes, n = [], image_id * 1000
    for organ, box in gt["organs"].items():
        n += 1
        boxes.append(BoxFact(n, n, "anatomy", organ, tuple(float(v) for v in box), {"organ": organ}))
    for les in gt["lesions"]:
        n += 1
        attrs = {k: v for k, v in les.items() if k not in ("box", "label", "center")}
        boxes.append(BoxFact(n, n, "lesion", les["label"], tuple(float(v) for v in les["box"]), attrs))
    return ImageFacts(image_id=image_id, width=gt["width"], height=gt["height"], modality=gt["modality"],
                      body_region=gt["body_region"], plane=gt["plane"], window_center=gt["window_center"],
                      window_width=gt["window_width"], split_group=gt["patient_key"], boxes=tuple(boxes),
                      attributes={k: gt[k] for k in ("image_quality", "contrast_phase") if gt.get(k)})


@cache
def phantom_facts(n: int = 500) -> tuple[ImageFacts, ...]:
    return tuple(facts_from_ground_truth(generate_phantom(i, seed=0).ground_truth(), i + 1) for i in range(n))


def lesion(bid, label, organ, xyxy, **attrs) -> BoxFact:
    base = dict(organ=organ, diameter_mm=20.0, shape="round", margin="well-defined", density="hypodense",
                composition="solid", lesion_class="benign", diagnosis="hemangioma")
    return BoxFact(bid, bid + 500, "lesion", label, xyxy, {**base, **attrs})


def organ(bid, name, xyxy) -> BoxFact:
    return BoxFact(bid, bid + 500, "anatomy", name, xyxy, {"organ": name})


ABDOMEN = (organ(1, "body", (20, 20, 300, 236)), organ(2, "liver", (40, 50, 180, 190)),
           organ(3, "spleen", (210, 120, 270, 190)), organ(4, "right kidney", (80, 150, 125, 195)),
           organ(5, "left kidney", (195, 150, 240, 195)), organ(6, "vertebra", (135, 150, 185, 215)))


def ct_abdomen(*lesions: BoxFact, image_id: int = 7, **kw) -> ImageFacts:
    return ImageFacts(image_id=image_id, width=320, height=256, modality="CT", body_region="ABDOMEN", plane="axial",
                      window_center=40.0, window_width=400.0, boxes=ABDOMEN + tuple(lesions), **kw)


KIDNEY_RCC = lesion(20, "nodule", "left kidney", (205, 165, 228, 186), diameter_mm=25.0, lesion_class="malignant",
                    diagnosis="renal cell carcinoma", composition="mixed", margin="ill-defined", shape="lobulated")
LIVER_CYST = lesion(21, "cyst", "liver", (100, 100, 112, 112), diameter_mm=12.0, diagnosis="simple cyst",
                    composition="cystic")


def only(*codes: str, **kw) -> ChainPolicy:
    return ChainPolicy(include_categories=frozenset(codes), **kw)


def steps_of(code: str, facts: ImageFacts, seeds=range(1)) -> list[StepSpec]:
    return [s for seed in seeds for s in generate_chain(facts, CATS, seed=seed, policy=only(code))]


# --- definitions --------------------------------------------------------------------------------

def test_all_31_default_rules_parse_and_round_trip():
    assert set(DEFAULT_RULES) == {c[0] for c in CATEGORIES} and len(CATS) == 31
    for c in CATS:
        again = parse_category(dataclasses.asdict(c))
        assert again == c, c.code
        assert json.loads(json.dumps(c.rule)) == c.rule       # JSON-ready for TaskCategory.rule


def test_default_vocabularies_cover_the_phantom_catalogue():
    diagnoses = {t.diagnosis for types in CATALOGUE.values() for t in types}
    for (mod, grp), types in CATALOGUE.items():
        assert {t.diagnosis for t in types} <= set(defs.DIAGNOSES[f"{mod}:{grp}"])
    assert diagnoses <= set(defs.NEXT_BY_DIAGNOSIS)
    assert diagnoses <= set(defs.BENIGN) | set(defs.MALIGNANT) | set(defs.NON_NEOPLASTIC)
    assert {t.composition for types in CATALOGUE.values() for t in types} <= \
        set(DEFAULT_RULES["internal-composition"]["pool"])


def good(code: str, **changes) -> dict:
    c = BY_CODE[code]
    return {"code": c.code, "name": c.name, "stage": c.stage, "answer_type": c.answer_type,
            "templates": list(c.templates), "rule": dict(c.rule), **changes}


def test_unknown_rule_kind_is_a_clear_error():
    with pytest.raises(ValidationError) as e:
        parse_category(good("shape", rule={"kind": "telepathy"}))
    assert "telepathy" in str(e.value) and "kind" in str(e.value)


def test_template_with_unknown_placeholder_is_a_clear_error():
    with pytest.raises(ValidationError) as e:
        parse_category(good("shape", templates=["What is the shape of the {finding} in {patient_name}?"]))
    msg = str(e.value)
    assert "{patient_name}" in msg and "lesion_attribute" in msg and "finding" in msg


def test_n_options_below_two_is_a_clear_error():
    with pytest.raises(ValidationError) as e:
        parse_category(good("shape", rule={**BY_CODE["shape"].rule, "n_options": 1}))
    assert "n_options" in str(e.value) and "greater than or equal to 2" in str(e.value)


def test_answer_type_the_rule_cannot_produce_is_refused_and_errors_are_listed():
    errors = category_errors(good("shape", answer_type="box"))
    assert len(errors) == 1 and "answers" in errors[0] and "'box'" in errors[0]
    assert category_errors(good("shape", templates=[])) and category_errors(good("shape")) == []
    assert any(e.startswith("rule.") for e in category_errors(good("margin", rule={"kind": "lesion_attribute"})))


def test_rule_kind_registry_refuses_a_duplicate_name():
    with pytest.raises(ValueError, match="already registered"):
        @rule_kind("lesion_attribute")
        class Again(RuleBase):
            kind: Literal["lesion_attribute"]


def test_a_new_rule_kind_is_usable_in_definitions_and_generation():
    @rule_kind("test_constant")
    class Constant(RuleBase):
        kind: Literal["test_constant"]
        answer: str
        pool: list[str]
        placeholders = frozenset({"thing"})

        def build(self, ctx, rng, n):
            return Draft(self.answer, values={"thing": "image"}, tiers=(self.pool,))
    try:
        cat = parse_category({"code": "const", "name": "Const", "stage": "S1", "answer_type": "single_choice",
                              "templates": ["Which {thing}?"], "rule": {"kind": "test_constant", "answer": "a",
                                                                        "pool": ["b", "c"]}})
        steps = generate_chain(ct_abdomen(), [cat], seed=0)
        assert steps[0].question == "Which image?" and sorted(steps[0].options) == ["a", "b", "c"]
    finally:
        unregister_rule_kind("test_constant")
    with pytest.raises(ValidationError):
        parse_category(dataclasses.asdict(cat))


def test_invalid_category_def_is_refused_by_the_generator():
    bad = dataclasses.replace(BY_CODE["shape"], rule={"kind": "lesion_attribute", "attribute": "shape", "pool": []})
    with pytest.raises(ValidationError):
        generate_chain(ct_abdomen(KIDNEY_RCC), [bad], seed=0)


# --- chains on phantoms -------------------------------------------------------------------------

def test_same_seed_gives_identical_chains():
    for f in phantom_facts()[:100]:
        assert generate_chain(f, CATS, seed=5) == generate_chain(f, CATS, seed=5)
    prepared = prepare_categories(list(CATS))
    f = phantom_facts()[0]
    assert generate_chain(f, prepared, seed=5) == generate_chain(f, CATS, seed=5)


def test_chains_do_not_depend_on_the_hash_seed():
    code = ("import json; from tests.annotation.test_chain_generator import *;"
            "print(json.dumps([dataclasses.asdict(s) for i in range(4) for s in generate_chain("
            "ct_abdomen(KIDNEY_RCC, LIVER_CYST, image_id=i), CATS, seed=i)], default=list))")
    outs = {subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": h}).stdout for h in ("1", "2")}
    assert len(outs) == 1 and "renal cell carcinoma" in outs.pop()


def test_another_seed_changes_option_order_somewhere():
    changed = 0
    for f in phantom_facts()[:100]:
        for code in ("plane-view", "sequence-phase-window", "severity", "benign-vs-malignant"):
            a, b = steps_of(code, f, [1]), steps_of(code, f, [2])
            if a and b:                       # these categories always show their whole option set
                assert sorted(a[0].options) == sorted(b[0].options) and a[0].gold == b[0].gold
                assert a[0].meta["option_seed"] != b[0].meta["option_seed"]
                changed += a[0].options != b[0].options
    assert changed > 50


def test_gold_is_not_always_the_first_option():
    positions = Counter(s.options.index(s.gold) for f in phantom_facts()[:200] for s in generate_chain(f, CATS, seed=0)
                        if s.answer_type == "single_choice")
    assert len(positions) >= 3 and max(positions.values()) < 0.5 * sum(positions.values())


def test_stages_never_go_back_and_steps_are_numbered():
    for f in phantom_facts()[:200]:
        steps = generate_chain(f, CATS, seed=3)
        assert [s.step for s in steps] == list(range(1, len(steps) + 1))
        ranks = [STAGE_ORDER[s.stage] for s in steps]
        assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)   # one step per stage by default


@pytest.mark.parametrize("seed", [0, 1])
def test_every_generated_step_passes_validation(seed):
    problems = [(f.image_id, s.category, validate_step(s, f, BY_CODE[s.category]))
                for f in phantom_facts() for s in generate_chain(f, CATS, seed=seed)]
    assert [p for p in problems if p[2]] == []
    assert len({p[1] for p in problems}) >= 24     # nearly every category shows up


def test_gold_never_duplicated_and_yes_no_options_exact():
    for f in phantom_facts()[:200]:
        for s in generate_chain(f, CATS, seed=1, policy=ChainPolicy(steps_per_stage=8)):
            if s.answer_type in ("single_choice", "multi_choice"):
                golds = s.gold if s.answer_type == "multi_choice" else [s.gold]
                assert all(s.options.count(g) == 1 for g in golds) and len(set(s.options)) == len(s.options)
            if s.answer_type == "yes_no":
                assert s.options == ["yes", "no"] and s.gold in ("yes", "no")


def test_normals_get_s1_and_s2_and_stop():
    normals = [f for f in phantom_facts()[:200] if not any(b.kind == "lesion" for b in f.boxes)]
    assert normals
    for f in normals:
        steps = generate_chain(f, CATS, seed=0, policy=ChainPolicy(steps_per_stage=8))
        assert {s.stage for s in steps} == {"S1", "S2"}
        for s in steps:
            if s.answer_type == "yes_no":
                assert s.gold == "no" or s.category == "box-text-match"
            if s.category == "lesion-count":
                assert s.gold == "0"


def test_s3_s4_steps_are_about_the_largest_lesion():
    for f in phantom_facts()[:200]:
        lesions = [b for b in f.boxes if b.kind == "lesion"]
        if not lesions:
            continue
        index = max(lesions, key=lambda b: (b.attributes["diameter_mm"], -b.id))
        for s in generate_chain(f, CATS, seed=2, policy=ChainPolicy(steps_per_stage=8)):
            assert s.meta["focus_box_id"] == index.id
            if s.stage in ("S3", "S4") and s.category != "distribution":
                assert s.evidence_box_ids == (index.id,)
            if s.category == "diagnosis":
                assert s.gold == index.attributes["diagnosis"]


def test_streaming_500_phantoms_mean_steps_per_image():
    facts = phantom_facts(500)
    counts = [len(generate_chain(f, CATS, seed=0)) for f in facts]
    normal = sum(not any(b.kind == "lesion" for b in f.boxes) for f in facts) / len(facts)
    mean = sum(counts) / len(counts)
    print(f"\n500 phantoms: {mean:.2f} steps/image ({normal:.0%} normal images)")
    assert 2.6 <= mean <= 3.6


# --- hand-checked examples ----------------------------------------------------------------------

def test_laterality_from_organ_name_and_from_x_centre():
    assert steps_of("laterality-orientation", ct_abdomen(KIDNEY_RCC, LIVER_CYST))[0].gold == "left"
    liver_only = ct_abdomen(LIVER_CYST)                     # x-centre 106 < body midline 160: patient right
    (s,) = steps_of("laterality-orientation", liver_only)
    assert (s.gold, s.question, s.evidence_box_ids) == (
        "right", "On which side of the patient is the largest lesion located?", (21,))   # never names the cyst
    assert sorted(s.options) == ["left", "midline", "right"]
    flipped = dataclasses.replace(BY_CODE["laterality-orientation"],
                                  rule={**BY_CODE["laterality-orientation"].rule, "convention": "neurological"})
    assert generate_chain(liver_only, [flipped], seed=0)[0].gold == "left"
    sagittal = dataclasses.replace(ct_abdomen(KIDNEY_RCC), plane="sagittal")
    assert steps_of("laterality-orientation", sagittal) == []          # a sagittal slice shows no side
    assert steps_of("laterality-orientation", ct_abdomen()) == []      # unpaired organs: knowledge, off by default
    organs_on = dataclasses.replace(BY_CODE["laterality-orientation"],
                                    rule={**BY_CODE["laterality-orientation"].rule, "use_organs": True})
    for seed in range(10):                                             # opt-in: a lateral organ
        (s,) = generate_chain(ct_abdomen(), [organs_on], seed=seed)
        box = next(b for b in ABDOMEN if b.id == s.evidence_box_ids[0])
        assert (s.gold == "right") == ((box.xyxy[0] + box.xyxy[2]) / 2 < 160)
        assert "left" not in s.question and "right" not in s.question


def test_rule_out_gold_is_a_diagnosis_the_lesion_visibly_contradicts():
    hemangioma = lesion(22, "nodule", "liver", (60, 60, 90, 90), diameter_mm=30.5)   # solid, round, well-defined
    liver = set(defs.DIAGNOSES["CT:liver"])
    golds = set()
    for seed in range(12):
        (s,) = steps_of("rule-out-differential", ct_abdomen(hemangioma), [seed])
        assert s.question == "Which of these diagnoses is least likely for the largest lesion?"
        assert set(s.options) <= liver and "hemangioma" in s.options and s.gold != "hemangioma"
        # a cystic, necrotic or calcified hallmark is contradicted by a solid lesion; metastasis (round) is not
        assert s.gold in {"simple cyst", "hepatocellular carcinoma", "abscess", "calcified granuloma"}
        assert "metastasis" in s.options and s.meta["ruled_out"] == s.gold and s.meta["diagnosis"] == "hemangioma"
        golds.add(s.gold)
    assert len(golds) >= 3                               # every contradicted diagnosis is a candidate


def test_diagnosis_distractors_come_from_the_same_organ_and_skip_other_lesions():
    for seed in range(10):
        (s,) = steps_of("diagnosis", ct_abdomen(KIDNEY_RCC, LIVER_CYST), [seed])
        assert s.gold == "renal cell carcinoma" and "simple cyst" not in s.options
        assert {"angiomyolipoma", "renal calculus"} <= set(s.options)     # the rest of CT:kidney first


def test_box_answers_and_finding_in_box():
    f = ct_abdomen(KIDNEY_RCC, LIVER_CYST)
    (s,) = steps_of("lesion-grounding", f)
    assert (s.gold, s.options, s.evidence_box_ids) == ([205.0, 165.0, 228.0, 186.0], [], (20,))
    (s,) = steps_of("anatomy-box", f)
    assert s.question == "Draw a box around the left kidney." and s.gold == [195.0, 150.0, 240.0, 195.0]
    answers = defaultdict(list)
    boxes = {b.id: b for b in f.boxes}
    for s in steps_of("finding-in-box", f, range(40)):
        answers[s.gold].append(s)
        assert s.question.endswith(" The marked box is ({}, {}, {}, {}).".format(*(int(v) for v in s.meta["box"])))
        (bid,) = s.evidence_box_ids
        named = s.question.split("Is there ")[1].split(" inside")[0].split(" ", 1)[1]   # 'a cyst' -> 'cyst'
        marked = boxes[bid].xyxy
        inside = {b.label for b in f.boxes if b.kind == "lesion" and b.xyxy[0] < marked[2]
                  and marked[0] < b.xyxy[2] and b.xyxy[1] < marked[3] and marked[1] < b.xyxy[3]}
        assert (s.gold == "yes") == (named in inside), s.question          # the answer is what the box holds
    assert {s.evidence_box_ids for s in answers["yes"]} <= {(20,), (21,), (2,), (5,)}   # lesions, or the organ
    # boxes (liver, left kidney) that wholly contain one: a large box can be a 'yes' too
    assert any("(205, 165, 228, 186)" in s.question for s in answers["yes"])
    assert answers["no"] and any(s.evidence_box_ids in {(20,), (21,)} for s in answers["no"])   # a lesion box, asked
    # about another finding: the structure word alone never tells the answer


def test_report_statement_false_versions_are_plausible_lesions_of_the_organ():
    f = ct_abdomen(KIDNEY_RCC)
    steps = steps_of("report-verification", f, range(40))
    true = [s for s in steps if s.gold == "yes"]
    false = [s for s in steps if s.gold == "no"]
    assert 10 <= len(false) <= 30 and true
    assert true[0].meta["statement"] == "An ill-defined lobulated hypodense nodule in the left kidney"
    kidney = defs.PROFILES["CT:kidney"]
    for s in false:
        assert s.meta["statement_true"] is False and s.meta["swapped"]
        assert all(ch["to"] != ch["from"] for ch in s.meta["swapped"].values())
        words = s.meta["statement"].lower()
        assert words.endswith("in the left kidney") and s.meta["statement"] in s.question
        assert any(any(lb in words for lb in p["labels"]) and any(sh in words for sh in p["shapes"])
                   and any(m in words for m in p["margins"]) for p in kidney)   # a lesion that occurs there


def test_supporting_finding_and_next_step_and_benign_malignant():
    f = ct_abdomen(KIDNEY_RCC)
    (s,) = steps_of("supporting-finding", f)
    assert s.question == "Which finding in this image best supports the most likely diagnosis of the largest lesion?"
    assert s.gold == "heterogeneous content with necrosis"
    assert "ill-defined margin" not in s.options and "lobulated contour" not in s.options   # true of it: no distractor
    assert "macroscopic fat" not in s.options                   # angiomyolipoma's hallmark is 'mixed' too: shown
    assert {"fluid-filled (cystic) content", "calcified content"} & set(s.options)   # other kidney hallmarks first
    assert steps_of("next-step", f)[0].gold == "surgical / oncology referral"
    (s,) = steps_of("benign-vs-malignant", f)
    assert s.gold == "malignant" and sorted(s.options) == ["benign", "malignant"]
    bleed = lesion(23, "hemorrhage", "brain", (100, 100, 130, 130), diagnosis="intraparenchymal hemorrhage")
    assert steps_of("benign-vs-malignant", ct_abdomen(bleed)) == []         # non-neoplastic: not applicable


def test_articles_and_plurals_in_questions():
    abscess = lesion(24, "abscess", "liver", (60, 60, 100, 100), diameter_mm=40.0, diagnosis="abscess")
    asked = {s.question for s in steps_of("finding-presence", ct_abdomen(abscess), range(40))}
    assert "Is there an abscess in the liver?" in asked and "Is there a cyst in the spleen?" in asked
    counted = {s.question for s in steps_of("lesion-count", ct_abdomen(abscess), range(40))}
    assert "How many abscesses are visible in the liver?" in counted


def test_s3_s4_questions_never_name_the_finding():
    for f in phantom_facts()[:150]:
        labels = {b.label for b in f.boxes if b.kind == "lesion"}
        for s in generate_chain(f, CATS, seed=0, policy=ChainPolicy(steps_per_stage=8)):
            if s.stage in ("S3", "S4") and s.category != "report-verification":
                assert not any(f" {lb}" in s.question for lb in labels), s.question


def test_data_dependent_categories_need_their_data():
    bare = [dataclasses.replace(f, attributes={}, boxes=tuple(
        dataclasses.replace(b, attributes={k: v for k, v in b.attributes.items()
                                           if k not in ("enhancement", "severity", "grade")}) for b in f.boxes))
        for f in phantom_facts()[:200]]
    never = {"image-quality", "enhancement-relation", "severity", "grade-stage", "sequence-phase-window"}
    seen = {s.category for f in bare for s in generate_chain(f, CATS, seed=0, policy=ChainPolicy(steps_per_stage=8))}
    assert not never & seen
    graded = lesion(25, "mass", "brain", (100, 100, 140, 140), grade="grade 3", diagnosis="glioblastoma")
    assert steps_of("grade-stage", ct_abdomen(graded))[0].gold == "grade 3"
    assert steps_of("grade-stage", ct_abdomen(lesion(26, "mass", "liver", (9, 9, 30, 30), grade="grade 9"))) == []
    noisy = ct_abdomen(attributes={"image_quality": "excessive image noise"})
    assert steps_of("image-quality", noisy)[0].gold == "excessive image noise"
    mr = dataclasses.replace(ct_abdomen(), modality="MR")
    assert steps_of("sequence-phase-window", mr) == [] and steps_of("modality", mr)[0].gold == "MRI"
    (s,) = steps_of("sequence-phase-window", dataclasses.replace(mr, attributes={"contrast_phase": "T1-weighted"}))
    assert s.gold == "T1-weighted" and sorted(s.options) == ["T1-weighted", "T2-weighted"]   # never a CT phase
    assert steps_of("normal-vs-abnormal", dataclasses.replace(ct_abdomen(), boxes=())) == []   # unannotated
    seen_all = {s.category for f in phantom_facts()[:300]
                for s in generate_chain(f, CATS, seed=0, policy=ChainPolicy(steps_per_stage=8))}
    assert seen_all == set(BY_CODE)                   # the varied phantoms reach all 31 categories


def test_policy_controls_steps_per_stage_and_option_count():
    f = ct_abdomen(KIDNEY_RCC, LIVER_CYST)
    steps = generate_chain(f, CATS, seed=0, policy=ChainPolicy(steps_per_stage=2, n_options=3))
    assert Counter(s.stage for s in steps) == {"S1": 2, "S2": 2, "S3": 2, "S4": 2}
    for s in steps:
        if s.answer_type == "single_choice" and s.category not in ("benign-vs-malignant", "rule-out-differential",
                                                                    "distribution"):   # fixed option sets
            assert len(s.options) <= 3


# --- validate_step: one hand-broken step per violation kind -------------------------------------

FACTS = ct_abdomen(KIDNEY_RCC, LIVER_CYST)


def base_step(code: str) -> StepSpec:
    (s,) = steps_of(code, FACTS)
    assert validate_step(s, FACTS, BY_CODE[code]) == []
    return s


BROKEN = {
    "gold not among options": ("shape", lambda s: dataclasses.replace(s, gold="star-shaped"), "not among the options"),
    "multi gold not subset": ("list-findings", lambda s: dataclasses.replace(s, gold=[*s.gold, "tumour in the skull"]),
                              "not a subset"),
    "options not unique": ("shape", lambda s: dataclasses.replace(s, options=s.options + s.options[:1]), "not unique"),
    "yes_no options": ("finding-presence", lambda s: dataclasses.replace(s, options=["no", "yes"]), "exactly"),
    "box outside image": ("lesion-grounding", lambda s: dataclasses.replace(s, gold=[300.0, 200.0, 330.0, 240.0]),
                          "outside"),
    "box without area": ("lesion-grounding", lambda s: dataclasses.replace(s, gold=[10.0, 10.0, 10.0, 30.0]),
                         "no area"),
    "evidence not on image": ("shape", lambda s: dataclasses.replace(s, evidence_box_ids=(999,)), "not on image"),
    "stage mismatch": ("shape", lambda s: dataclasses.replace(s, stage="S1"), "stage"),
    "answer_type mismatch": ("shape", lambda s: dataclasses.replace(s, answer_type="short_text"), "answer_type"),
    "empty question": ("shape", lambda s: dataclasses.replace(s, question="  "), "empty"),
    "unfilled placeholder": ("shape", lambda s: dataclasses.replace(s, question="What is the shape of the {finding}?"),
                             "{finding}"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_validate_step_detects(kind):
    code, breaker, needle = BROKEN[kind]
    problems = validate_step(breaker(base_step(code)), FACTS, BY_CODE[code])
    assert len(problems) >= 1 and any(needle in p for p in problems), problems


def test_validate_step_detects_evidence_box_outside_the_image():
    bad = ct_abdomen(KIDNEY_RCC, BoxFact(40, 540, "anatomy", "spleen tip", (300, 240, 340, 260)))
    s = dataclasses.replace(base_step("shape"), evidence_box_ids=(40,))
    assert any("evidence box 40" in p and "outside" in p for p in validate_step(s, bad, BY_CODE["shape"]))
