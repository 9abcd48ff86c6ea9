"""The detection rules, one documented function each (registered by name in `adjudication.rules.RULES`)."""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from .data import (
    _EPS,
    ANNOTATOR_GOLD_PRIORITY,
    ANNOTATOR_PRIORITY,
    ANSWERED,
    CHOICE_TYPES,
    CONTRADICTION_GOLD_PRIORITY,
    CONTRADICTION_MODEL_PRIORITY,
    DENIAL_CATEGORIES,
    DENIAL_STAGE,
    LATE_STAGES,
    NEUTRAL_LATE_CATEGORIES,
    AnnotatorConflict,
    ItemFact,
    ModelAnswer,
    RuleHit,
    RuleParams,
    _canonical,
    _index,
    _jsonable,
    _sorted,
)


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
