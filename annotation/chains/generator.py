"""Deterministic stepwise chain generator (pure Python, no Django).

``generate_chain(facts, categories, seed=..., balancer=...)`` walks S1 -> S2 -> S3 -> S4. For each
stage it picks ``policy.steps_per_stage`` applicable categories in a seeded order (a category is
applicable when its rule derives a candidate fact from the image's data and the balancer accepts
its answer) and keeps them in taxonomy order within the stage. Images without a lesion stop after S2
(S3/S4 are about the index lesion). With a ``Balancer`` (balance.py), candidate facts, acceptance
and distractors keep the answers of the whole item set balanced; without one, a seeded candidate.

Determinism: every draw comes from ``random.Random(f"{seed}:{image_id}:{key}")`` (string seeds are
hashed with SHA-512, stable across processes; Python's ``hash()`` is never used). Option order comes
from its own ``random.Random(option_seed)``, recorded in the step meta.

Speed: category definitions are validated and compiled once per category set (a small identity
cache, or ``prepare_categories()`` explicitly); the per-image path does no pydantic validation.
Mutating a CategoryDef's rule dict after it was prepared is not seen by the cache.
"""
from __future__ import annotations

import operator
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .balance import Balancer, balance_key
from .definitions import STAGE_CODES, validate_category
from .rules import LESION_REFERENCE, Ctx, Draft, RuleBase
from .types import CategoryDef, ImageFacts, StepSpec

YES_NO_OPTIONS = ("yes", "no")
LESION_STAGES = frozenset({"S3", "S4"})
_ARTICLE = re.compile(r"\b([Aa])n? \{(\w+)\}")
_PLURAL = re.compile(r"\{(\w+)\}s\b")
_IRREGULAR = {"calculus": "calculi", "metastasis": "metastases", "diagnosis": "diagnoses"}


@dataclass(frozen=True)
class ChainPolicy:
    """How many categories per stage, how many options, which categories (codes) may be used."""

    steps_per_stage: int = 1
    n_options: int = 4
    include_categories: frozenset | None = None

    def __post_init__(self):
        if self.steps_per_stage < 0 or self.n_options < 2:
            raise ValueError("steps_per_stage must be >= 0 and n_options >= 2")


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def plural(phrase: str) -> str:
    head, _, last = phrase.rpartition(" ")
    if last in _IRREGULAR:
        last = _IRREGULAR[last]
    elif last.endswith(("s", "x", "ch", "sh")):
        last += "es"
    elif last.endswith("y") and last[-2:-1] not in ("a", "e", "i", "o", "u"):
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}" if head else last


@dataclass(frozen=True)
class Template:
    """'Is there a {finding}' -> article-aware; '{finding}s' -> plural-aware; box suffix appended."""

    fmt: str
    articles: tuple[tuple[str, str], ...]    # (placeholder, 'a' | 'A')
    plurals: tuple[str, ...]

    @classmethod
    def compile(cls, text: str, suffix: str = "") -> Template:
        if suffix and "{box}" not in text:
            text += suffix
        arts = tuple((m.group(2), m.group(1)) for m in _ARTICLE.finditer(text))
        text = _ARTICLE.sub(lambda m: f"{{{m.group(2)}__a{m.group(1)}}}", text)
        plurals = tuple(_PLURAL.findall(text))
        return cls(_PLURAL.sub(r"{\1__pl}", text), arts, plurals)

    def render(self, values: dict) -> str:
        v = dict(values)
        for name, a in self.articles:
            word = f"{article(v[name])} {v[name]}"
            v[f"{name}__a{a}"] = word[0].upper() + word[1:] if a == "A" else word
        for name in self.plurals:
            v[f"{name}__pl"] = plural(v[name])
        return self.fmt.format_map(v)


@dataclass(frozen=True)
class Compiled:
    code: str
    stage: str
    answer_type: str
    templates: tuple[Template, ...]
    rule: RuleBase


class PreparedCategories(tuple):
    """A validated, compiled category set (a tuple of CategoryDef, usable wherever one is expected)."""

    compiled: dict[str, list[Compiled]]

    def __new__(cls, categories: Sequence[CategoryDef]):
        self = super().__new__(cls, categories)
        self.compiled = {s: [] for s in STAGE_CODES}
        for c in categories:
            m = validate_category({"code": c.code, "name": c.name, "stage": c.stage,
                                   "answer_type": c.answer_type, "templates": list(c.templates), "rule": c.rule})
            suffix = getattr(m.rule, "box_suffix", "")
            tpl = tuple(Template.compile(t, suffix) for t in m.templates)
            self.compiled[m.stage].append(Compiled(m.code, m.stage, m.answer_type, tpl, m.rule))
        return self


_CACHE: dict[tuple[int, ...], PreparedCategories] = {}
_LAST: list = [None]     # fast path: the same sequence object as last time (it is held, so its id is unique)


def prepare_categories(categories: Sequence[CategoryDef]) -> PreparedCategories:
    """Validate and compile once; repeated calls with the same CategoryDef objects hit a cache."""
    if isinstance(categories, PreparedCategories):
        return categories
    if not isinstance(categories, (list, tuple)):
        categories = tuple(categories)
    last = _LAST[0]
    if last is not None and last[0] is categories and len(last[1]) == len(categories) \
            and all(map(operator.is_, last[1], categories)):
        return last[1]
    key = tuple(id(c) for c in categories)
    hit = _CACHE.get(key)
    if hit is None or any(a is not b for a, b in zip(hit, categories)):
        if len(_CACHE) >= 16:
            _CACHE.clear()
        hit = _CACHE[key] = PreparedCategories(categories)   # holds the objects, so ids stay unique
    _LAST[0] = (categories, hit)
    return hit


def _question(c: Compiled, d: Draft, rng: random.Random, ctx: Ctx) -> tuple[str, int]:
    t_index = rng.randrange(len(c.templates)) if len(c.templates) > 1 else 0
    values = {"modality": ctx.facts.modality, "body_region": (ctx.facts.body_region or "").lower(),
              "lesion": LESION_REFERENCE, **d.values}
    try:
        return c.templates[t_index].render(values), t_index
    except KeyError as e:   # a rule kind that does not provide a placeholder it declares
        raise RuntimeError(f"category {c.code!r}: rule {c.rule.kind!r} gave no value for {e}") from None


def _assemble(c: Compiled, d: Draft, question: str, t_index: int, rng: random.Random, ctx: Ctx, n: int,
              balancer: Balancer | None, key: str = "") -> tuple | None:
    """(question, options, gold, meta) or None when too few distinct distractors exist."""
    meta = {"template_index": t_index, "option_seed": None, "rule_kind": c.rule.kind,
            "focus_box_id": ctx.index.id if ctx.index is not None else None,
            "focus_finding_id": ctx.index.finding_id if ctx.index is not None else None, **d.meta}
    if getattr(c.rule, "answer_with_box", False):
        meta["answer_with_box"] = True
    at, gold = c.answer_type, d.gold
    if at == "yes_no":
        return question, list(YES_NO_OPTIONS), gold, meta
    if at == "box":
        return question, [], gold, meta
    if at == "short_text":
        return question, [], gold, meta
    golds = gold if at == "multi_choice" else [gold]
    options = d.options
    if options is None:
        want = max(1, n - len(golds))
        if balancer is not None and at == "single_choice":
            cands = [x for tier in d.tiers for x in tier]
            picked = balancer.pick_distractors(key, gold, cands, want, rng)
        else:
            seen, picked = set(golds), []
            for tier in d.tiers:
                need = want - len(picked)
                if need <= 0:
                    break
                cand = [x for x in dict.fromkeys(tier) if x not in seen]
                take = cand if len(cand) <= need else rng.sample(cand, need)
                picked += take
                seen.update(take)
        if not picked:
            return None
        options = golds + picked
    options = list(options)
    seed = rng.getrandbits(32)
    random.Random(seed).shuffle(options)
    meta["option_seed"] = seed
    if at == "multi_choice":
        gs = set(golds)
        gold = [o for o in options if o in gs]
    return question, options, gold, meta


def _step_for(c: Compiled, ctx: Ctx, rng: random.Random, n: int, balancer: Balancer | None):
    """(draft, (question, options, gold, meta)) for the first candidate fact that the balance
    allows (the most needed first), or None."""
    key = balance_key(c.code, ctx.facts.split_group)
    drafts = [d for d in c.rule.candidates(ctx, rng, n) if d is not None]
    if not drafts:
        return None
    asked = [_question(c, d, rng, ctx) for d in drafts]
    if balancer is None:      # one image on its own: any true fact, chosen by seed
        order = list(range(len(drafts)))
        rng.shuffle(order)
    else:
        order = balancer.rank(key, c.answer_type, [(d.meta.get("balance_key", q), d.gold)
                                                   for (q, _), d in zip(asked, drafts)])
    for i in order:
        d = drafts[i]
        if balancer is not None and not balancer.accepts(key, c.answer_type, d.gold):
            continue
        built = _assemble(c, d, *asked[i], rng, ctx, n, balancer, key)
        if built is not None:
            return d, built
    return None


def generate_chain(facts: ImageFacts, categories: Sequence[CategoryDef], *, seed: int,
                   policy: ChainPolicy = ChainPolicy(), balancer: Balancer | None = None) -> list[StepSpec]:
    """The ordered steps of one image's chain (deterministic in facts, categories, seed and the
    balancer's counts). With a ``balancer`` the steps are recorded in it."""
    prepared = prepare_categories(categories)
    ctx = Ctx(facts)
    include, k = policy.include_categories, policy.steps_per_stage
    steps: list[StepSpec] = []
    stage_rng = random.Random(f"{seed}:{facts.image_id}:stages")
    for stage in STAGE_CODES:
        if stage in LESION_STAGES and ctx.index is None:
            break
        cats = [c for c in prepared.compiled[stage] if include is None or c.code in include]
        if not cats or k <= 0:
            continue
        order = list(range(len(cats)))
        stage_rng.shuffle(order)
        chosen = []
        for i in order:
            c = cats[i]
            rng = random.Random(f"{seed}:{facts.image_id}:{c.code}")
            n = c.rule.n_options or policy.n_options
            found = _step_for(c, ctx, rng, n, balancer)
            if found is not None:
                chosen.append((i, c, *found))
                if len(chosen) == k:
                    break
        for _, c, d, (question, options, gold, meta) in sorted(chosen, key=lambda x: x[0]):
            steps.append(StepSpec(step=len(steps) + 1, stage=c.stage, category=c.code, answer_type=c.answer_type,
                                  question=question, options=options, gold=gold,
                                  evidence_box_ids=tuple(d.evidence), meta=meta))
            if balancer is not None:
                balancer.record(balance_key(c.code, facts.split_group), c.answer_type,
                                meta.get("balance_key", question), options, gold)
    return steps
