"""Rows -> the plain facts the detection rules read (`rules.py`). Reads only: one query for the
runs' predictions with their variant, item and chain columns, one for open annotator disagreements.

A prediction's parsed answer is stored as option letters; the rules compare option *texts*
(letters differ between permuted variants), so letters are mapped through the variant's options.
Each answer says whether its model is a baseline (`workers.backends.is_baseline_backend`: the rules
then ignore it) and which run it came from (`draft_runs`: which runs raised a case).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from adjudication.models import AdjudicationCase
from adjudication.rules import (
    CHOICE_TYPES,
    RULES,
    AnnotatorConflict,
    CaseDraft,
    ItemFact,
    ModelAnswer,
    cases_from_hits,
    detect,
)
from labelstudio.models import AnnotatorDisagreement
from workers.backends import is_baseline_backend
from workers.models import Prediction


def _texts(value, options) -> object:
    """Letters ('B', ['A', 'C']) -> option text(s); anything else unchanged (boxes -> tuple)."""
    letters = [value] if isinstance(value, str) else value
    if isinstance(letters, list) and letters and all(isinstance(x, str) and len(x) == 1 for x in letters):
        texts = [str(options[ord(x.upper()) - 65]) for x in letters if 0 <= ord(x.upper()) - 65 < len(options)]
        if len(texts) == len(letters):
            return texts[0] if isinstance(value, str) else tuple(sorted(texts))
    return tuple(value) if isinstance(value, list) else value


def _gold(answer_type: str, gold) -> object:
    if answer_type == "multi_choice" and isinstance(gold, list):
        return tuple(sorted(str(g) for g in gold))
    if answer_type == "box" and isinstance(gold, list):
        return tuple(float(v) for v in gold)
    return gold


def run_facts(*, run_ids: Sequence[int], chain_ids=None) -> tuple[list[ItemFact], list[ModelAnswer]]:
    """Items and answers of these runs (only on the chains `chain_ids`, a list or a subquery, when given);
    with several runs of one model, the newest run's answer comes first (the rules keep the first
    answer per model and variant). A prediction asked on an old version of an item whose gold an
    adjudicator corrected is judged against the corrected gold (what rescoring scored it against)."""
    rows = Prediction.objects.filter(run_id__in=list(run_ids))
    if chain_ids is not None:
        rows = rows.filter(item__chain_id__in=chain_ids)
    rows = (rows.order_by("-run_id", "pk")
            .values_list("endpoint__name", "item_id", "variant_id", "variant__kind", "variant__options", "outcome",
                         "parsed", "correct", "iou", "item__item_key", "item__chain_id", "item__chain__image_id",
                         "item__stage__order", "item__step", "item__category__code", "item__category__answer_type",
                         "item__gold_answer", "item__is_current", "endpoint__backend", "run_id"))
    items: dict[int, ItemFact] = {}
    answers: list[ModelAnswer] = []
    old_versions: set[int] = set()
    baseline: dict[str, bool] = {}
    for (model, item_id, variant_id, kind, options, outcome, parsed, correct, iou, item_key, chain_id, image_id,
         stage, step, category, answer_type, gold, is_current, backend, run_id) in rows.iterator(chunk_size=10000):
        if not is_current:
            old_versions.add(item_id)
        if item_id not in items:
            items[item_id] = ItemFact(item_id=item_id, item_key=str(item_key), chain_id=chain_id, image_id=image_id,
                                      stage=stage, step=step, category=category, answer_type=answer_type,
                                      gold=_gold(answer_type, gold))
        value = _texts(parsed, options or []) if answer_type in CHOICE_TYPES else _texts(parsed, [])
        if backend not in baseline:
            baseline[backend] = is_baseline_backend(backend)
        answers.append(ModelAnswer(model=model, item_id=item_id, variant_id=variant_id, variant_kind=kind,
                                   outcome=outcome, value=value, correct=bool(correct), iou=iou,
                                   baseline=baseline[backend], run_id=run_id))
    keys = {items[i].item_key for i in old_versions}
    current = {str(k): g for k, g in AdjudicationCase.objects.filter(
        item_key__in=keys, result_item__isnull=False, result_item__is_current=True).values_list(
        "item_key", "result_item__gold_answer")} if keys else {}
    for item_id in old_versions:
        fact = items[item_id]
        if fact.item_key in current:
            items[item_id] = replace(fact, gold=_gold(fact.answer_type, current[fact.item_key]))
    return list(items.values()), answers


def conflict_facts() -> list[AnnotatorConflict]:
    """Open disagreements between Label Studio annotators (labelstudio.services.pull records them)."""
    return [AnnotatorConflict(task_id=task_id, image_id=image_id, item_id=item_id, kinds=tuple(kinds or ()))
            for task_id, image_id, item_id, kinds in AnnotatorDisagreement.objects.filter(status="open")
            .order_by("pk").values_list("task_id", "image_id", "qa_item_id", "kinds")]


def detect_cases(*, run_ids: Sequence[int], rules=None, with_annotators: bool = True) -> list[CaseDraft]:
    """The cases the rules find in these runs (any runs: a preview; only reference runs fill the
    queue, see adjudication.services.cases)."""
    items, answers = run_facts(run_ids=run_ids)
    conflicts = conflict_facts() if with_annotators else []
    return cases_from_hits(detect(items, answers, conflicts, rules=rules), items)


def draft_runs(drafts: Iterable[CaseDraft], items: Sequence[ItemFact],
               answers: Sequence[ModelAnswer]) -> dict[str, list[int]]:
    """draft key -> the runs that raised it: for each hit naming models, the runs whose answers the rules
    read for those models on the hit's chain; for a gold-level hit (no models), the runs whose answers
    brought the chain in; annotator hits add no run. Baseline answers never count (the rules skip them)."""
    chain_of = {i.item_id: i.chain_id for i in items}
    by_model: dict[tuple[str, int], set[int]] = defaultdict(set)
    by_chain: dict[int, set[int]] = defaultdict(set)
    seen: set[tuple[str, int, int]] = set()
    for ans in answers:   # the first answer per model and variant is the one the rules read
        ident = (ans.model, ans.item_id, ans.variant_id)
        if ans.baseline or ans.run_id is None or ident in seen or ans.item_id not in chain_of:
            continue
        seen.add(ident)
        by_model[(ans.model, chain_of[ans.item_id])].add(ans.run_id)
        by_chain[chain_of[ans.item_id]].add(ans.run_id)
    out = {}
    for draft in drafts:
        runs: set[int] = set()
        for hit in draft.hits:
            rule = RULES.get(hit.rule)
            chain = chain_of.get(hit.item_id)
            if (rule is not None and rule.source == "conflicts") or chain is None:
                continue
            if hit.models:
                runs.update(r for m in hit.models for r in by_model.get((m, chain), ()))
            else:
                runs.update(by_chain.get(chain, ()))
        out[draft.key] = sorted(runs)
    return out
