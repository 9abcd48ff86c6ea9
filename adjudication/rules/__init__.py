"""Adjudication rules: find where models, gold labels and annotators disagree (pure Python, no Django).

    from adjudication.rules import detect, cases_from_hits
    hits = detect(items, answers, conflicts)          # list[RuleHit], highest priority first
    cases = cases_from_hits(hits, items)              # list[CaseDraft], one per item_key / image

Inputs are plain facts (`ItemFact`, `ModelAnswer`, `AnnotatorConflict`); the Django side builds them from
rows and turns `CaseDraft`s into adjudication cases. Each rule is a named, documented function returning
`RuleHit`s with a priority in [0, 1]; `RULES` registers them by name.

Parts: `data` (the facts, hits, drafts and thresholds, and the index the rules read facts through),
`detectors` (the rules); this module registers the rules and holds the two entry points.

Conventions shared by every rule:
- Only answers on the "clean" variant count unless a rule says otherwise.
- Duplicate answers (same model, item_id, variant_id) keep the first one in input order; duplicate items
  (same item_id) keep the first one. If a model has clean answers on several clean variants of one item,
  the one with the lowest variant_id is its clean answer.
- Answers about an item_id missing from `items` are ignored, and so are baseline answers
  (`ModelAnswer.baseline`: random, prior, null backends): a baseline never counts as a model.
- A chain's *final* item is its item with the highest (stage, step), ties broken by the highest item_id;
  "chain order" means ascending (stage, step, item_id).
- Output does not depend on input order (apart from which duplicate counts as the first).
- `evidence` is JSON-serialisable: tuples become lists, keys are str.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

from .data import (
    ANSWERED,
    CASE_RULE_BONUS,
    CHOICE_TYPES,
    CLEAN,
    DENIAL_CATEGORIES,
    DENIAL_STAGE,
    LATE_STAGES,
    NEUTRAL_LATE_CATEGORIES,
    AnnotatorConflict,
    CaseDraft,
    ItemFact,
    ModelAnswer,
    Rule,
    RuleHit,
    RuleParams,
    _sorted,
    hit_sort_key,
)
from .detectors import (
    adversarial_flip,
    annotator_disagreement,
    chain_contradiction,
    consensus_needed,
    model_consensus,
    right_answer_wrong_evidence,
)

__all__ = [
    "ANSWERED", "CHOICE_TYPES", "CLEAN", "DENIAL_CATEGORIES", "DENIAL_STAGE", "LATE_STAGES", "NEUTRAL_LATE_CATEGORIES",
    "RULES", "AnnotatorConflict", "CaseDraft", "ItemFact", "ModelAnswer", "Rule", "RuleHit", "RuleParams",
    "adversarial_flip", "annotator_disagreement", "cases_from_hits", "chain_contradiction", "consensus_needed",
    "detect", "hit_sort_key", "model_consensus", "right_answer_wrong_evidence",
]

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
