"""The Balancer: balanced golds, fair-share distractors, question texts that do not predict answers.

Plain pytest (no DB): python -m pytest tests/annotation/test_chain_balance.py -q -p no:django --noconftest
"""
from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from functools import cache

import pytest

from annotation.chains import ChainPolicy, default_category_defs, generate_chain
from annotation.chains.balance import Balancer

from .test_chain_generator import phantom_facts

CATS = default_category_defs()


def test_acceptance_is_the_hand_computed_rule():
    b = Balancer(tolerance=0.1, slack=2)
    for _ in range(3):                                   # a lone gold value may lead by slack + 1
        assert b.accepts("c", "yes_no", "yes")
        b.record("c", "yes_no", "q", ["yes", "no"], "yes")
    assert not b.accepts("c", "yes_no", "yes")           # e.g. plane-view when every image is axial
    for _ in range(5):
        b.record("c", "yes_no", "q", ["yes", "no"], "yes")
    for _ in range(10):
        b.record("c", "yes_no", "q", ["yes", "no"], "no")
    # yes = 8, no = 10: yes may go to floor(10 * 1.1 + 2) = 13, no to 8 * 1.1 + 2 = 10.8 -> not 11
    assert b.accepts("c", "yes_no", "yes") and not b.accepts("c", "yes_no", "no")
    for _ in range(5):
        b.record("c", "yes_no", "q", ["yes", "no"], "yes")
    assert b.gold["c"] == {"yes": 13, "no": 10} and not b.accepts("c", "yes_no", "yes")
    assert b.accepts("c", "box", [1, 2, 3, 4]) and b.accepts("c", "multi_choice", ["a"])   # not balanced
    with pytest.raises(ValueError):
        Balancer(tolerance=-1)


def test_distractors_are_offered_at_their_fair_share():
    b = Balancer()
    # 'a' was the gold 6 times, 'b' 2 times, 'c' 2 times, 'never' never; one distractor per item so far
    for gold, shown in [("a", "b")] * 2 + [("a", "c")] * 4 + [("b", "a")] * 2 + [("c", "a")] * 2:
        b.record("k", "single_choice", "q", [gold, shown], gold)
    # r = 10 distractors / 10 items = 1; deficits: a = 6 - 4 = 2, b = 2 - 2 = 0, c = 2 - 4 = -2
    rng = random.Random(0)
    assert b.pick_distractors("k", "b", ["c", "a", "never"], 1, rng) == ["a"]
    assert b.pick_distractors("k", "b", ["c", "a", "never"], 3, rng) == ["a", "c"]    # never-gold: left out
    assert b.pick_distractors("k", "a", ["a"], 2, rng) == []                           # only the gold
    fresh = Balancer()
    assert fresh.pick_distractors("k", "x", ["y", "z", "w"], 2, random.Random(1)) != []   # nothing known yet


def test_rank_prefers_the_answer_its_question_text_lacks():
    b = Balancer()
    for _ in range(3):
        b.record("fp", "yes_no", "Is there a cyst in the liver?", ["yes", "no"], "yes")
    b.record("fp", "yes_no", "Is there a mass in the brain?", ["yes", "no"], "no")
    cands = [("Is there a mass in the brain?", "no"), ("Is there a cyst in the liver?", "no"),
             ("Is there a cyst in the liver?", "yes")]
    assert b.rank("fp", "yes_no", cands)[0] == 1        # 'no' about the liver cyst: that text needs a 'no'
    assert b.rank("fp", "single_choice", [("q", "x")]) == [0]


@cache
def balanced_steps(n: int = 400):
    b = Balancer()
    return tuple(s for f in phantom_facts(n) for s in generate_chain(f, CATS, seed=0, balancer=b)), b


def test_generated_golds_are_balanced_in_every_category_and_split():
    """The balancer's guarantee per (category, patient-level split): no gold more than 10% + 3 above
    the rarest one (so the held-out test split is balanced by construction), and overall every
    category with enough items is within the issue's limits (0.55 for two answers, 0.60 otherwise)."""
    from annotation.splits import split_for_group

    golds, per_split = defaultdict(Counter), defaultdict(Counter)
    b = Balancer()
    for f in phantom_facts(400):
        for s in generate_chain(f, CATS, seed=0, balancer=b):
            if s.answer_type in ("single_choice", "yes_no"):
                golds[s.category][json.dumps(s.gold)] += 1
                per_split[(s.category, split_for_group(f.split_group))][json.dumps(s.gold)] += 1
    assert len(golds) >= 25
    for key, c in per_split.items():
        if len(c) >= 2:
            assert max(c.values()) <= min(c.values()) * 1.1 + 3, (key, c)
    for code, c in golds.items():
        n = sum(c.values())
        if n >= 60:
            assert max(c.values()) / n <= (0.55 if len(c) == 2 else 0.60), (code, c)


def test_no_option_is_structurally_never_or_always_the_gold():
    steps, _ = balanced_steps()
    shown, gold = defaultdict(Counter), defaultdict(Counter)
    for s in steps:
        if s.answer_type != "single_choice":
            continue
        for o in s.options:
            shown[s.category][o] += 1
        gold[s.category][s.gold] += 1
    for code in shown:
        for option, n in shown[code].items():
            if n >= 10:
                rate = gold[code][option] / n
                assert 0 < rate < 1, (code, option, n, rate)     # 'midline', 'diffuse' never shown now


def test_question_text_does_not_predict_the_answer():
    """Per question text, the yes/no answers of finding presence are as balanced as the balancer can
    make them: a lookup of the text's majority answer (fitted and scored on the same items, the most
    optimistic blind model there is) stays close to chance."""
    steps, _ = balanced_steps()
    by_q = defaultdict(Counter)
    for s in steps:
        if s.category in ("finding-presence", "lesion-count"):
            by_q[(s.category, s.question)][s.gold] += 1
    for code in ("finding-presence",):
        cells = [c for (k, _), c in by_q.items() if k == code]
        n = sum(sum(c.values()) for c in cells)
        lookup = sum(max(c.values()) for c in cells if sum(c.values()) > 1)
        singles = sum(1 for c in cells if sum(c.values()) == 1)
        assert n >= 30
        assert (lookup + singles / 2) / n <= 0.70     # vs 1.0 when every text has one answer


def test_balanced_generation_is_deterministic_in_order():
    a = [(s.category, s.question, s.options, s.gold) for s in balanced_steps(120)[0]]
    b2 = Balancer()
    b = [(s.category, s.question, s.options, s.gold)
         for f in phantom_facts(120) for s in generate_chain(f, CATS, seed=0, balancer=b2)]
    assert a == b


def test_the_balancer_only_chooses_among_true_facts():
    """Balance comes from choosing which fact to ask, never from changing an answer: every balanced
    step is one that some seed of the unbalanced generator also produces for that image."""
    facts = phantom_facts(60)
    b = Balancer()
    for f in facts:
        for s in generate_chain(f, CATS, seed=0, balancer=b, policy=ChainPolicy(steps_per_stage=8)):
            if s.answer_type in ("yes_no", "single_choice") and s.category in (
                    "normal-vs-abnormal", "modality", "plane-view", "benign-vs-malignant", "severity"):
                free = [t for seed in range(3) for t in generate_chain(f, CATS, seed=seed,
                                                                       policy=ChainPolicy(steps_per_stage=8))
                        if t.category == s.category]
                assert free and all(t.gold == s.gold for t in free)


def test_a_category_whose_data_hold_one_answer_is_barely_asked():
    """Every image axial (the old phantoms): plane-view would be 'axial' every time, a free point for
    a blind model. The balancer asks it at most slack + 1 times."""
    import dataclasses

    b = Balancer()
    axial = [dataclasses.replace(f, plane="axial") for f in phantom_facts(200)]
    asked = [s for f in axial for s in generate_chain(f, CATS, seed=0, balancer=b) if s.category == "plane-view"]
    assert 1 <= len(asked) <= 9 and {s.gold for s in asked} == {"axial"}     # at most 3 in each split


def test_a_value_that_is_mostly_the_answer_where_it_appears_is_refused():
    b = Balancer(share_tolerance=0.15, min_share_evidence=5)
    for _i in range(6):   # 'skull' is the gold of 6 items and never a distractor; 'lung' 6 times each way
        b.record("organ", "single_choice", "q", ["skull", "lung"], "skull")
        b.record("organ", "single_choice", "q", ["lung", "liver"], "lung")
        b.record("organ", "single_choice", "q", ["liver", "lung"], "liver")
    # 2 options on average: fair share 1/2; skull is right in 6/6 of its appearances -> refused
    assert not b.accepts("organ", "single_choice", "skull")
    assert b.accepts("organ", "single_choice", "liver")         # 6 of 12 appearances: fair
