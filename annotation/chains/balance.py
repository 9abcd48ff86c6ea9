"""Answer balance across a whole item set (pure Python, no Django).

A chain is generated one image at a time, but the shortcuts a blind model exploits live in the
whole set: a category whose gold is "yes" 70% of the time, an option that is never the gold, a
question text that predicts its answer. ``Balancer`` keeps running counts per category while the
chains are generated (in a fixed image order, so the result is deterministic) and is consulted at
three points:

1. **which fact becomes the question** (``rank``): a rule may offer several candidate drafts
   ("yes" about the lesion, "no" about an absent finding); the candidate whose answer is rarest
   for its question text (numbers blanked, so box coordinates do not make every text unique), then
   the one whose value is least often the gold among its appearances as an option, is tried first;
2. **whether a category is asked on this image** (``accepts``): a gold that is already more
   frequent than the rarest gold of its category by more than ``tolerance`` (relative) plus
   ``slack`` (absolute) is refused, and so is a single-choice gold that is already the answer in
   more than its fair share (the mean of 1 / number of options over the items that showed it) +
   ``share_tolerance`` of those items (a value the rule's distractor pool never holds); the
   generator then asks another category
   of the stage. Facts are never invented: balance comes from choosing among true facts, at the
   price of coverage;
3. **which distractors are shown** (``pick_distractors``): every option value should be the gold
   in its fair share of its appearances (1 / number of options). A value is offered as a
   distractor in proportion to how often it is the gold; a value that was never the gold of the
   category is not offered at all (so no option is structurally never-gold).

Only choice-like answers are balanced (single choice, yes/no); boxes, free text and multi-select
sets pass through.

``observe`` feeds existing items (the service seeds the counts from the database before a
resumed run), ``record`` is called by the generator for every step it emits. The generator keys the
counts by category *and* patient-level split (``balance_key``), so the held-out test split is
balanced by construction, not only the whole set.
"""
from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from annotation.splits import split_for_group

BALANCED_TYPES = frozenset({"single_choice", "yes_no"})


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _key(v: Any) -> Hashable:
    return tuple(v) if isinstance(v, list) else v


def balance_key(category: str, split_group: str) -> str:
    """Counts are kept per category and split: 'margin@test'."""
    return f"{category}@{split_for_group(split_group) if split_group else ''}"


def question_key(question: str) -> str:
    """A question's text with its numbers blanked: "… the cyst? The marked box is (#, #, #, #)." is one
    text whatever the box, so the answers of box questions are balanced per named structure."""
    return _NUMBER.sub("#", question)


class Balancer:
    """Running per-category answer counts (see the module docstring)."""

    def __init__(self, *, tolerance: float = 0.1, slack: int = 2, share_tolerance: float = 0.15,
                 min_share_evidence: int = 5):
        if tolerance < 0 or slack < 0 or share_tolerance < 0:
            raise ValueError("tolerance, slack and share_tolerance must be >= 0")
        self.tolerance, self.slack = float(tolerance), int(slack)
        self.share_tolerance, self.min_share_evidence = float(share_tolerance), int(min_share_evidence)
        self.gold: dict[str, Counter] = defaultdict(Counter)          # category -> gold value -> n
        self.by_question: dict[tuple, Counter] = defaultdict(Counter)  # (category, question) -> gold -> n
        self.distractor: dict[str, Counter] = defaultdict(Counter)    # category -> value -> n shown, not gold
        self.fair: dict[str, dict] = defaultdict(lambda: defaultdict(float))   # value -> sum of 1/n_options shown
        self.n_items: Counter = Counter()
        self.n_distractors: Counter = Counter()

    # ------------------------------------------------------------------ counts
    def record(self, category: str, answer_type: str, question: str, options: Sequence, gold: Any) -> None:
        if answer_type not in BALANCED_TYPES:
            return
        g = _key(gold)
        self.gold[category][g] += 1
        self.by_question[(category, question_key(question))][g] += 1
        self.n_items[category] += 1
        for o in options:
            self.fair[category][_key(o)] += 1.0 / len(options)
            if _key(o) != g:
                self.distractor[category][_key(o)] += 1
                self.n_distractors[category] += 1

    observe = record   # seeding from existing items is the same bookkeeping

    # ------------------------------------------------------------------ decisions
    def _excess(self, counts: Counter, gold: Hashable) -> float:
        """How far ``gold`` is above (or, negative, below) the rarest other gold already seen."""
        others = [n for v, n in counts.items() if v != gold]
        if not others:
            return 0.0
        return float(counts[gold] - min(others))

    def accepts(self, category: str, answer_type: str, gold: Any) -> bool:
        """May one more item of ``category`` with this gold be generated?"""
        if answer_type not in BALANCED_TYPES:
            return True
        counts, g = self.gold[category], _key(gold)
        if answer_type == "single_choice" and counts[g] >= self.min_share_evidence:
            # no value may be mostly the answer where it appears (a distractor pool that never holds it):
            # its fair share is the mean of 1/n_options over the items that showed it
            appeared = counts[g] + self.distractor[category].get(g, 0)
            fair = self.fair[category].get(g, 0.0) / appeared
            if (counts[g] + 1) / (appeared + 1) > fair + self.share_tolerance:
                return False
        others = [n for v, n in counts.items() if v != g]
        if not others:           # only one gold value seen so far: a lead of slack + 1 at most (a category
            return counts[g] <= self.slack   # whose data hold a single answer is not worth asking)
        return counts[g] + 1 <= min(others) * (1 + self.tolerance) + self.slack

    def rank(self, category: str, answer_type: str, candidates: Sequence[tuple[str, Any]]) -> list[int]:
        """Indices of (question, gold) candidates, the most needed first (stable for ties)."""
        if answer_type not in BALANCED_TYPES or len(candidates) < 2:
            return list(range(len(candidates)))
        counts = self.gold[category]

        shown = self.distractor[category]

        def need(i):
            q, gold = candidates[i]
            g = _key(gold)
            # 1. the answer its question text lacks; 2. the value least often the gold among its
            # appearances (for a fixed option set this is the rarest gold); 3. the rarest gold
            share = (counts[g] + 1) / (counts[g] + shown.get(g, 0) + 2)
            return (self._excess(self._question_counts(category, q, counts), g), round(share, 6),
                    self._excess(counts, g), i)
        return sorted(range(len(candidates)), key=need)

    def _question_counts(self, category: str, question: str, counts: Counter) -> Counter:
        """Gold counts of this question text, with every gold of the category present (0 if unseen)."""
        per_q = self.by_question.get((category, question_key(question)), Counter())
        return Counter({v: per_q.get(v, 0) for v in counts} | dict(per_q))

    def pick_distractors(self, category: str, gold: Any, candidates: Sequence, want: int,
                         rng: random.Random) -> list:
        """Up to ``want`` distractors from ``candidates`` (plausibility order), fair-share first.

        Each value's deficit is ``r * gold_count - distractor_count`` with ``r`` the category's mean
        number of distractors per item; the most under-shown values are offered first, and values
        never seen as the gold of the category are left out (fewer options rather than a never-gold
        one). At least one distractor is returned when any candidate exists."""
        golds, shown = self.gold[category], self.distractor[category]
        n = self.n_items[category]
        r = self.n_distractors[category] / n if n else float(want)
        r = max(r, 1.0)
        g = _key(gold)
        pool = [c for c in dict.fromkeys(candidates) if _key(c) != g]
        if not pool:
            return []
        jitter = {c: rng.random() for c in pool}
        seen = [c for c in pool if golds.get(_key(c), 0) > 0]
        if not seen:     # nothing known yet (the first items of a category): plausibility order
            return pool[:1] if n else rng.sample(pool, min(want, len(pool)))
        deficit = {c: r * golds[_key(c)] - shown.get(_key(c), 0) for c in seen}
        return sorted(seen, key=lambda c: (-deficit[c], jitter[c]))[:want]
