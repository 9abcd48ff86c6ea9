"""Adjudication rules: find where models, gold labels and annotators disagree (pure Python, no Django).

    from adjudication.rules import detect, cases_from_hits
    hits = detect(items, answers, conflicts)          # list[RuleHit], highest priority first
    cases = cases_from_hits(hits, items)              # list[CaseDraft], one per item_key / image

Inputs are plain facts (`ItemFact`, `ModelAnswer`, `AnnotatorConflict`); the Django side builds them from
rows and turns `CaseDraft`s into adjudication cases. Each rule is a named, documented function returning
`RuleHit`s with a priority in [0, 1]; `RULES` registers them by name.

Conventions shared by every rule:
- Only answers on the "clean" variant count unless a rule says otherwise.
- Duplicate answers (same model, item_id, variant_id) keep the first one in input order; duplicate items
  (same item_id) keep the first one. If a model has clean answers on several clean variants of one item,
  the one with the lowest variant_id is its clean answer.
- Answers about an item_id missing from `items` are ignored.
- A chain's *final* item is its item with the highest (stage, step), ties broken by the highest item_id;
  "chain order" means ascending (stage, step, item_id).
- Output does not depend on input order (apart from which duplicate counts as the first).
- `evidence` is JSON-serialisable: tuples become lists, keys are str.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

CLEAN = "clean"
ANSWERED = "answered"
CHOICE_TYPES = frozenset({"single_choice", "yes_no", "multi_choice"})
DENIAL_CATEGORIES = frozenset({"normal-vs-abnormal", "finding-presence"})
NEUTRAL_LATE_CATEGORIES = frozenset({"next-step", "report-verification", "rule-out-differential"})
DENIAL_STAGE = 2
LATE_STAGES = frozenset({3, 4})

CONTRADICTION_MODEL_PRIORITY = 0.7
CONTRADICTION_GOLD_PRIORITY = 0.95
ANNOTATOR_GOLD_PRIORITY = 0.8
ANNOTATOR_PRIORITY = 0.65
CASE_RULE_BONUS = 0.05

_EPS = 1e-9  # float slack for share thresholds (2/3 * 3 must reach 2)


# --------------------------------------------------------------------------------------------- data


@dataclass(frozen=True)
class ItemFact:
    """One QA item version. `gold` is normalized: str (single_choice, yes_no "yes"/"no", short_text),
    tuple of option texts (multi_choice), (x0, y0, x1, y1) floats (box)."""

    item_id: int
    item_key: str          # stable identity across versions of the item
    chain_id: int
    image_id: int
    stage: int             # 1..4
    step: int              # order inside the chain
    category: str
    answer_type: str
    gold: object


@dataclass(frozen=True)
class ModelAnswer:
    """One model's scored prediction on one variant of one item."""

    model: str
    item_id: int
    variant_id: int
    variant_kind: str      # "clean" or an adversarial kind
    outcome: str           # "answered" | "abstained" | "unparseable" | "error"
    value: object = None   # str, tuple of str, tuple of 4 floats (box) or None
    correct: bool = False
    iou: float | None = None


@dataclass(frozen=True)
class AnnotatorConflict:
    """A disagreement between annotators on one Label Studio task (item_id None: about the image)."""

    task_id: int
    image_id: int
    item_id: int | None
    kinds: tuple[str, ...]   # e.g. ("box_unmatched", "answer", "gold_answer")


@dataclass(frozen=True)
class RuleHit:
    """One place a rule fired. `models` are the models showing the pattern (sorted; () for gold- or
    annotator-level hits). `evidence` is JSON-serialisable and excluded from equality and hashing."""

    rule: str
    item_id: int | None
    image_id: int
    priority: float
    models: tuple[str, ...] = ()
    evidence: Mapping = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class RuleParams:
    """Thresholds. Raises ValueError for counts below 1 or shares / IoU outside [0, 1]."""

    consensus_min_models: int = 3        # answered models needed on the item's clean variant
    consensus_min_agree: int = 2
    consensus_share: float = 0.5         # k >= max(min_agree, ceil(share * n_answered))
    grounding_iou: float = 0.5
    robust_share: float = 2 / 3

    def __post_init__(self) -> None:
        for name in ("consensus_min_models", "consensus_min_agree"):
            if getattr(self, name) < 1:
                raise ValueError(f"RuleParams.{name} must be >= 1, got {getattr(self, name)!r}")
        for name in ("consensus_share", "grounding_iou", "robust_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"RuleParams.{name} must be within [0, 1], got {value!r}")


@dataclass(frozen=True)
class Rule:
    """A registered rule. `source` says what `detect` passes to `fn`: "answers" ->
    fn(items, answers, params); "conflicts" -> fn(conflicts)."""

    name: str
    title: str
    description: str
    fn: Callable[..., list[RuleHit]]
    source: Literal["answers", "conflicts"] = "answers"


@dataclass(frozen=True)
class CaseDraft:
    """Hits grouped for one adjudication case.

    key: "item:<item_key>" (all versions of an item share it), "image:<image_id>" for item-less hits, or
    "item-id:<item_id>" for a hit whose item is not in the `items` given to `cases_from_hits`.
    item_id / image_id: those of the case's top hit (hits[0]).
    priority: max hit priority + 0.05 per further distinct rule, capped at 1.0, rounded to 4 places.
    hits: sorted like `detect`; hits with the same (rule, item_id, models) kept once (the first in that order).
    """

    key: str
    item_id: int | None
    image_id: int
    priority: float
    hits: tuple[RuleHit, ...]


# --------------------------------------------------------------------------------------------- index


@dataclass(frozen=True)
class _Run:
    items: dict[int, ItemFact]                            # item_id -> item, in chain order
    clean: dict[int, dict[str, ModelAnswer]]              # item_id -> model -> clean answer
    adversarial: dict[tuple[str, int], list[ModelAnswer]]  # (model, item_id) -> non-clean answers
    chains: dict[int, list[ItemFact]]                     # chain_id -> items in chain order

    def answer(self, model: str, item_id: int) -> ModelAnswer | None:
        return self.clean.get(item_id, {}).get(model)


def _chain_order(item: ItemFact) -> tuple[int, int, int]:
    return (item.stage, item.step, item.item_id)


def _index(items: Sequence[ItemFact], answers: Sequence[ModelAnswer]) -> _Run:
    """Dedupe items (first per item_id) and answers (first per model/item/variant), drop answers about
    unknown items, pick each model's clean answer (lowest clean variant_id) and group the rest."""
    by_id: dict[int, ItemFact] = {}
    for item in items:
        by_id.setdefault(item.item_id, item)
    ordered = sorted(by_id.values(), key=_chain_order)
    seen: set[tuple[str, int, int]] = set()
    clean: dict[int, dict[str, ModelAnswer]] = defaultdict(dict)
    adversarial: dict[tuple[str, int], list[ModelAnswer]] = defaultdict(list)
    for ans in answers:
        ident = (ans.model, ans.item_id, ans.variant_id)
        if ident in seen or ans.item_id not in by_id:
            continue
        seen.add(ident)
        if ans.variant_kind == CLEAN:
            current = clean[ans.item_id].get(ans.model)
            if current is None or ans.variant_id < current.variant_id:
                clean[ans.item_id][ans.model] = ans
        else:
            adversarial[(ans.model, ans.item_id)].append(ans)
    chains: dict[int, list[ItemFact]] = defaultdict(list)
    for item in ordered:
        chains[item.chain_id].append(item)
    return _Run({i.item_id: i for i in ordered}, dict(clean), dict(adversarial), dict(sorted(chains.items())))


def _jsonable(value: object) -> object:
    """Tuples/lists -> lists (recursively); everything else unchanged."""
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value


def _canonical(value: object, answer_type: str) -> object:
    """Hashable comparison form: sequences -> tuples; multi_choice compared as sets (sorted by repr)."""
    if isinstance(value, (tuple, list)):
        values = tuple(_canonical(v, "") for v in value)
        return tuple(sorted(values, key=repr)) if answer_type == "multi_choice" else values
    return value


def hit_sort_key(hit: RuleHit) -> tuple:
    """(-priority, rule, item_id or -1, image_id), then models and evidence JSON as final tie-breakers."""
    evidence = json.dumps(hit.evidence, sort_keys=True, default=repr)
    return (-hit.priority, hit.rule, -1 if hit.item_id is None else hit.item_id, hit.image_id, hit.models, evidence)


def _sorted(hits: list[RuleHit]) -> list[RuleHit]:
    return sorted(hits, key=hit_sort_key)


# --------------------------------------------------------------------------------------------- rules


def consensus_needed(n_answered: int, params: RuleParams) -> int:
    """Agreeing wrong answers needed among n answered models: max(min_agree, ceil(share * n))."""
    return max(params.consensus_min_agree, math.ceil(params.consensus_share * n_answered - _EPS))


def model_consensus(items: Sequence[ItemFact], answers: Sequence[ModelAnswer], params: RuleParams) -> list[RuleHit]:
    """Possible label error: several models agree on the same non-gold answer.

    Per item with answer_type single_choice, yes_no or multi_choice and a gold that is not None:
    n = models whose clean answer has outcome "answered". If n >= consensus_min_models, among those answers
    whose value is not None and differs from gold (multi_choice compared as sets) take the most common value
    (ties: smallest repr of its canonical form); k = its count. Hit when k >= consensus_needed(n).
    priority = round(0.5 + 0.5 * k / n, 4); models = the k models, sorted;
    evidence = {"answer": value, "gold": gold, "agree": k, "answered": n} (multi_choice values sorted).
    Abstained / unparseable / error answers count neither in n nor in k.
    """
    run = _index(items, answers)
    hits = []
    for item in run.items.values():
        if item.answer_type not in CHOICE_TYPES or item.gold is None:
            continue
        answered = [a for a in run.clean.get(item.item_id, {}).values() if a.outcome == ANSWERED]
        n = len(answered)
        if n < params.consensus_min_models:
            continue
        gold = _canonical(item.gold, item.answer_type)
        wrong: dict[object, list[str]] = defaultdict(list)
        for ans in answered:
            value = _canonical(ans.value, item.answer_type)
            if value is not None and value != gold:
                wrong[value].append(ans.model)
        if not wrong:
            continue
        value, models = min(wrong.items(), key=lambda kv: (-len(kv[1]), repr(kv[0])))
        k = len(models)
        if k < consensus_needed(n, params):
            continue
        hits.append(RuleHit(
            rule="model_consensus", item_id=item.item_id, image_id=item.image_id,
            priority=round(0.5 + 0.5 * k / n, 4), models=tuple(sorted(models)),
            evidence={"answer": _jsonable(value), "gold": _jsonable(gold), "agree": k, "answered": n},
        ))
    return _sorted(hits)


def _weak_grounding(ans: ModelAnswer | None, params: RuleParams) -> bool:
    """Missing, not answered, IoU None / NaN or IoU < grounding_iou."""
    return ans is None or ans.outcome != ANSWERED or ans.iou is None or not ans.iou >= params.grounding_iou


def right_answer_wrong_evidence(
    items: Sequence[ItemFact], answers: Sequence[ModelAnswer], params: RuleParams,
) -> list[RuleHit]:
    """Right final answer reached without the evidence: weak grounding or wrong earlier steps.

    Per chain, final = its item with the highest (stage, step). For each model whose clean answer on final is
    correct, collect over the chain's other items (final itself excluded), in chain order:
    (a) weak_grounding: answer_type "box" items where the model's clean answer is missing, not "answered",
        or has iou None / NaN / < grounding_iou -> {"item": id, "iou": iou or None};
    (b) wrong_earlier: items with stage < final.stage whose clean answer exists and is not correct (any outcome;
        a box item can be listed in both).
    One hit on final when some model has (a) or (b): models = those models, sorted;
    evidence = {"models": {model: {"weak_grounding": [...], "wrong_earlier": [ids]}}};
    priority = round(0.55 + 0.35 * len(models) / (models with any clean answer on final), 4).
    """
    run = _index(items, answers)
    hits = []
    for chain in run.chains.values():
        final = chain[-1]
        on_final = run.clean.get(final.item_id, {})
        pattern: dict[str, dict] = {}
        for model in sorted(on_final):
            if not on_final[model].correct:
                continue
            weak, wrong = [], []
            for item in chain[:-1]:
                ans = run.answer(model, item.item_id)
                if item.answer_type == "box" and _weak_grounding(ans, params):
                    weak.append({"item": item.item_id, "iou": None if ans is None else ans.iou})
                if item.stage < final.stage and ans is not None and not ans.correct:
                    wrong.append(item.item_id)
            if weak or wrong:
                pattern[model] = {"weak_grounding": weak, "wrong_earlier": wrong}
        if pattern:
            hits.append(RuleHit(
                rule="right_answer_wrong_evidence", item_id=final.item_id, image_id=final.image_id,
                priority=round(0.55 + 0.35 * len(pattern) / len(on_final), 4), models=tuple(pattern),
                evidence={"models": pattern},
            ))
    return _sorted(hits)


def chain_contradiction(items: Sequence[ItemFact], answers: Sequence[ModelAnswer], params: RuleParams) -> list[RuleHit]:
    """A chain that denies a finding at stage 2 yet goes on to characterize / diagnose it.

    Denial items: stage-2 items in DENIAL_CATEGORIES. Late items: stage-3/4 items whose category is not in
    NEUTRAL_LATE_CATEGORIES. Both hits sit on the chain's final item (highest stage, step).
    (a) model level, priority 0.7: models that answered "no" (outcome "answered", value == "no") on the clean
        variant of a denial item and gave an "answered" clean answer to a late item; models sorted;
        evidence = {"denials": {model: [ids]}, "asserted": {model: [ids]}} (ids in chain order).
    (b) gold level, priority 0.95, models (): some denial item has gold "no" and the chain has late items;
        evidence = {"denial_item": first such denial item in chain order, "late_items": [ids]}.
    A chain can yield both hits. `params` is unused (uniform signature).
    """
    run = _index(items, answers)
    hits = []
    for chain in run.chains.values():
        final = chain[-1]
        denial_items = [i for i in chain if i.stage == DENIAL_STAGE and i.category in DENIAL_CATEGORIES]
        late_items = [i for i in chain if i.stage in LATE_STAGES and i.category not in NEUTRAL_LATE_CATEGORIES]
        if not denial_items or not late_items:
            continue
        models = sorted({m for i in chain for m in run.clean.get(i.item_id, {})})
        denials: dict[str, list[int]] = {}
        asserted: dict[str, list[int]] = {}
        for model in models:
            denied = [i.item_id for i in denial_items if _said_no(run.answer(model, i.item_id))]
            claimed = [i.item_id for i in late_items if _answered(run.answer(model, i.item_id))]
            if denied and claimed:
                denials[model], asserted[model] = denied, claimed
        if denials:
            hits.append(RuleHit(
                rule="chain_contradiction", item_id=final.item_id, image_id=final.image_id,
                priority=CONTRADICTION_MODEL_PRIORITY, models=tuple(denials),
                evidence={"denials": denials, "asserted": asserted},
            ))
        gold_denials = [i for i in denial_items if i.gold == "no"]
        if gold_denials:
            hits.append(RuleHit(
                rule="chain_contradiction", item_id=final.item_id, image_id=final.image_id,
                priority=CONTRADICTION_GOLD_PRIORITY, models=(),
                evidence={"denial_item": gold_denials[0].item_id, "late_items": [i.item_id for i in late_items]},
            ))
    return _sorted(hits)


def _answered(ans: ModelAnswer | None) -> bool:
    return ans is not None and ans.outcome == ANSWERED


def _said_no(ans: ModelAnswer | None) -> bool:
    return _answered(ans) and ans.value == "no"


def adversarial_flip(items: Sequence[ItemFact], answers: Sequence[ModelAnswer], params: RuleParams) -> list[RuleHit]:
    """A model flips under an adversarial variant on an item most models answer robustly.

    Per item, among models whose clean answer is correct: robust = every non-clean answer it has for the item
    is correct; flipped = at least one is not (any outcome; abstaining counts as not correct). Models without
    non-clean answers are neither. With m = robust + flipped: hit when m >= 2, flipped >= 1 and
    robust / m >= robust_share. models = flipped models, sorted;
    evidence = {"flipped": {model: sorted kinds it got wrong}, "robust": sorted robust models};
    priority = round(0.4 + 0.2 * robust / m, 4).
    """
    run = _index(items, answers)
    hits = []
    for item in run.items.values():
        clean = run.clean.get(item.item_id, {})
        robust: list[str] = []
        flipped: dict[str, list[str]] = {}
        for model in sorted(clean):
            adversarial = run.adversarial.get((model, item.item_id), [])
            if not clean[model].correct or not adversarial:
                continue
            wrong_kinds = sorted({a.variant_kind for a in adversarial if not a.correct})
            if wrong_kinds:
                flipped[model] = wrong_kinds
            else:
                robust.append(model)
        m = len(robust) + len(flipped)
        if m < 2 or not flipped or len(robust) / m < params.robust_share - _EPS:
            continue
        hits.append(RuleHit(
            rule="adversarial_flip", item_id=item.item_id, image_id=item.image_id,
            priority=round(0.4 + 0.2 * len(robust) / m, 4), models=tuple(flipped),
            evidence={"flipped": flipped, "robust": robust},
        ))
    return _sorted(hits)


def annotator_disagreement(conflicts: Sequence[AnnotatorConflict]) -> list[RuleHit]:
    """Annotators disagree on a Label Studio task.

    One hit per distinct conflict (exact duplicates kept once), on its item (item_id None: about the image;
    item ids are not checked against any item list). priority 0.8 when "gold_answer" is among its kinds,
    else 0.65; models (); evidence = {"task": task_id, "kinds": list(kinds)} (kinds in given order).
    `detect` calls it with its `conflicts` argument (Rule.source == "conflicts").
    """
    hits = []
    for conflict in dict.fromkeys(conflicts):
        priority = ANNOTATOR_GOLD_PRIORITY if "gold_answer" in conflict.kinds else ANNOTATOR_PRIORITY
        hits.append(RuleHit(
            rule="annotator_disagreement", item_id=conflict.item_id, image_id=conflict.image_id,
            priority=priority, evidence={"task": conflict.task_id, "kinds": list(conflict.kinds)},
        ))
    return _sorted(hits)


RULES: dict[str, Rule] = {
    rule.name: rule for rule in (
        Rule("model_consensus", "Models agree against gold",
             "Several models give the same non-gold answer on the clean item: possible label error.",
             model_consensus),
        Rule("right_answer_wrong_evidence", "Right answer, wrong evidence",
             "A model gets the chain's final answer right with weak grounding or wrong earlier steps.",
             right_answer_wrong_evidence),
        Rule("chain_contradiction", "Chain contradiction",
             "A finding denied at stage 2 is characterized or diagnosed later (by a model or by the gold labels).",
             chain_contradiction),
        Rule("adversarial_flip", "Adversarial flip",
             "A model flips under an adversarial variant on an item most models answer robustly.",
             adversarial_flip),
        Rule("annotator_disagreement", "Annotator disagreement",
             "Annotators disagree on a Label Studio task (boxes, answers or gold).",
             annotator_disagreement, source="conflicts"),
    )
}


# --------------------------------------------------------------------------------------------- entry points


def _selected(rules: Collection[str] | None) -> list[str]:
    """All rule names by default; a bare str counts as one name; unknown names -> ValueError."""
    if rules is None:
        return list(RULES)
    names = [rules] if isinstance(rules, str) else list(rules)
    unknown = sorted(set(names) - set(RULES))
    if unknown:
        raise ValueError(f"unknown rule(s) {unknown}; known rules: {sorted(RULES)}")
    return [name for name in RULES if name in names]


def detect(
    items: Sequence[ItemFact],
    answers: Sequence[ModelAnswer],
    conflicts: Sequence[AnnotatorConflict] = (),
    params: RuleParams | None = None,
    rules: Collection[str] | None = None,
) -> list[RuleHit]:
    """Run the selected rules (all by default) and return their hits sorted by `hit_sort_key`
    ((-priority, rule, item_id or -1, image_id), then models and evidence). Answer rules get
    (items, answers, params); conflict rules get `conflicts`. Unknown rule names raise ValueError."""
    params = params or RuleParams()
    hits: list[RuleHit] = []
    for name in _selected(rules):
        rule = RULES[name]
        hits.extend(rule.fn(conflicts) if rule.source == "conflicts" else rule.fn(items, answers, params))
    return _sorted(hits)


def _case_key(hit: RuleHit, items: Mapping[int, ItemFact]) -> str:
    if hit.item_id is None:
        return f"image:{hit.image_id}"
    item = items.get(hit.item_id)
    return f"item:{item.item_key}" if item is not None else f"item-id:{hit.item_id}"


def cases_from_hits(hits: Sequence[RuleHit], items: Sequence[ItemFact]) -> list[CaseDraft]:
    """Group hits into one `CaseDraft` per item_key (versions of one item share a case) or per image for
    item-less hits; see `CaseDraft` for the fields. Returns drafts sorted by (-priority, key)."""
    by_id: dict[int, ItemFact] = {}
    for item in items:
        by_id.setdefault(item.item_id, item)
    groups: dict[str, list[RuleHit]] = defaultdict(list)
    for hit in hits:
        groups[_case_key(hit, by_id)].append(hit)
    drafts = []
    for key, group in groups.items():
        seen: set[tuple] = set()
        unique: list[RuleHit] = []
        for hit in _sorted(group):
            ident = (hit.rule, hit.item_id, hit.models)
            if ident not in seen:
                seen.add(ident)
                unique.append(hit)
        top = unique[0]
        n_rules = len({h.rule for h in unique})
        priority = round(min(1.0, top.priority + CASE_RULE_BONUS * (n_rules - 1)), 4)
        drafts.append(CaseDraft(key=key, item_id=top.item_id, image_id=top.image_id, priority=priority,
                                hits=tuple(unique)))
    return sorted(drafts, key=lambda d: (-d.priority, d.key))
