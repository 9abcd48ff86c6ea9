"""The generator's faster paths give exactly what the straightforward code gave (issue 19): the rejecting
option's length ranks counted on sorted lengths, the cached organ check; the premise weights' index lists,
the cached text normalisation and the prompt's inlined option lines."""
from __future__ import annotations

import random
import re

import pytest

from annotation.variants.premise import (
    BLOCKED_ORGAN_WORDS,
    FIT_CAP,
    FIT_ROUNDS,
    REJECT_PHRASINGS,
    _fitted,
    blocked_organ,
    catalogue_vocabulary,
    length_rank,
    phrasings,
    rejecting_option,
    same_label,
    vocabulary_for,
)
from annotation.variants.prompt import CHOICE_TYPES, INSTRUCTIONS, JOINT_INSTRUCTION, format_prompt, option_line
from annotation.variants.visual import _norm


def _reference_rejecting_option(others, *, label, organ, rng):
    """The code before issue 19, verbatim in substance."""
    others = [str(o) for o in others]
    n = len(others) + 1
    target = rng.randrange(n)
    texts = [p for p in phrasings(label, organ) if p not in others]
    strict, tied, near = [], [], []
    for p in texts:
        shorter = sum(len(o) < len(p) for o in others)
        equal = sum(len(o) == len(p) for o in others)
        if not equal and shorter == target:
            strict.append(p)
        elif equal and shorter <= target <= shorter + equal:
            tied.append(p)
        else:
            near.append(p)
    if strict:
        phrase, pos = rng.choice(strict), rng.randrange(n)
        how = "strict"
    else:
        combos = [(p, pos) for p in (tied or near) for pos in range(n)]
        rank = {(p, pos): length_rank(others[:pos] + [p] + others[pos:], pos) for p, pos in combos}
        best = min(abs(r - target) for r in rank.values())
        phrase, pos = rng.choice([c for c in combos if abs(rank[c] - target) == best])
        how = "tied" if best == 0 else "nearest"
    shown = others[:pos] + [phrase] + others[pos:]
    template = next(p for p in REJECT_PHRASINGS if p.format(label=label, organ=organ) == phrase)
    return phrase, pos, {"target_length_rank": target, "length_rank": length_rank(shown, pos),
                         "rank_fit": how, "phrasing": REJECT_PHRASINGS.index(template)}


def _options(rnd: random.Random) -> list[str]:
    words = ["cyst", "mass", "none seen", "absent", "liver", "right kidney", "10-20 mm", "< 10 mm", "oval",
             "spiculated", "no such lesion", "not present", "x" * rnd.randint(1, 50)]
    return rnd.sample(words, rnd.randint(1, 8)) + ["a" * rnd.randint(3, 30) for _ in range(rnd.randint(0, 3))]


def test_rejecting_option_is_the_reference_on_random_options():
    rnd = random.Random(19)
    fits = set()
    for i in range(3000):
        others = _options(rnd)
        got = rejecting_option(others, label="nodule", organ="liver", rng=random.Random(f"r{i}"))
        want = _reference_rejecting_option(others, label="nodule", organ="liver", rng=random.Random(f"r{i}"))
        assert got == want, others
        fits.add(got[2]["rank_fit"])
    assert fits == {"strict", "tied", "nearest"}          # every path was exercised


@pytest.mark.parametrize("organ", ["liver", "Abdominal Aorta", "left ventricle", "bones", "thoracic spine",
                                   "vertebral body", "head", "forehead", "ribcage", "contrib", "Skull base", ""])
def test_blocked_organ_is_the_word_by_word_check(organ):
    low = organ.lower()
    assert blocked_organ(organ) == any(re.search(rf"\b{re.escape(w)}", low) for w in BLOCKED_ORGAN_WORDS)


# ---------------------------------------------------------------- issue 19, second round (child CPU)
def _reference_fitted(pool):
    """premise._fitted before the index lists: same_label per pair per round."""
    p = {k: w for k, w in pool}
    total = sum(p.values())
    p = {k: w / total for k, w in p.items()}
    w = dict(p)

    def allowed(x, t):
        return not (same_label(x[0], t[0]) and x[1] == t[1])

    for _ in range(FIT_ROUNDS):
        z = {t: sum(w[x] for x in w if allowed(x, t)) for t in p}
        q = {x: sum(p[t] * w[x] / z[t] for t in p if allowed(x, t) and z[t] > 0) for x in p}
        w = {x: min(w[x] * (p[x] / q[x] if q[x] > 0 else 1.0), FIT_CAP) for x in p}
        norm = sum(w.values())
        w = {x: v / norm for x, v in w.items()}
    return w


def _pools():
    catalogue = catalogue_vocabulary()
    for key in catalogue:
        yield tuple(sorted(vocabulary_for(catalogue, *key).items()))
    rnd = random.Random(5)
    labels, organs = ["nodule", "mass", "cyst", "calcification", "hemorrhage"], ["liver", "spleen", "left kidney"]
    for _ in range(40):       # random pools, with nodule/mass synonyms and one label dominating at times
        pairs = rnd.sample([(a, o) for a in labels for o in organs], rnd.randint(1, 12))
        yield tuple(sorted((pair, rnd.choice([1e-9, 0.5, 1.0, 7.0, 300.0])) for pair in pairs))


def test_fitted_weights_are_bit_for_bit_the_plain_double_loop():
    for pool in _pools():
        got, want = _fitted.__wrapped__(pool), _reference_fitted(pool)
        assert list(got.items()) == list(want.items()), pool      # the same floats, not merely close


@pytest.mark.parametrize("text", ["  Left\tKidney ", "10-20 mm", "", "MASS\n in  the liver", 12, 1.5, None, True,
                                  "caf\u00e9 \u00a0 x", "\u2003spaced\u2003"])
def test_cached_norm_is_the_plain_regex(text):
    assert _norm(text) == re.sub(r"\s+", " ", str(text).strip().lower())


def _reference_prompt(question, options, *, answer_type, preamble="", context_lines=(), image_size=None,
                      with_box=False):
    lines = [c for c in context_lines if c] + ([preamble] if preamble else []) + [question]
    if answer_type in CHOICE_TYPES:
        lines.extend(option_line(i, o) for i, o in enumerate(options))
    instruction = JOINT_INSTRUCTION if with_box else INSTRUCTIONS[answer_type]
    if answer_type == "box" or with_box:
        instruction = instruction.format(w=int(image_size[0]), h=int(image_size[1]))
    return "\n".join(lines + [instruction])


@pytest.mark.parametrize("answer_type,with_box", [("single_choice", False), ("single_choice", True),
                                                  ("yes_no", True), ("multi_choice", False), ("box", False),
                                                  ("short_text", False)])
def test_format_prompt_is_the_option_line_join(answer_type, with_box):
    options = ["yes", "no"] if answer_type == "yes_no" else ["cyst", 3, "10-20 mm", None, "a {brace}"]
    for size in [(512, 512), (640.0, 480.7)]:
        kwargs = dict(answer_type=answer_type, preamble="A colleague thinks B.", context_lines=("", "Cue."),
                      image_size=size, with_box=with_box)
        assert format_prompt("Is it?", options, **kwargs) == _reference_prompt("Is it?", options, **kwargs)


def test_more_options_than_letters_is_refused_as_before():
    with pytest.raises(ValueError, match="no letter for option index 26"):
        format_prompt("q", [str(i) for i in range(30)], answer_type="single_choice")
    assert format_prompt("q", [str(i) for i in range(26)], answer_type="single_choice").count("\n") == 27
