"""The generator's faster paths give exactly what the straightforward code gave (issue 19): the rejecting
option's length ranks counted on sorted lengths, the cached organ check."""
from __future__ import annotations

import random
import re

import pytest

from annotation.variants.premise import (
    BLOCKED_ORGAN_WORDS,
    REJECT_PHRASINGS,
    blocked_organ,
    length_rank,
    phrasings,
    rejecting_option,
)


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
