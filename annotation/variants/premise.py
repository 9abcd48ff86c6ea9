"""Premise variants (false_premise and its control true_premise): the vocabulary of plausible
premises, the premise question and the rejecting option (pure Python: no Django, no PIL).

Both kinds re-target the item's question at a *named* lesion, "the {label} in the {organ}", and add
one option that rejects the premise. true_premise names the item's real index lesion (expected: the
gold); false_premise names a (label, organ) pair absent from the image (expected: the rejecting
option). Everything else is built the same way for both, so that only the image tells them apart:

- **Vocabulary** (`Vocabulary`): per (modality, body region), weighted (label, organ) pairs that real
  lesions have. The default, `catalogue_vocabulary()`, follows the phantom catalogue exactly
  (`LESION_ORGANS` organ weights x `CATALOGUE` lesion-type weights; an 'auto' label splits into
  nodule / mass by the share of the type's diameter range below / from 30 mm). The false pair is drawn
  from the pairs whose organ is in the image (anatomy boxes; without anatomy boxes, the region's
  lesion organs), excluding every pair present in the image (nodule and mass count as one), with
  weights fitted so that false pairs, over many items, follow the vocabulary's distribution as true
  pairs do (`_fitted`); the true pair must itself be in the vocabulary, else neither kind is
  generated. Containers,
  vessels, ventricles and bones are refused (`BLOCKED_ORGAN_WORDS`).
- **Question** (`premise_question`): the lesion reference of the item question ("the largest lesion",
  "the outlined lesion", "the finding", or the real label "the nodule") becomes "the {label} in the
  {organ}", other mentions of the real organ become the premise organ; without a reference the
  question is prefixed with "Consider the {label} in the {organ}.".
- **Rejecting option** (`rejecting_option`): one of `REJECT_PHRASINGS` (short option phrases, from
  "none" to "false premise: there is no {label} in the {organ}") and a display position, chosen by seed
  so that the option's character-length rank among the options is uniform (a target rank is drawn
  uniformly; a phrasing that reaches it without a tie is preferred; ranks are stable-sort ranks: equal
  lengths count in display order).
"""
from __future__ import annotations

import random
import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from annotation.phantoms.catalogue import CATALOGUE, LESION_ORGANS, REGIONS, organ_group

Pair = tuple[str, str]                                          # (lesion label, organ)
Vocabulary = Mapping[tuple[str, str], Sequence[tuple[str, str, float]]]   # (modality, region) -> (label, organ, weight)

NODULE_MASS_CUTOFF_MM = 30.0
FIT_ROUNDS, FIT_CAP = 60, 1e6                                  # fitting the false-pair draw weights (_fitted)
SYNONYMS = ({"nodule", "mass"},)                               # size-defined; never swap one for the other
CONTAINERS = frozenset({"body", "head"})
BLOCKED_ORGAN_WORDS = ("body", "head", "aorta", "vena cava", "artery", "vein", "vessel", "ventricle", "vertebra",
                       "skull", "sternum", "rib", "bone", "spine")
# Categories whose options belong to the lesion's organ (diagnoses of the liver, ...): the false
# premise keeps the organ group there, else the options alone would expose it.
SAME_ORGAN_GROUP_CATEGORIES = frozenset({"diagnosis", "rule-out-differential", "supporting-finding"})

REJECT_PHRASINGS = (           # label-free phrases of (nearly) every length from 4 to 46 characters, then named ones
    "none",
    "absent",
    "missing",
    "not seen",
    "none seen",
    "none found",
    "not present",
    "none visible",
    "lesion absent",
    "no such lesion",
    "no such finding",
    "not present here",
    "no lesion present",
    "lesion not present",
    "no such lesion here",
    "the premise is false",
    "no such lesion exists",
    "no such lesion is seen",
    "no such lesion is shown",
    "no such lesion is imaged",
    "no such lesion is present",
    "the premise does not hold",
    "the named lesion is absent",
    "there is no such lesion here",
    "the named lesion is not seen",
    "the premise is false: not seen",
    "this lesion is not in the image",
    "the named lesion is not present",
    "the named lesion is not seen here",
    "the premise is false: none present",
    "there is no such lesion to describe",
    "there is no such lesion in the image",
    "the named lesion is not in this image",
    "no such lesion is present in this image",
    "the premise is false: no such lesion here",
    "the lesion named here is not in the image",
    "the lesion named in the question is absent",
    "the premise is false: there is no such lesion",
    "false premise: this image shows no such lesion",
    "no {label} seen",
    "there is no {label}",
    "no {label} is present",
    "none: no {label} is seen",
    "no {label} in the {organ}",
    "there is no {label} in the {organ}",
    "no {label} is seen in the {organ}",
    "the premise is false: no {label} in the {organ}",
    "false premise: there is no {label} in the {organ}",
)

# How a (S1/S3/S4) question refers to the lesion it is about, when it does not name it.
_REFERENCE = re.compile(
    r"\bthe (?:(?:largest|biggest|dominant|main|index|outlined|marked|boxed|circled|indicated|highlighted)"
    r" )?(?:lesion|finding|abnormality)\b"
    r"(?:,? (?:that is )?(?:outlined|marked|boxed|shown|indicated|highlighted)"
    r"(?: (?:by|with|in) (?:the|a) (?:red )?box)?)?"
    r"(?: (?:at|in|inside|within) (?:the )?(?:box )?\[[^\]]*\])?"
    r"(?: (?:in|on|of) (?:this|the) (?:image|scan|slice))?",
    re.I)


def _weights_from_catalogue() -> dict[tuple[str, str], list[tuple[str, str, float]]]:
    out: dict[tuple[str, str], list[tuple[str, str, float]]] = {}
    for modality, region, _ in REGIONS:
        acc: dict[Pair, float] = defaultdict(float)
        for organ, w_organ in LESION_ORGANS.get(region, ()):
            types = CATALOGUE.get((modality, organ_group(organ)), ())
            total = sum(t.weight for t in types)
            for t in types:
                w = w_organ * t.weight / total
                if t.label != "auto":
                    acc[(t.label, organ)] += w
                    continue
                span = t.d_max - t.d_min
                p_mass = (min(max((t.d_max - NODULE_MASS_CUTOFF_MM) / span, 0.0), 1.0) if span > 0
                          else float(t.d_min >= NODULE_MASS_CUTOFF_MM))
                if p_mass < 1:
                    acc[("nodule", organ)] += w * (1 - p_mass)
                if p_mass > 0:
                    acc[("mass", organ)] += w * p_mass
        out[(modality, region)] = [(label, organ, round(w, 6)) for (label, organ), w in sorted(acc.items())]
    return out


_CATALOGUE_VOCABULARY = _weights_from_catalogue()


def catalogue_vocabulary() -> dict[tuple[str, str], list[tuple[str, str, float]]]:
    """The default vocabulary: the phantom catalogue's lesion distribution per (modality, region)."""
    return {k: list(v) for k, v in _CATALOGUE_VOCABULARY.items()}


_BLOCKED = re.compile("|".join(rf"\b{re.escape(w)}" for w in BLOCKED_ORGAN_WORDS))


@lru_cache(maxsize=4096)
def blocked_organ(organ: str) -> bool:
    """Whether `organ` names a container, vessel, ventricle or bone (a word of BLOCKED_ORGAN_WORDS starts
    one of its words). Cached: vocabularies are checked for every item and name few organs."""
    return _BLOCKED.search(organ.lower()) is not None


def check_vocabulary(vocabulary: Vocabulary) -> None:
    """Refuse a vocabulary that names a container / vessel / ventricle / bone or has bad weights."""
    for key, pairs in vocabulary.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise ValueError(f"premise vocabulary keys are (modality, body region) pairs, not {key!r}")
        for entry in pairs:
            if len(entry) != 3:
                raise ValueError(f"premise vocabulary {key}: entries are (label, organ, weight), not {entry!r}")
            label, organ, weight = entry
            if not label or not organ:
                raise ValueError(f"premise vocabulary {key}: empty label or organ in {entry!r}")
            if blocked_organ(organ):
                raise ValueError(f"premise vocabulary {key}: {organ!r} does not carry lesions (containers, vessels,"
                                 " ventricles and bones are never named in a premise)")
            if not (isinstance(weight, (int, float)) and weight >= 0):
                raise ValueError(f"premise vocabulary {key}: weight of {entry!r} must be a number >= 0")


def vocabulary_for(vocabulary: Vocabulary, modality: str, region: str) -> dict[Pair, float]:
    """Weighted pairs for (modality, region); else pooled over the region's modalities; else {}."""
    rows = vocabulary.get((modality, region))
    if rows is None:
        rows = [r for (_, reg), rs in sorted(vocabulary.items()) if reg == region for r in rs]
    out: dict[Pair, float] = defaultdict(float)
    for label, organ, weight in rows:
        if weight > 0:
            out[(label, organ)] += float(weight)
    return dict(out)


def same_label(a: str, b: str) -> bool:
    return a == b or any(a in g and b in g for g in SYNONYMS)


@dataclass(frozen=True)
class Premise:
    true_pair: Pair
    false_pair: Pair
    candidates: int                     # how many false pairs were possible


@lru_cache(maxsize=256)
def _fitted(pool: tuple[tuple[Pair, float], ...]) -> dict[Pair, float]:
    """Draw weights w such that, when the true pair T follows the pool's distribution p and the false
    pair is drawn with w among the pairs that differ from T, the false pairs follow p too (iterative
    proportional fitting; where that is impossible - one label group above half the mass - as close as
    it gets). Plain p would under-draw common pairs, exactly those a true premise names most."""
    p = {k: w for k, w in pool}
    total = sum(p.values())
    p = {k: w / total for k, w in p.items()}
    keys = list(p)
    # Which pairs may stand in for which, as index lists in pool order: computed once, not per round
    # (same_label is the cost); the sums below add exactly the terms, in exactly the order, they
    # always did, so the weights are bit for bit those of the plain double loop.
    allowed = [[not (same_label(x[0], t[0]) and x[1] == t[1]) for t in keys] for x in keys]
    stand_ins = [[i for i in range(len(keys)) if allowed[i][j]] for j in range(len(keys))]   # x for each t
    targets = [[j for j in range(len(keys)) if allowed[i][j]] for i in range(len(keys))]     # t for each x
    pv = [p[k] for k in keys]
    wv = list(pv)
    for _ in range(FIT_ROUNDS):
        z = [sum(wv[i] for i in xs) for xs in stand_ins]
        q = [sum(pv[j] * wv[i] / z[j] for j in targets[i] if z[j] > 0) for i in range(len(keys))]
        wv = [min(wv[i] * (pv[i] / q[i] if q[i] > 0 else 1.0), FIT_CAP) for i in range(len(keys))]
        norm = sum(wv)
        wv = [v / norm for v in wv]
    w = dict(zip(keys, wv))
    return w


def draw_false_pair(*, true_pair: Pair, pool: Mapping[Pair, float], organs: Sequence[str],
                    present: Sequence[tuple[str, str | None]], same_group: bool, rng: random.Random,
                    balance: PremiseBalance | None = None, category: str = "") -> tuple[Pair, int] | None:
    """A weighted draw of a plausible absent (label, organ) from `pool`, or None.

    `organs`: organs the premise may name (present in the image); `present`: (label, organ or None)
    of every lesion of the image (organ None: the label is excluded in every organ). With a
    `balance` (PremiseBalance) the draw is among the pairs false premises of `category` lag on."""
    allowed = set(organs)
    weights = _fitted(tuple(sorted(pool.items())))
    cands = []
    for (label, organ), w in sorted(weights.items()):
        if organ not in allowed or organ in CONTAINERS or blocked_organ(organ):
            continue
        if same_group and organ_group(organ) != organ_group(true_pair[1]):
            continue
        if any(same_label(label, pl) and (po is None or po == organ) for pl, po in present):
            continue
        cands.append(((label, organ), w))
    if not cands:
        return None
    if sum(w for _, w in cands) < 1e-9:       # only pairs the fitting starved: their own weights
        cands = [(c, pool[c]) for c, _ in cands]
    if balance is not None:
        cands = balance.most_needed(category, cands)
    pick = rng.choices([c for c, _ in cands], weights=[w for _, w in cands], k=1)[0]
    return pick, len(cands)


class PremiseBalance:
    """Running counts, per category, of the (label, organ) pairs that true and false premises name.

    The vocabulary's weights make false pairs follow real lesions *on average*, but which pairs an
    image allows (its organs, its own lesions excluded) skews the draw; over a whole item set a
    classifier then learns "consolidation is usually false". With a balance, the false pair is drawn
    among the allowed pairs that false premises have named least often relative to true ones (the
    largest deficit), and an item whose real pair false premises cannot keep up with gets neither
    kind (``accepts``), so both kinds name each pair about equally often. Deterministic in item order."""

    def __init__(self):
        self.true: dict[str, dict[Pair, int]] = defaultdict(lambda: defaultdict(int))
        self.false: dict[str, dict[Pair, int]] = defaultdict(lambda: defaultdict(int))

    slack: int = 1

    def deficit(self, category: str, pair: Pair) -> int:
        return self.true[category][pair] - self.false[category][pair]

    def accepts(self, category: str, true_pair: Pair) -> bool:
        """May another item whose real lesion is ``true_pair`` get premise variants? Not while true
        premises name that pair more than ``slack`` times more often than false ones (images rarely
        allow a false premise to name it, e.g. a mass in the brain when most brains hold one)."""
        return self.deficit(category, true_pair) < self.slack

    def most_needed(self, category: str, cands: list[tuple[Pair, float]]) -> list[tuple[Pair, float]]:
        best = max(self.deficit(category, c) for c, _ in cands)
        top = [(c, w) for c, w in cands if self.deficit(category, c) == best]
        return top if sum(w for _, w in top) > 1e-9 else [(c, 1.0) for c, _ in top]

    def record(self, category: str, true_pair: Pair, false_pair: Pair) -> None:
        self.true[category][true_pair] += 1
        self.false[category][false_pair] += 1


# ---------------------------------------------------------------- question
def _organ_regex(name: str) -> re.Pattern:
    """`name` as a word; a bare side-less organ ("kidney") never matches inside "left kidney"."""
    return re.compile(rf"(?<!left )(?<!right )\b{re.escape(name)}\b", re.I)


def sub_organ(question: str, src: str | None, organ: str) -> str | None:
    """`question` with the organ `src` (or its last word: "right kidney" -> "kidney") replaced by
    `organ`; None when the question does not mention it."""
    for name in ([src, src.split()[-1]] if src else []):
        pat = re.compile(rf"\b{re.escape(name)}\b", re.I) if name == src else _organ_regex(name)
        if pat.search(question):
            return pat.sub(organ, question)
    return None


def premise_question(question: str, *, real_label: str, real_organ: str | None, label: str,
                     organ: str) -> tuple[str, str]:
    """(question re-targeted at "the {label} in the {organ}", how). Depends only on the item and the
    named pair, so true and false premises of one item have the same form."""
    named = f"the {label} in the {organ}"
    text = (sub_organ(question, real_organ, organ) or question) if real_organ else question
    located = rf"(?: (?:in|of|within) the {re.escape(organ)}\b)?"
    m = _REFERENCE.search(text)
    if m:
        end = m.end() + len(re.match(located, text[m.end():], re.I).group(0))
        return f"{text[:m.start()]}{_case_like(named, m.group(0))}{text[end:]}", "reference_replaced"
    m = re.search(rf"\bthe {re.escape(real_label)}\b{located}", text, re.I)
    if m:
        return f"{text[:m.start()]}{_case_like(named, m.group(0))}{text[m.end():]}", "label_replaced"
    return f"Consider {named}. {text}", "prefixed"


def _case_like(text: str, like: str) -> str:
    return text[:1].upper() + text[1:] if like[:1].isupper() else text


# ---------------------------------------------------------------- rejecting option
def phrasings(label: str, organ: str, *, named: bool = False) -> list[str]:
    """The rejecting phrasings; label-free ones only unless ``named``: a phrase that names the lesion
    pairs the premise's label with the options (a true premise's "no cyst is seen" beside "simple
    cyst"), which a text classifier reads as a tell."""
    return list(_phrasings(label, organ, named))


@lru_cache(maxsize=1024)
def _phrasings(label: str, organ: str, named: bool) -> tuple[str, ...]:
    seen, out = set(), []
    for p in REJECT_PHRASINGS:
        if not named and "{" in p:
            continue
        s = p.format(label=label, organ=organ)
        if s not in seen:
            seen.add(s)
            out.append(s)
    return tuple(out)


def length_rank(options: Sequence[str], index: int) -> int:
    """Stable-sort rank of options[index] by character length (equal lengths in display order)."""
    n = len(str(options[index]))
    return sum(1 for i, o in enumerate(options) if len(str(o)) < n or (len(str(o)) == n and i < index))


def rejecting_option(others: Sequence[str], *, label: str, organ: str, rng: random.Random) -> tuple[str, int, dict]:
    """(phrase, display position, info): where to insert a rejecting option among `others`
    (the other options, in display order) so that its length rank is uniform over 0..len(others)."""
    others = [str(o) for o in others]
    n = len(others) + 1
    target = rng.randrange(n)
    texts = [p for p in _phrasings(label, organ, False) if p not in others]
    lengths = [len(o) for o in others]
    ordered = sorted(lengths)
    strict, tied, near = [], [], []
    for p in texts:
        shorter = bisect_left(ordered, len(p))                # options shorter than p
        equal = bisect_right(ordered, len(p)) - shorter       # options as long as p
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
        # length_rank(others[:pos] + [p] + others[pos:], pos), counted on the lengths
        rank = {(p, pos): bisect_left(ordered, len(p)) + lengths[:pos].count(len(p)) for p, pos in combos}
        best = min(abs(r - target) for r in rank.values())
        phrase, pos = rng.choice([c for c in combos if abs(rank[c] - target) == best])
        how = "tied" if best == 0 else "nearest"
    shown = others[:pos] + [phrase] + others[pos:]
    return phrase, pos, {"target_length_rank": target, "length_rank": length_rank(shown, pos),
                         "rank_fit": how, "phrasing": REJECT_PHRASINGS.index(_template_of(phrase, label, organ))}


def _template_of(phrase: str, label: str, organ: str) -> str:
    return next(p for p in REJECT_PHRASINGS if p.format(label=label, organ=organ) == phrase)
