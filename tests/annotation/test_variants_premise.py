"""False premise and its control (true_premise): pairing, plausibility, question form, expected
answers, and that neither the rejecting option's length nor the text tells the two apart (pure
Python: no database)."""
from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest
from scipy.stats import chisquare

from annotation.chains.types import BoxFact, ImageFacts, ItemFacts
from annotation.phantoms.catalogue import LESION_ORGANS
from annotation.variants import KINDS, generate_variants
from annotation.variants.premise import (
    BLOCKED_ORGAN_WORDS,
    REJECT_PHRASINGS,
    catalogue_vocabulary,
    length_rank,
    premise_question,
)

VOCAB = catalogue_vocabulary()
PREMISE = ("false_premise", "true_premise")

# anatomy of the phantoms per region (lesion organs and the structures that never carry lesions)
ANATOMY = {
    "ABDOMEN": ["body", "liver", "gallbladder", "spleen", "stomach", "right kidney", "left kidney", "aorta",
                "inferior vena cava", "vertebra"],
    "CHEST": ["body", "right lung", "left lung", "heart", "aorta", "sternum", "vertebra"],
    "HEAD": ["head", "skull", "brain", "lateral ventricles"],
}
# option pools of the S3/S4 single-choice categories (as the chain generator words them)
POOLS = {
    "size": ["< 10 mm", "10–20 mm", "20–30 mm", "30–50 mm", "> 50 mm"],
    "shape": ["round", "oval", "lobulated", "irregular"],
    "margin": ["well-defined", "ill-defined", "spiculated"],
    "density-intensity": ["hypodense", "isodense", "hyperdense"],
    "internal-composition": ["solid", "cystic", "mixed", "calcified", "fat-containing"],
    "severity": ["mild", "moderate", "severe"],
    "benign-vs-malignant": ["benign", "malignant"],
    "grade-stage": ["grade 1", "grade 2", "grade 3", "grade 4"],
    "next-step": ["no further work-up", "follow-up imaging", "biopsy", "surgical / oncology referral",
                  "urgent clinical management", "antibiotic treatment", "drainage and antibiotics"],
    "diagnosis": ["simple cyst", "hemangioma", "hepatocellular carcinoma", "metastasis", "abscess",
                  "calcified granuloma"],
    "supporting-finding": ["round shape", "well-defined margin", "fluid-filled (cystic) content",
                           "hypodense to the surrounding tissue", "mixed solid and non-solid content"],
}
QUESTIONS = {
    "size": "What is the approximate largest diameter of the largest lesion?",
    "shape": "What is the shape of the largest lesion?",
    "margin": "How would you describe the margin of the outlined lesion?",
    "density-intensity": "What is the density of the largest lesion relative to the surrounding {organ}?",
    "internal-composition": "What is the internal composition of the largest lesion in this image?",
    "severity": "How severe is the finding?",
    "benign-vs-malignant": "Is the largest lesion more likely benign or malignant?",
    "grade-stage": "What grade or stage best fits the findings?",
    "next-step": "What is the most appropriate next step?",
    "diagnosis": "What is the most likely diagnosis?",
    "supporting-finding": "Which finding best supports the diagnosis of hemangioma?",
}
STAGE = {c: ("S4" if c in ("benign-vs-malignant", "grade-stage", "next-step", "diagnosis", "supporting-finding")
             else "S3") for c in POOLS}
SIZE = {"HEAD": (192, 224), "CHEST": (256, 224), "ABDOMEN": (256, 208)}


def _pick(rng, rows):
    return rng.choices([(lbl, org) for lbl, org, _ in rows], weights=[w for *_, w in rows], k=1)[0]


def synthetic_items(n: int, seed: int = 0, anatomy: bool = True) -> list[ItemFacts]:
    """`n` S3/S4 single-choice items on phantom-like images: lesions drawn from the catalogue
    distribution (index lesion first), option sets of 2-7 options from the category pools."""
    rng = random.Random(seed)
    keys = sorted(VOCAB)
    items = []
    for i in range(n):
        modality, region = keys[rng.randrange(len(keys))]
        w, h = SIZE[region]
        boxes, organ_box = [], {}
        for j, organ in enumerate(ANATOMY[region]):
            x0, y0 = (0, 0) if organ in ("body", "head") else (rng.randrange(10, w // 2), rng.randrange(10, h // 2))
            x1, y1 = ((w, h) if organ in ("body", "head")
                      else (x0 + rng.randrange(30, w // 2), y0 + rng.randrange(30, h // 2)))
            organ_box[organ] = (x0, y0, x1, y1)
            boxes.append(BoxFact(id=1000 + j, finding_id=1000 + j, kind="anatomy", label=organ,
                                 xyxy=(float(x0), float(y0), float(x1), float(y1)), attributes={"organ": organ}))
        lesions = []
        for k in range(rng.choice((1, 1, 2, 3))):
            label, organ = _pick(rng, VOCAB[(modality, region)])
            x0, y0, x1, y1 = organ_box[organ]
            size = rng.randrange(4, 24)
            lx, ly = x0 + rng.randrange(0, max(1, x1 - x0 - size)), y0 + rng.randrange(0, max(1, y1 - y0 - size))
            lesions.append(BoxFact(id=10 + k, finding_id=10 + k, kind="lesion", label=label,
                                   xyxy=(float(lx), float(ly), float(lx + size), float(ly + size)),
                                   attributes={"organ": organ}))
        category = sorted(POOLS)[rng.randrange(len(POOLS))]
        pool = POOLS[category]
        options = rng.sample(pool, min(len(pool), rng.choice((2, 3, 4, 5, 6))) if len(pool) > 2 else 2)
        index = lesions[0]
        question = QUESTIONS[category].format(organ=index.attributes["organ"])
        image = ImageFacts(image_id=i, width=w, height=h, modality=modality, body_region=region,
                           boxes=tuple((*lesions, *boxes)) if anatomy else tuple(lesions))
        items.append(ItemFacts(item_id=i, stage=STAGE[category], category=category, answer_type="single_choice",
                               question=question, options=options, gold=options[rng.randrange(len(options))],
                               image=image, evidence=(index,)))
    return items


@pytest.fixture(scope="module")
def generated():
    items = synthetic_items(600, seed=1)
    return items, [generate_variants(it, seed=0, kinds=PREMISE) for it in items]


def one(specs, kind):
    found = [s for s in specs if s.kind == kind]
    assert len(found) <= 1
    return found[0] if found else None


def question_of(spec) -> str:
    return spec.prompt.splitlines()[0]


def pair_in_question(question: str, label: str, organ: str) -> bool:
    return f"the {label} in the {organ}" in question.lower()


# ------------------------------------------------------------------ pairing and determinism
def test_true_premise_follows_false_premise_in_kinds():
    assert KINDS.index("true_premise") == KINDS.index("false_premise") + 1


def test_true_premise_exists_exactly_where_false_premise_does(generated):
    items, all_specs = generated
    both = 0
    for specs in all_specs:
        false, true = one(specs, "false_premise"), one(specs, "true_premise")
        assert (false is None) == (true is None)
        both += false is not None
    assert both >= 550          # every synthetic item is in scope; few lack a plausible absent pair
    out_of_scope = [synthetic_items(1, seed=3)[0]]
    out_of_scope = [
        ItemFacts(**{**out_of_scope[0].__dict__, "stage": "S2", "category": "lesion-location"}),
        ItemFacts(**{**out_of_scope[0].__dict__, "category": "distribution"}),
        ItemFacts(**{**out_of_scope[0].__dict__, "answer_type": "multi_choice", "gold": [out_of_scope[0].gold]}),
        ItemFacts(**{**out_of_scope[0].__dict__, "evidence": ()}),
    ]
    for item in out_of_scope:
        assert not {s.kind for s in generate_variants(item, seed=0)} & set(PREMISE)


def test_premise_variants_are_deterministic_and_seeded(generated):
    items, all_specs = generated
    for item, specs in list(zip(items, all_specs))[:50]:
        assert generate_variants(item, seed=0, kinds=PREMISE) == specs
    item = items[0]
    pairs = {(one(generate_variants(item, seed=s), "false_premise").params["label"],
              one(generate_variants(item, seed=s), "false_premise").params["organ"]) for s in range(40)}
    assert len(pairs) > 1
    phrasings = {one(generate_variants(item, seed=s), "true_premise").params["rejecting_option"] for s in range(40)}
    assert len(phrasings) > 3


# ------------------------------------------------------------------ plausibility
def test_false_premise_names_a_plausible_absent_lesion_of_an_organ_in_the_image(generated):
    items, all_specs = generated
    for item, specs in zip(items, all_specs):
        false = one(specs, "false_premise")
        if false is None:
            continue
        label, organ = false.params["label"], false.params["organ"]
        region_pairs = {(lbl, org) for lbl, org, w in VOCAB[(item.image.modality, item.image.body_region)] if w > 0}
        assert (label, organ) in region_pairs
        assert organ in {b.label for b in item.image.boxes if b.kind == "anatomy"}
        assert not any(word in organ for word in BLOCKED_ORGAN_WORDS)
        for lesion in (b for b in item.image.boxes if b.kind == "lesion"):
            same = lesion.label == label or {lesion.label, label} == {"nodule", "mass"}
            assert not (same and lesion.attributes["organ"] == organ), (item.item_id, label, organ)
        assert pair_in_question(question_of(false), label, organ)


def test_true_premise_names_the_index_lesion(generated):
    items, all_specs = generated
    for item, specs in zip(items, all_specs):
        true = one(specs, "true_premise")
        if true is None:
            continue
        index = item.evidence[0]
        assert (true.params["label"], true.params["organ"]) == (index.label, index.attributes["organ"])
        assert true.params["finding_box_id"] == index.id
        assert pair_in_question(question_of(true), index.label, index.attributes["organ"])


def test_without_anatomy_boxes_premises_name_the_regions_lesion_organs():
    items = synthetic_items(200, seed=5, anatomy=False)
    seen = 0
    for item in items:
        false = one(generate_variants(item, seed=0, kinds=PREMISE), "false_premise")
        if false:
            seen += 1
            assert false.params["organ"] in {o for o, _ in LESION_ORGANS[item.image.body_region]}
    assert seen > 150


def test_organs_absent_from_the_image_are_never_named():
    item = synthetic_items(1, seed=11)[0]
    chest = ImageFacts(image_id=1, width=256, height=224, modality="CT", body_region="CHEST", boxes=(
        BoxFact(id=1, finding_id=1, kind="lesion", label="nodule", xyxy=(40.0, 40.0, 60.0, 60.0),
                attributes={"organ": "right lung"}),
        BoxFact(id=2, finding_id=2, kind="anatomy", label="right lung", xyxy=(20.0, 20.0, 120.0, 200.0),
                attributes={"organ": "right lung"}),
        BoxFact(id=3, finding_id=3, kind="anatomy", label="heart", xyxy=(110.0, 60.0, 160.0, 140.0),
                attributes={"organ": "heart"}),
        BoxFact(id=4, finding_id=4, kind="anatomy", label="aorta", xyxy=(130.0, 40.0, 150.0, 60.0),
                attributes={"organ": "aorta"}),
    ))
    one_lung = ItemFacts(**{**item.__dict__, "stage": "S3", "category": "shape", "image": chest,
                            "evidence": (chest.boxes[0],), "question": "What is the shape of the largest lesion?",
                            "options": ["round", "oval", "lobulated"], "gold": "round"})
    named = Counter()
    for seed in range(200):
        false = one(generate_variants(one_lung, seed=seed, kinds=PREMISE), "false_premise")
        named[(false.params["label"], false.params["organ"])] += 1
    # the left lung is not in the image; nodule/mass of the right lung is what the image has
    assert set(named) == {("calcification", "right lung"), ("consolidation", "right lung")}


def test_false_pairs_follow_the_catalogue_distribution_as_true_pairs_do():
    """Over many items, the pairs false premises name follow the vocabulary distribution (which the
    true premises follow in these items): the draw weights are fitted for the exclusion of the real
    pair, so common pairs are not under-drawn. Chi-square per (modality, region) stratum."""
    by_key = defaultdict(Counter)
    for item in synthetic_items(2500, seed=13):
        if item.category in ("diagnosis", "supporting-finding") or len(
                [b for b in item.image.boxes if b.kind == "lesion"]) > 1:
            continue      # organ-group-bound categories and extra lesions add their own exclusions
        false = one(generate_variants(item, seed=0, kinds=["false_premise"]), "false_premise")
        if false:
            by_key[(item.image.modality, item.image.body_region)][(false.params["label"], false.params["organ"])] += 1
    tested = 0
    for key in [("CT", "ABDOMEN"), ("CT", "CHEST"), ("CT", "HEAD"), ("MR", "ABDOMEN")]:
        counts, weights = by_key[key], {(lbl, org): w for lbl, org, w in VOCAB[key]}
        n, total = sum(counts.values()), sum(weights.values())
        assert n > 150 and set(counts) <= set(weights)
        keys = sorted(weights)
        _, p = chisquare([counts[k] for k in keys], [n * weights[k] / total for k in keys])
        assert p > 0.01, (key, p, counts)
        tested += 1
    assert tested == 4


def test_the_drawn_pair_of_one_item_is_seeded_and_never_the_image_s_own():
    item = synthetic_items(1, seed=11)[0]
    abdomen = ImageFacts(image_id=2, width=256, height=208, modality="CT", body_region="ABDOMEN", boxes=(
        BoxFact(id=1, finding_id=1, kind="lesion", label="cyst", xyxy=(40.0, 40.0, 60.0, 60.0),
                attributes={"organ": "liver"}),
        *(BoxFact(id=2 + j, finding_id=2 + j, kind="anatomy", label=o, xyxy=(10.0 + j, 10.0, 200.0, 200.0),
                  attributes={"organ": o}) for j, o in enumerate(ANATOMY["ABDOMEN"])),
    ))
    cyst = ItemFacts(**{**item.__dict__, "stage": "S3", "category": "margin", "image": abdomen,
                        "evidence": (abdomen.boxes[0],),
                        "question": "How would you describe the margin of the outlined lesion?",
                        "options": POOLS["margin"], "gold": "well-defined"})
    counts = Counter()
    for seed in range(400):
        p = one(generate_variants(cyst, seed=seed, kinds=["false_premise"]), "false_premise").params
        counts[(p["label"], p["organ"])] += 1
    possible = {(lbl, org) for lbl, org, _ in VOCAB[("CT", "ABDOMEN")]} - {("cyst", "liver")}
    assert set(counts) <= possible and len(counts) >= 10
    assert counts.most_common(1)[0][0] in {("nodule", "liver"), ("mass", "liver")}   # the commonest real pairs


def test_options_bound_to_the_organ_keep_the_organ_group():
    """Diagnoses are per organ group: a premise about another organ would be exposed by its options."""
    items = [it for it in synthetic_items(600, seed=2) if it.category == "diagnosis"]
    checked = 0
    for item in items:
        false = one(generate_variants(item, seed=0, kinds=PREMISE), "false_premise")
        if false:
            checked += 1
            assert false.params["organ"].split()[-1] == item.evidence[0].attributes["organ"].split()[-1]
    assert checked > 20


def test_a_vocabulary_naming_vessels_or_bones_is_refused():
    item = synthetic_items(1, seed=0)[0]
    for organ in ("aorta", "lateral ventricles", "vertebra", "body"):
        with pytest.raises(ValueError, match="never named"):
            generate_variants(item, seed=0, vocabulary={("CT", "ABDOMEN"): [("cyst", organ, 1.0)]})
    with pytest.raises(ValueError, match="weight"):
        generate_variants(item, seed=0, vocabulary={("CT", "ABDOMEN"): [("cyst", "liver", -1)]})


def test_a_custom_vocabulary_is_used_and_a_true_pair_outside_it_skips_both():
    item = synthetic_items(40, seed=4)
    abdomen = [it for it in item if it.image.body_region == "ABDOMEN" and it.evidence[0].attributes["organ"] == "liver"
               and it.category not in ("diagnosis", "supporting-finding")][0]
    real = (abdomen.evidence[0].label, "liver")
    vocab = {(abdomen.image.modality, "ABDOMEN"): [(*real, 1.0), ("infarct", "spleen", 1.0)]}
    specs = generate_variants(abdomen, seed=0, kinds=PREMISE, vocabulary=vocab)
    premise = one(specs, "false_premise").params
    assert (premise["label"], premise["organ"]) == ("infarct", "spleen")
    narrow = {(abdomen.image.modality, "ABDOMEN"): [("infarct", "spleen", 1.0)]}
    assert not {s.kind for s in generate_variants(abdomen, seed=0, vocabulary=narrow)} & set(PREMISE)


# ------------------------------------------------------------------ question and expected answers
@pytest.mark.parametrize("question, expected, how", [
    ("What is the shape of the largest lesion?", "What is the shape of the cyst in the spleen?", "reference_replaced"),
    ("How would you describe the margin of the outlined lesion?",
     "How would you describe the margin of the cyst in the spleen?", "reference_replaced"),
    ("What is the internal composition of the largest lesion in this image?",
     "What is the internal composition of the cyst in the spleen?", "reference_replaced"),
    ("How severe is the finding?", "How severe is the cyst in the spleen?", "reference_replaced"),
    ("What is the density of the largest lesion relative to the surrounding liver?",
     "What is the density of the cyst in the spleen relative to the surrounding spleen?", "reference_replaced"),
    ("What is the shape of the nodule?", "What is the shape of the cyst in the spleen?", "label_replaced"),
    ("What is the shape of the nodule in the liver?", "What is the shape of the cyst in the spleen?", "label_replaced"),
    ("The largest lesion is best described as?", "The cyst in the spleen is best described as?", "reference_replaced"),
    ("What grade or stage best fits the findings?",
     "Consider the cyst in the spleen. What grade or stage best fits the findings?", "prefixed"),
])
def test_premise_question_retargets_the_lesion_reference(question, expected, how):
    retargeted = premise_question(question, real_label="nodule", real_organ="liver", label="cyst", organ="spleen")
    assert retargeted == (expected, how)


def test_true_and_false_premise_questions_have_the_same_form(generated):
    items, all_specs = generated
    for item, specs in zip(items, all_specs):
        false, true = one(specs, "false_premise"), one(specs, "true_premise")
        if false is None:
            continue
        assert false.params["rewrite"] == true.params["rewrite"]

        def skeleton(spec):
            named = f"the {spec.params['label']} in the {spec.params['organ']}"
            return question_of(spec).replace(named, "the L in the O")
        if "surrounding" not in item.question:
            assert skeleton(false) == skeleton(true), (question_of(false), question_of(true))


def test_expected_answers_and_options(generated):
    items, all_specs = generated
    for item, specs in zip(items, all_specs):
        false, true = one(specs, "false_premise"), one(specs, "true_premise")
        if false is None:
            continue
        for spec in (false, true):
            reject = spec.params["rejecting_option"]
            assert spec.options.count(reject) == 1
            assert spec.options[ord(spec.params["rejecting_letter"]) - 65] == reject
            assert sorted(o for o in spec.options if o != reject) == sorted(item.options)   # every option kept
            assert spec.params["length_rank"] == length_rank(spec.options, spec.options.index(reject))
        assert false.expected_answer == {"value": false.params["rejecting_option"],
                                         "letter": false.params["rejecting_letter"], "rejects_premise": True}
        assert true.expected_answer == {"value": item.gold, "letter": chr(65 + true.options.index(item.gold)),
                                        "rejects_premise": False}
        assert true.params["premise_holds"] is True and false.params["premise_holds"] is False


def test_rejecting_options_are_short_phrases_that_name_no_premise_but_their_own(generated):
    items, all_specs = generated
    for specs in all_specs:
        for spec in filter(None, (one(specs, k) for k in PREMISE)):
            reject = spec.params["rejecting_option"]
            assert reject in {p.format(label=spec.params["label"], organ=spec.params["organ"])
                              for p in REJECT_PHRASINGS}
            assert len(reject) <= 60 and not reject.endswith(".")


# ------------------------------------------------------------------ no length or text tell
def _ranks(all_specs, kind):
    by_n = defaultdict(list)
    for specs in all_specs:
        spec = one(specs, kind)
        if spec:
            pos = spec.options.index(spec.expected_answer["value"] if kind == "false_premise"
                                     else spec.params["rejecting_option"])
            by_n[len(spec.options)].append(length_rank(spec.options, pos))
    return by_n


@pytest.mark.parametrize("kind", PREMISE)
def test_rejecting_option_length_rank_is_uniform(generated, kind):
    """False premise: the gold (the rejecting option) is at each length rank equally often (chi-square
    per option count); true premise: the same for the rejecting distractor."""
    by_n = _ranks(generated[1], kind)
    tested = 0
    for n, ranks in sorted(by_n.items()):
        if len(ranks) < 10 * n:
            continue
        tested += 1
        counts = Counter(ranks)
        _, p = chisquare([counts[r] for r in range(n)])
        assert p > 0.05, (kind, n, counts)
    assert tested >= 3
    pooled = [r / (n - 1) for n, ranks in by_n.items() for r in ranks]
    assert abs(sum(pooled) / len(pooled) - 0.5) < 0.04        # neither long nor short on average


def test_rejecting_option_is_the_longest_about_one_time_in_n(generated):
    items, all_specs = generated
    longest, expected, total = 0, 0.0, 0
    for specs in all_specs:
        for spec in filter(None, (one(specs, k) for k in PREMISE)):
            reject = spec.params["rejecting_option"]
            longest += all(len(reject) > len(o) for o in spec.options if o != reject)
            expected += 1 / len(spec.options)
            total += 1
    sd = (expected * (1 - expected / total)) ** 0.5
    assert abs(longest - expected) < 3 * sd + 0.03 * total, (longest, expected, total)
    # the old option ("The premise is false: there is no ...") was the longest 280 times out of 280


def test_a_text_only_classifier_cannot_tell_false_from_true_premises():
    """Bag of word n-grams over the prompt (question and options), logistic regression, 5-fold CV."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, cross_val_score
    from sklearn.pipeline import make_pipeline

    texts, labels, groups = [], [], []
    for item in synthetic_items(1500, seed=7):
        for spec in generate_variants(item, seed=0, kinds=PREMISE)[1:]:
            texts.append(spec.prompt)
            labels.append(int(spec.kind == "false_premise"))
            groups.append(item.item_id)
    model = make_pipeline(CountVectorizer(ngram_range=(1, 2), min_df=2), LogisticRegression(max_iter=2000, C=1.0))
    scores = cross_val_score(model, texts, labels, groups=groups, cv=GroupKFold(n_splits=5))
    assert len(texts) > 2500
    assert scores.mean() <= 0.55, scores
