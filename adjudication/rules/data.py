"""The rules' inputs and outputs (plain frozen dataclasses), their thresholds, and the index every
rule reads its facts through (deduplication and chain order: the conventions in `adjudication.rules`)."""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
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
    """One model's scored prediction on one variant of one item. `baseline`: the answer of a baseline
    (random, prior, null: workers.backends.is_baseline_backend), which no rule ever counts as a model.
    `run_id`: the evaluation run it came from (provenance only; the rules do not read it)."""

    model: str
    item_id: int
    variant_id: int
    variant_kind: str      # "clean" or an adversarial kind
    outcome: str           # "answered" | "abstained" | "unparseable" | "error"
    value: object = None   # str, tuple of str, tuple of 4 floats (box) or None
    correct: bool = False
    iou: float | None = None
    baseline: bool = False
    run_id: int | None = None


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
    unknown items and every baseline answer, pick each model's clean answer (lowest clean variant_id)
    and group the rest."""
    by_id: dict[int, ItemFact] = {}
    for item in items:
        by_id.setdefault(item.item_id, item)
    ordered = sorted(by_id.values(), key=_chain_order)
    seen: set[tuple[str, int, int]] = set()
    clean: dict[int, dict[str, ModelAnswer]] = defaultdict(dict)
    adversarial: dict[tuple[str, int], list[ModelAnswer]] = defaultdict(list)
    for ans in answers:
        ident = (ans.model, ans.item_id, ans.variant_id)
        if ans.baseline or ident in seen or ans.item_id not in by_id:
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
