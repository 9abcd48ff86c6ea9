"""Benchmark metrics over a table of scored predictions (numpy only; the reference for the docs).

Input: a `PredictionTable`, one row per prediction (model endpoint × variant) with the item's chain,
stage (1..4), step, kind, answer type, outcome, its `ItemScore` (correct, iou, cue_adopted) and the
optional columns of `table.PredictionTable` (cluster, n_options, answer, cue, cue_clean, level,
subkind, family). Abstained, unparseable and errored predictions count as wrong everywhere
(``correct`` is False).

Conventions
    Every interval is the percentile cluster bootstrap of `workers.scoring.stats` over the
    ``cluster`` column (the patient; the chain where the table has no cluster column): all the
    statistics of one endpoint use the same resampling weights (R = ``n_resamples`` = 1000 resamples
    over the endpoint's clusters, drawn from ``seed``; `table.cell_table` with the same seed uses the
    same weights for that endpoint's cells), so duplicating rows never narrows an interval. A *stat*
    is ``{"k", "n", "value", "lo", "hi", "clusters"}``: value = k / n, (lo, hi) the 95 % interval,
    clusters the number of clusters holding its n units; where k == 0 or k == n the interval is
    Wilson's with n = clusters; with n == 0 value, lo and hi are None, and with fewer than 2 clusters
    lo and hi are None. A *difference* (or mean) is ``{"value", "lo", "hi", "n"}`` (no Wilson
    substitute: when every resample gives the same value, lo = hi = value); a paired difference is
    the mean over its pairs of (a − b), resampled by the clusters of the pairs. Units are predictions
    unless said otherwise; chain-level and item-level units belong to the cluster of their
    predictions. Output holds only ints, floats, str, None, lists and dicts, so it is
    JSON-serialisable (stage keys are ints; ``json.dumps`` writes them as strings).
Chance (`table.chance`)
    Per prediction, the accuracy of a uniform guess: 1 / n_options for single_choice and yes_no,
    1 / (2^n_options − 1) for multi_choice (any non-empty subset of the options), 0 for box and
    short_text answers (and where n_options is unknown). Chance-corrected accuracy is
    (accuracy − chance) / (1 − chance) with chance the mean over the same predictions, i.e. the
    ratio Σ (correct − chance) / Σ (1 − chance); 0 at chance, 1 when always right.

`model_metrics(t, rows=None)` — per endpoint id, over the rows selected by the boolean mask `rows`
(e.g. one split; the table is not copied), a dict with:

step_accuracy
    stat of correct over the endpoint's ``clean`` predictions.
answered_accuracy
    stat of correct over the clean predictions whose outcome is "answered" (k = correct, n = answered).
by_stage
    ``{stage: stat + {"conditional": stat}}`` over clean predictions. Conditional accuracy at stage s:
    over clean predictions at stage s whose chain has no wrong clean prediction at any stage < s (for
    the lowest stage of a chain this is every prediction, so it equals the unconditional one there).
stage_degradation
    Computed on the SAME chains at every stage: the *full chains*, those with a clean prediction at
    each of the stages 1, 2, 3 and 4 (chains that stop at S2 never enter). ``{"chains": number of
    full chains, "stages": [1, 2, 3, 4], "by_kind": {kind: {stage: {"accuracy": stat, "chance":
    mean chance, "chance_corrected": difference}}}, "drop": {stage: difference}}``. by_kind has one
    table per variant kind present among the full chains' predictions (clean, the headline, first;
    then `KIND_ORDER`), each over that kind's predictions in the full chains at that stage; drop is
    accuracy(S1) − accuracy(S) of the clean predictions in the full chains, the two accuracies
    resampled jointly (S1: 0). Empty by_kind and drop when there is no full chain.
chain_accuracy
    stat over chains (the endpoint's clean predictions grouped by chain id): a chain is correct iff
    every clean prediction in it is correct.
guess_rate
    stat over chains with at least two distinct clean steps whose last step (the clean prediction(s)
    at the chain's largest step number) is correct: k = those with at least one wrong earlier step.
robustness
    ``{kind: {...}}`` for every non-clean kind among the endpoint's predictions. Pairs: each
    prediction of that kind whose item has a clean prediction by the same endpoint, paired with that
    clean prediction (the one with the smallest variant id if there are several); several variants of
    one kind of one item each form a pair. Fields:

    - n_pairs; clean_accuracy and adversarial_accuracy (stats over the pairs);
    - drop: paired difference clean − adversarial correct over the pairs;
    - flip_rate (stat: correctness differs); harmful_flip_rate = P(adversarial wrong | clean right)
      and helpful_flip_rate = P(adversarial right | clean wrong) (stats over those pairs);
    - cue_adoption_rate: stat, k = cue_adopted == 1 among the kind's predictions, paired or not,
      whose cue_adopted is decided (not nan) — P(answer = cue | cue shown), not chance-corrected;
    - cue_adoption_corrected: over the *decidable* pairs, the mean of adopted(adversarial) −
      adopted_by_clean, i.e. P(answer = cue | cue shown) − P(answer = cue | clean). adopted_by_clean:
      whether the paired clean prediction adopts this variant's cue: its ``answer`` key equals the
      variant's ``cue`` key where ``cue`` is set, else ``cue_clean`` (box-based cues, decided by the
      services) where that is not nan. A pair is decidable when the adversarial cue_adopted is decided
      and adopted_by_clean is (``cue`` set or ``cue_clean`` not nan); n = decidable pairs;
    - cue_adoption_normalised: cue_adoption_corrected / (1 − P(clean adopts)) over the same pairs,
      i.e. Σ (adopted − adopted_by_clean) / Σ (1 − adopted_by_clean): a model that follows the cue
      with probability p and otherwise answers as it would have scores p whatever its accuracy;
    - effect: "helpful" (correct_hint, correct_visual_cue: the cue points at the answer, a negative
      drop is expected), "diagnostic" (image_ablation: visual reliance, a large drop is good;
      true_premise: the control of false_premise) or "harmful" (every other kind);
    - by_stage: ``{stage: {"n_pairs", "drop"}}`` of the kind's pairs at each stage;
    - subkinds: ``{subkind: {"n_pairs", "drop", "cue_adoption_rate", "cue_adoption_corrected",
      "cue_adoption_normalised"}}`` (wrong_visual_cue: wrong_region / mislabeled; image_ablation:
      blank / noise / swap; box_dose_response: 0.7 / 0.5 / 0.3), only where the subkind is known.

    There is no mean over kinds: harmful, helpful and diagnostic drops do not add up.
robustness_summary
    ``{"harmful": [kinds], "helpful": [kinds], "diagnostic": [kinds]}``: the robustness kinds present,
    by effect, in `KIND_ORDER`.
hint_reliance
    ``{"value", "lo", "hi", "n", "correct_hint", "misleading_hint"}``: over items that have both a
    correct_hint and a misleading_hint prediction by the endpoint (n = number of such items),
    accuracy of their correct_hint predictions (stat) − accuracy of their misleading_hint predictions
    (stat), resampled jointly (value None if n == 0).
visual_reliance
    ``{"value", "lo", "hi", "n"}``: the image_ablation robustness drop, n = its n_pairs (value None
    when there are no pairs).
circular_eval
    CircularEval. An item counts when the endpoint has its clean prediction and at least
    n_options − 1 distinct option_permutation predictions of it (n_options of the clean prediction,
    at least 2). ``{"n": items, "accuracy": stat over the items (right = the clean prediction and
    every option_permutation prediction correct), "clean_accuracy": stat of the clean prediction
    over the same items, "chance": mean over the items of chance^n_options (None when n == 0)}``.
dose_response
    box_dose_response predictions by level (``subkind``, else ``level`` formatted "%g"): ``{level:
    {"n", "accuracy": stat, "mean_iou": mean, "hit_rate": stat}}`` for "0.7", "0.5", "0.3" (the levels
    present, in that order), plus "clean": the clean predictions of the same items. mean_iou is the
    mean IoU of the model's box with the gold box and hit_rate the share with IoU ≥ 0.5, over the
    predictions that carry a box (answer type box, or an iou; a missing box counts 0); None / n 0
    when there are none. Empty when the endpoint has no box_dose_response prediction.
grounding
    Over clean box predictions (answer_type "box"; a missing IoU counts as 0): n, mean_iou (None if
    n == 0) with mean_iou_ci (the same mean as a difference-like ``{"value", "lo", "hi", "n"}``) and
    hit_rate (stat of IoU ≥ 0.5). grounded_correct: stat over clean chains with at least
    one box prediction whose last step has no box prediction: k = chains whose last step is correct
    and every box prediction in the chain has IoU ≥ 0.5. right_answer_wrong_evidence: number of those
    chains whose last step is correct but some box prediction has IoU < 0.5.
answer_box
    Joint answer + box items (a single_choice / yes_no variant that also asks for the evidence box;
    rows with an IoU, see `table.joint_rows`), over clean predictions: n, mean_iou (None if n == 0)
    and mean_iou_ci (as in grounding), box_hit_rate (stat of IoU ≥ 0.5), grounded_correct (stat:
    the choice is right AND IoU ≥ 0.5, "right for the right reason") and right_answer_wrong_box
    (count: choice right, IoU < 0.5).
premise
    False premise against its control, true premise (the same question with the premise true and
    the rejecting option present as a distractor): false_premise_rejection (stat over false_premise
    predictions: chose the rejecting option, i.e. correct), true_premise_false_rejection (stat over
    true_premise predictions whose cue is decided: chose the rejecting option), true_premise_accuracy
    (stat: chose the gold) and discrimination = false_premise_rejection − true_premise_false_rejection
    (a difference ``{"value", "lo", "hi", "n"}``, both rates resampled with the same patients; value
    None unless both are defined). A model that always picks the odd "premise is false" option rejects
    both and discriminates 0.
parse_families
    ``{family: stat}`` over all the endpoint's predictions (every kind): the share whose parse method
    falls in that family (``family`` column; predictions without one are left out of k, not of n).
abstention_rate, unparseable_rate, error_rate
    stats of that outcome over all the endpoint's predictions (every kind).
n_predictions
    number of the endpoint's predictions.

`compare_models(t, a, b)` — paired comparison on items: each endpoint's clean predictions (outcome
"answered" only unless ``answered_only=False``) are aggregated per item first (an item is right when
all of them are), and the items both endpoints have form the pairs: n (items), acc_a, acc_b (stats),
mcnemar on the item-level discordant counts (b = a right / b wrong, c = a wrong / b right) and
bootstrap ``{"diff", "lo", "hi", "p_value", "n"}``: acc_a − acc_b with the cluster bootstrap over the
items' clusters and the p-value of `stats.paired_bootstrap` (lo, hi and p_value None with fewer than
2 clusters).

`cell_table(t, by)` — counts, rates and clustered accuracy intervals per group, see `table.cell_table`.

Where the code lives: this module computes the clean-chain metrics (step, answered and chain accuracy,
by_stage, guess_rate, grounding, answer_box), parse_families, the outcome rates, visual_reliance and
compare_models; `workers.scoring.analyses` computes stage_degradation, robustness (with `effect_of` and
KIND_ORDER), hint_reliance, circular_eval, dose_response and premise over one endpoint (`Endpoint`);
`workers.scoring.table` holds PredictionTable, chance and cell_table, `workers.scoring.stats` the bootstrap.
"""
from __future__ import annotations

from typing import Any

import numpy as np

# KIND_ORDER, effect_of and the other constants stay importable from here (they were defined here)
from workers.scoring.analyses import (  # noqa: F401
    DIAGNOSTIC,
    DOSE_LEVELS,
    EFFECTS,
    HELPFUL,
    HIT,
    KIND_ORDER,
    STAGES,
    Endpoint,
    circular_eval,
    dose_response,
    effect_of,
    hint_reliance,
    premise,
    robustness,
    stage_degradation,
)
from workers.scoring.stats import CONFIDENCE, N_RESAMPLES, Pending, StatBatch, bootstrap_p_value, mcnemar, resolve
from workers.scoring.table import GROUP_COLUMNS, PredictionTable, cell_table, factorize, joint_rows

__all__ = ["GROUP_COLUMNS", "KIND_ORDER", "PredictionTable", "cell_table", "compare_models", "compare_outcomes",
           "endpoint_metrics", "item_outcomes", "model_metrics"]

_BIG = np.iinfo(np.int64).max
_SMALL = np.iinfo(np.int64).min


def _count(inv: np.ndarray, weights: np.ndarray | None, size: int) -> np.ndarray:
    return np.bincount(inv, weights=weights, minlength=size)


class _Merge:
    """A stat's result with more keys (resolved after the batch ran)."""

    def __init__(self, base: Pending, **extra: Any) -> None:
        self.base, self.extra = base, extra


def _resolve(obj: Any) -> Any:
    if isinstance(obj, _Merge):
        return {**obj.base.result, **_resolve(obj.extra)}
    if isinstance(obj, dict):
        return {k: _resolve(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_resolve(v) for v in obj]
    return resolve(obj)


def chain_metrics(e: Endpoint) -> dict[str, Any]:
    """Metrics from the endpoint's clean predictions (chain-level ones by per-chain reductions)."""
    t, b = e.t, e.b
    ci = np.flatnonzero(e.clean)
    correct, stage, step = t.correct[ci], t.stage[ci], t.step[ci]
    codes = e.codes_of_rows[ci]
    out: dict[str, Any] = {"step_accuracy": e.prop(correct, codes=codes)}
    answered = t.is_("outcome", "answered")[ci]
    out["answered_accuracy"] = b.proportion(b.sums(correct, codes=codes), b.sums(answered, codes=codes))
    chains, inv = factorize(t.chain[ci])
    g = len(chains)
    chain_codes = np.zeros(g, dtype=np.int64)
    chain_codes[inv] = codes
    wrong = ~correct
    out["chain_accuracy"] = e.prop(_count(inv, wrong, g) == 0, codes=chain_codes)

    # conditional accuracy: a prediction counts when its chain's first wrong stage is not below it
    first_wrong = np.full(g, _BIG, dtype=np.int64)
    np.minimum.at(first_wrong, inv[wrong], stage[wrong])
    qualifies = stage <= first_wrong[inv]
    stages, s_inv = factorize(stage)
    ns = len(stages)
    s_n = b.grouped(s_inv, ns, codes=codes)
    s_k = b.grouped(s_inv, ns, correct, codes=codes)
    q_n = b.grouped(s_inv, ns, qualifies, codes=codes)
    q_k = b.grouped(s_inv, ns, correct & qualifies, codes=codes)
    out["by_stage"] = {int(s): _Merge(b.proportion(s_k[:, j], s_n[:, j]),
                                      conditional=b.proportion(q_k[:, j], q_n[:, j]))
                       for j, s in enumerate(stages.tolist())}

    # last step = the clean prediction(s) at the chain's largest step number
    last_step = np.full(g, _SMALL, dtype=np.int64)
    np.maximum.at(last_step, inv, step)
    is_last = step == last_step[inv]
    last_wrong = _count(inv, is_last & wrong, g) > 0
    earlier = _count(inv, ~is_last, g) > 0
    earlier_wrong = _count(inv, ~is_last & wrong, g) > 0
    eligible = earlier & ~last_wrong
    out["guess_rate"] = e.prop(earlier_wrong, eligible, chain_codes)

    box = t.is_("answer_type", "box")[ci]
    iou = np.where(np.isnan(t.iou[ci]), 0.0, t.iou[ci])
    box_iou = iou[box]
    has_box = _count(inv, box, g) > 0
    miss = _count(inv, box & (iou < HIT), g) > 0
    last_box = _count(inv, is_last & box, g) > 0
    judged = has_box & ~last_box
    right = judged & ~last_wrong
    out["grounding"] = {
        "n": int(box_iou.size),
        "mean_iou": float(box_iou.mean()) if box_iou.size else None,
        "mean_iou_ci": b.mean(b.sums(iou, box, codes), b.sums(None, box, codes)),
        "hit_rate": e.prop(iou >= HIT, box, codes),
        "grounded_correct": e.prop(right & ~miss, judged, chain_codes),
        "right_answer_wrong_evidence": int(np.count_nonzero(right & miss)),
    }

    joint = joint_rows(t)[ci]
    j_hit = joint & (iou >= HIT)
    j_correct = joint & correct
    out["answer_box"] = {
        "n": int(np.count_nonzero(joint)),
        "mean_iou": float(iou[joint].mean()) if joint.any() else None,
        "mean_iou_ci": b.mean(b.sums(iou, joint, codes), b.sums(None, joint, codes)),
        "box_hit_rate": e.prop(j_hit, joint, codes),
        "grounded_correct": e.prop(j_correct & j_hit, joint, codes),
        "right_answer_wrong_box": int(np.count_nonzero(j_correct & ~j_hit)),
    }
    return out



_chain_metrics = chain_metrics   # the older private name

def _parse_families(e: Endpoint) -> dict[str, Any]:
    b = e.b
    families, inv = e.codes("family", slice(None))
    present = np.bincount(inv, minlength=len(families)) > 0
    counts = b.grouped(inv, len(families))
    total = b.sums()
    return {str(families[j]): b.proportion(counts[:, j], total) for j in np.flatnonzero(present).tolist()
            if families[j]}


def endpoint_metrics(t: PredictionTable, *, n_resamples: int = N_RESAMPLES, seed: int = 0,
                     confidence: float = CONFIDENCE) -> dict[str, Any]:
    """The metrics of ONE endpoint (module docstring) over every row of `t`, which holds only that
    endpoint's predictions (a `PredictionTable`, a `TableView` or a `coded.CodedTable`):
    `model_metrics(t)[e] == endpoint_metrics(t.view(rows of e))`."""
    return _endpoint_metrics(t, n_resamples, seed, confidence)


def _endpoint_metrics(t: PredictionTable, n_resamples: int, seed: int, confidence: float) -> dict[str, Any]:
    e = Endpoint(t, n_resamples, seed, confidence)
    out = chain_metrics(e)
    out["stage_degradation"] = stage_degradation(e)
    robust = robustness(e)
    out["robustness"] = robust
    out["robustness_summary"] = {eff: [k for k in robust if robust[k]["effect"] == eff] for eff in EFFECTS}
    out["hint_reliance"] = hint_reliance(e)
    out["circular_eval"] = circular_eval(e)
    out["dose_response"] = dose_response(e)
    out["premise"] = premise(e)
    out["parse_families"] = _parse_families(e)
    out["abstention_rate"] = e.prop(t.is_("outcome", "abstained"))
    out["unparseable_rate"] = e.prop(t.is_("outcome", "unparseable"))
    out["error_rate"] = e.prop(t.is_("outcome", "error"))
    out["n_predictions"] = len(t)
    e.b.run()
    out = _resolve(out)
    hint = out["hint_reliance"]
    out["hint_reliance"] = {**hint.pop("diff"), **hint}
    ablation = robust.get("image_ablation")
    out["visual_reliance"] = ({**out["robustness"]["image_ablation"]["drop"], "n": ablation["n_pairs"]} if ablation
                              else {"value": None, "lo": None, "hi": None, "n": 0})
    return out


def model_metrics(t: PredictionTable, *, rows: np.ndarray | None = None, n_resamples: int = N_RESAMPLES,
                  seed: int = 0, confidence: float = CONFIDENCE) -> dict[int, dict[str, Any]]:
    """Metrics per endpoint id (definitions in the module docstring), over the rows selected by the
    boolean mask `rows` (e.g. one split; default all) without copying the table."""
    index = np.arange(len(t)) if rows is None else np.flatnonzero(rows)
    if not index.size:
        return {}
    endpoints, inv = t.codes("endpoint")
    order = index[np.argsort(inv[index], kind="stable")]
    bounds = np.searchsorted(inv[order], np.arange(len(endpoints) + 1))
    out = {}
    for i, e in enumerate(endpoints.tolist()):
        if bounds[i + 1] > bounds[i]:
            out[int(e)] = _endpoint_metrics(t.view(order[bounds[i]:bounds[i + 1]]), n_resamples, seed, confidence)
    return out


def _code_of(t: PredictionTable, name: str, value: Any) -> int:
    """The code of `value` in column `name` (-1 when absent)."""
    uniq = t.codes(name)[0]
    pos = int(np.searchsorted(uniq, value))
    return pos if pos < len(uniq) and uniq[pos] == value else -1


def item_outcomes(t: PredictionTable, endpoint: int, answered_only: bool) -> tuple[np.ndarray, ...]:
    """(items, right, cluster) of an endpoint's clean predictions aggregated per item: all that
    `compare_models` needs of one endpoint, so a service can keep it per model and compare later."""
    mask = (t.codes("endpoint")[1] == _code_of(t, "endpoint", endpoint)) & (
        t.codes("kind")[1] == _code_of(t, "kind", "clean"))
    if answered_only:
        mask &= t.codes("outcome")[1] == _code_of(t, "outcome", "answered")
    idx = np.flatnonzero(mask)
    items, inv = factorize(t.item[idx])
    wrong = np.bincount(inv, weights=~t.correct[idx], minlength=len(items))
    cluster = np.zeros(len(items), dtype=t.cluster.dtype)
    cluster[inv] = t.cluster[idx]
    return items, wrong == 0, cluster


_item_outcomes = item_outcomes   # the older private name


def compare_models(t: PredictionTable, a: int, b: int, *, n_resamples: int = N_RESAMPLES, seed: int = 0,
                   answered_only: bool = True, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Paired comparison of endpoints `a` and `b` on shared items (module docstring)."""
    return compare_outcomes(item_outcomes(t, a, answered_only), item_outcomes(t, b, answered_only), a, b,
                            n_resamples=n_resamples, seed=seed, confidence=confidence)


def compare_outcomes(out_a: tuple[np.ndarray, ...], out_b: tuple[np.ndarray, ...], a: int, b: int, *,
                     n_resamples: int = N_RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """`compare_models` from the two endpoints' `item_outcomes` (cluster ids of one numbering)."""
    ia, ra, cl = out_a
    ib, rb, _ = out_b
    _, pa, pb = np.intersect1d(ia, ib, assume_unique=True, return_indices=True)
    ca, cb = ra[pa], rb[pb]
    batch = StatBatch.over(cl[pa], n_resamples=n_resamples, seed=seed, confidence=confidence)
    acc_a, acc_b = batch.proportion(batch.sums(ca), batch.sums()), batch.proportion(batch.sums(cb), batch.sums())
    diff = batch.mean(batch.sums(ca.astype(float) - cb), batch.sums())
    batch.run()
    d = diff.result if ca.size else {"value": None, "lo": None, "hi": None}
    return {
        "endpoint_a": int(a), "endpoint_b": int(b), "n": int(ca.size),
        "acc_a": acc_a.result if ca.size else _empty_stat(), "acc_b": acc_b.result if ca.size else _empty_stat(),
        "mcnemar": mcnemar(int(np.count_nonzero(ca & ~cb)), int(np.count_nonzero(~ca & cb))),
        "bootstrap": {"diff": d["value"], "lo": d["lo"], "hi": d["hi"],
                      "p_value": bootstrap_p_value(d["value"], diff.samples) if batch.n_clusters >= 2 else None,
                      "n": int(ca.size)},
    }


def _empty_stat() -> dict[str, Any]:
    return {"k": 0, "n": 0, "value": None, "lo": None, "hi": None, "clusters": 0}
