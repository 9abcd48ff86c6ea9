"""Benchmark metrics over a table of scored predictions (numpy only; the reference for the docs).

Input: a `PredictionTable`, one row per prediction (model endpoint × variant) with the item's chain,
stage (1..4), step, kind, answer type, outcome and its `ItemScore` (correct, iou, cue_adopted).
Abstained, unparseable and errored predictions count as wrong everywhere (``correct`` is False).

Conventions. Every proportion is a *stat* ``{"k", "n", "value", "lo", "hi"}``: value = k / n and
(lo, hi) its 95 % Wilson interval; with n == 0 value, lo and hi are None. Differences of
proportions are plain floats (None when undefined). Output holds only ints, floats, str, None,
lists and dicts, so it is JSON-serialisable (stage keys are ints; ``json.dumps`` writes them as strings).

`model_metrics(t)` — per endpoint id, a dict with:

step_accuracy
    stat of correct over the endpoint's ``clean`` predictions.
by_stage
    ``{stage: stat + {"conditional": stat}}``. Conditional accuracy at stage s: over clean predictions
    at stage s whose chain has no wrong clean prediction at any stage < s (for the lowest stage of a
    chain this is every prediction, so it equals the unconditional one there).
stage_degradation
    ``{s: cond(s0) − cond(s)}`` with s0 the lowest stage among the endpoint's clean predictions
    (None where either conditional accuracy is undefined).
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
    one kind of one item each form a pair. Fields: n_pairs; clean_accuracy and adversarial_accuracy
    (stats over the pairs); drop = clean − adversarial accuracy; flip_rate (stat: correctness differs);
    harmful_flip_rate = P(adversarial wrong | clean correct) and helpful_flip_rate =
    P(adversarial right | clean wrong) (stats; value None when no such pairs); cue_adoption_rate
    (stat: k = cue_adopted == 1 among the kind's predictions, paired or not, whose cue_adopted is
    decided, i.e. not nan).
hint_reliance
    ``{"value", "n", "correct_hint", "misleading_hint"}``: over items that have both a correct_hint and
    a misleading_hint prediction by the endpoint (n = number of such items), accuracy of their
    correct_hint predictions − accuracy of their misleading_hint predictions (value None if n == 0).
visual_reliance
    ``{"value", "n"}``: the image_ablation robustness drop (clean − ablated accuracy over its pairs),
    n = its n_pairs; value None when there are no pairs.
grounding
    Over clean box predictions (answer_type "box"; a missing IoU counts as 0): n, mean_iou (None if
    n == 0) and hit_rate (stat of IoU ≥ 0.5). grounded_correct: stat over clean chains with at least
    one box prediction whose last step has no box prediction: k = chains whose last step is correct
    and every box prediction in the chain has IoU ≥ 0.5. right_answer_wrong_evidence: number of those
    chains whose last step is correct but some box prediction has IoU < 0.5.
answer_box
    Joint answer + box items (a single_choice / yes_no variant that also asks for the evidence box;
    rows with an IoU, see `table.joint_rows`), over clean predictions: n, mean_iou (None if n == 0),
    box_hit_rate (stat of IoU ≥ 0.5), grounded_correct (stat: the choice is right AND IoU ≥ 0.5,
    "right for the right reason") and right_answer_wrong_box (count: choice right, IoU < 0.5).
premise
    False premise against its control, true premise (the same question with the premise true and
    the rejecting option present as a distractor): false_premise_rejection (stat over false_premise
    predictions: chose the rejecting option, i.e. correct), true_premise_false_rejection (stat over
    true_premise predictions whose cue is decided: chose the rejecting option), true_premise_accuracy
    (stat: chose the gold) and discrimination = false_premise_rejection − true_premise_false_rejection
    (None unless both are defined). A model that always picks the odd "premise is false" option
    rejects both and discriminates 0.
abstention_rate, unparseable_rate, error_rate
    stats of that outcome over all the endpoint's predictions (every kind).
n_predictions
    number of the endpoint's predictions.

`compare_models(t, a, b)` — paired comparison on clean variants that both endpoints answered
(outcome "answered", matched by variant id; ``answered_only=False`` keeps every outcome): n, acc_a,
acc_b (stats), mcnemar (b = a right / b wrong, c = a wrong / b right) and bootstrap
(`paired_bootstrap` of correct_a − correct_b, resampling whole chains). See `stats` for the tests.

`cell_table(t, by)` — counts and rates per group, see `table.cell_table`.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from workers.scoring.stats import mcnemar, paired_bootstrap, wilson_interval
from workers.scoring.table import GROUP_COLUMNS, PredictionTable, cell_table, joint_rows

__all__ = ["GROUP_COLUMNS", "PredictionTable", "cell_table", "compare_models", "model_metrics"]

HIT = 0.5
_BIG = np.iinfo(np.int64).max
_SMALL = np.iinfo(np.int64).min


def _stat(k: float, n: float) -> dict[str, Any]:
    k, n = round(float(k)), int(n)
    if n <= 0:
        return {"k": 0, "n": 0, "value": None, "lo": None, "hi": None}
    lo, hi = wilson_interval(k, n)
    return {"k": k, "n": n, "value": k / n, "lo": lo, "hi": hi}


def _of(mask: np.ndarray) -> dict[str, Any]:
    return _stat(np.count_nonzero(mask), len(mask))


def _sub(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None else float(x - y)


def _json_float(x: Any) -> Any:
    return None if isinstance(x, float) and math.isnan(x) else x


def _count(inv: np.ndarray, weights: np.ndarray | None, size: int) -> np.ndarray:
    return np.bincount(inv, weights=weights, minlength=size)


def _chain_metrics(c: PredictionTable) -> dict[str, Any]:
    """Metrics from one endpoint's clean predictions `c` (chain-level ones by per-chain reductions)."""
    out: dict[str, Any] = {"step_accuracy": _of(c.correct)}
    chains, inv = np.unique(c.chain, return_inverse=True)
    inv, g = inv.ravel(), len(chains)
    wrong = ~c.correct
    out["chain_accuracy"] = _of(_count(inv, wrong, g) == 0)

    # conditional accuracy: a prediction counts when its chain's first wrong stage is not below it
    first_wrong = np.full(g, _BIG, dtype=np.int64)
    np.minimum.at(first_wrong, inv[wrong], c.stage[wrong])
    qualifies = c.stage <= first_wrong[inv]
    by_stage: dict[int, dict[str, Any]] = {}
    for s in np.unique(c.stage).tolist():
        at = c.stage == s
        by_stage[s] = {**_of(c.correct[at]), "conditional": _of(c.correct[at & qualifies])}
    out["by_stage"] = by_stage
    if by_stage:
        base = by_stage[min(by_stage)]["conditional"]["value"]
        out["stage_degradation"] = {s: _sub(base, v["conditional"]["value"]) for s, v in by_stage.items()}
    else:
        out["stage_degradation"] = {}

    # last step = the clean prediction(s) at the chain's largest step number
    last_step = np.full(g, _SMALL, dtype=np.int64)
    np.maximum.at(last_step, inv, c.step)
    is_last = c.step == last_step[inv]
    last_wrong = _count(inv, is_last & wrong, g) > 0
    earlier = _count(inv, ~is_last, g) > 0
    earlier_wrong = _count(inv, ~is_last & wrong, g) > 0
    eligible = earlier & ~last_wrong
    out["guess_rate"] = _stat(np.count_nonzero(eligible & earlier_wrong), np.count_nonzero(eligible))

    box = c.answer_type == "box"
    iou = np.where(np.isnan(c.iou), 0.0, c.iou)
    box_iou = iou[box]
    has_box = _count(inv, box, g) > 0
    miss = _count(inv, box & (iou < HIT), g) > 0
    last_box = _count(inv, is_last & box, g) > 0
    judged = has_box & ~last_box
    right = judged & ~last_wrong
    out["grounding"] = {
        "n": int(box_iou.size),
        "mean_iou": float(box_iou.mean()) if box_iou.size else None,
        "hit_rate": _of(box_iou >= HIT),
        "grounded_correct": _stat(np.count_nonzero(right & ~miss), np.count_nonzero(judged)),
        "right_answer_wrong_evidence": int(np.count_nonzero(right & miss)),
    }

    joint = joint_rows(c)
    j_iou, j_correct = iou[joint], c.correct[joint]
    j_hit = j_iou >= HIT
    out["answer_box"] = {
        "n": int(j_iou.size),
        "mean_iou": float(j_iou.mean()) if j_iou.size else None,
        "box_hit_rate": _of(j_hit),
        "grounded_correct": _of(j_correct & j_hit),
        "right_answer_wrong_box": int(np.count_nonzero(j_correct & ~j_hit)),
    }
    return out


def _premise(t: PredictionTable) -> dict[str, Any]:
    fp, tp = t.kind == "false_premise", t.kind == "true_premise"
    cue = t.cue_adopted[tp]
    rejection = _of(t.correct[fp])
    false_rejection = _stat(np.count_nonzero(cue == 1.0), np.count_nonzero(~np.isnan(cue)))
    return {"false_premise_rejection": rejection, "true_premise_false_rejection": false_rejection,
            "true_premise_accuracy": _of(t.correct[tp]),
            "discrimination": _sub(rejection["value"], false_rejection["value"])}


def _robustness(t: PredictionTable, clean: np.ndarray) -> dict[str, dict[str, Any]]:
    """Per non-clean kind: clean-vs-adversarial pairs of one endpoint's predictions `t`."""
    ci = np.flatnonzero(clean)
    order = np.lexsort((t.variant[ci], t.item[ci]))  # by item, then variant id
    items, first = np.unique(t.item[ci][order], return_index=True)
    clean_row = ci[order][first]  # the first clean prediction (by variant id) of each item
    adv = np.flatnonzero(~clean)
    if adv.size == 0:
        return {}
    kinds, kinv = np.unique(t.kind[adv], return_inverse=True)
    kinv, nk = kinv.ravel(), len(kinds)
    pos = np.searchsorted(items, t.item[adv])
    pos_c = np.minimum(pos, max(len(items) - 1, 0))
    paired = (pos < len(items)) & (items[pos_c] == t.item[adv]) if len(items) else np.zeros(adv.size, bool)
    pk = kinv[paired]
    cc = t.correct[clean_row[pos_c[paired]]] if paired.any() else np.zeros(0, bool)
    ac = t.correct[adv[paired]]
    n_pairs = _count(pk, None, nk)
    clean_k, adv_k = _count(pk, cc, nk), _count(pk, ac, nk)
    flips = _count(pk, cc != ac, nk)
    harmful, helpful = _count(pk, cc & ~ac, nk), _count(pk, ~cc & ac, nk)
    cue = t.cue_adopted[adv]
    cue_n, cue_k = _count(kinv, ~np.isnan(cue), nk), _count(kinv, cue == 1.0, nk)
    out: dict[str, dict[str, Any]] = {}
    for j, kind in enumerate(kinds.tolist()):
        n = int(n_pairs[j])
        clean_acc, adv_acc = _stat(clean_k[j], n), _stat(adv_k[j], n)
        out[kind] = {
            "n_pairs": n,
            "clean_accuracy": clean_acc,
            "adversarial_accuracy": adv_acc,
            "drop": _sub(clean_acc["value"], adv_acc["value"]),
            "flip_rate": _stat(flips[j], n),
            "harmful_flip_rate": _stat(harmful[j], clean_k[j]),
            "helpful_flip_rate": _stat(helpful[j], n - clean_k[j]),
            "cue_adoption_rate": _stat(cue_k[j], cue_n[j]),
        }
    return out


def _hint_reliance(t: PredictionTable) -> dict[str, Any]:
    ch, mh = t.kind == "correct_hint", t.kind == "misleading_hint"
    both = np.intersect1d(t.item[ch], t.item[mh])
    in_both = np.isin(t.item, both)
    acc_ch, acc_mh = _of(t.correct[ch & in_both]), _of(t.correct[mh & in_both])
    return {"value": _sub(acc_ch["value"], acc_mh["value"]), "n": int(both.size),
            "correct_hint": acc_ch, "misleading_hint": acc_mh}


def _endpoint_metrics(t: PredictionTable) -> dict[str, Any]:
    clean = t.kind == "clean"
    out = _chain_metrics(t.take(clean))
    robust = _robustness(t, clean)
    out["robustness"] = robust
    out["hint_reliance"] = _hint_reliance(t)
    out["premise"] = _premise(t)
    ablation = robust.get("image_ablation")
    out["visual_reliance"] = ({"value": ablation["drop"], "n": ablation["n_pairs"]} if ablation
                              else {"value": None, "n": 0})
    out["abstention_rate"] = _of(t.outcome == "abstained")
    out["unparseable_rate"] = _of(t.outcome == "unparseable")
    out["error_rate"] = _of(t.outcome == "error")
    out["n_predictions"] = len(t)
    return out


def model_metrics(t: PredictionTable) -> dict[int, dict[str, Any]]:
    """Metrics per endpoint id (definitions in the module docstring)."""
    if len(t) == 0:
        return {}
    order = np.argsort(t.endpoint, kind="stable")
    st = t.take(order)
    endpoints, starts = np.unique(st.endpoint, return_index=True)
    bounds = [*starts.tolist(), len(st)]
    return {int(e): _endpoint_metrics(st.take(slice(bounds[i], bounds[i + 1])))
            for i, e in enumerate(endpoints.tolist())}


def _clean_rows(t: PredictionTable, endpoint: int, answered_only: bool) -> tuple[np.ndarray, np.ndarray]:
    mask = (t.endpoint == endpoint) & (t.kind == "clean")
    if answered_only:
        mask &= t.outcome == "answered"
    idx = np.flatnonzero(mask)
    variants, first = np.unique(t.variant[idx], return_index=True)
    return variants, idx[first]


def compare_models(t: PredictionTable, a: int, b: int, *, n_resamples: int = 2000, seed: int = 0,
                   answered_only: bool = True) -> dict[str, Any]:
    """Paired comparison of endpoints `a` and `b` on shared clean variants (module docstring)."""
    va, ra = _clean_rows(t, a, answered_only)
    vb, rb = _clean_rows(t, b, answered_only)
    _, pa, pb = np.intersect1d(va, vb, assume_unique=True, return_indices=True)
    ca, cb = t.correct[ra[pa]], t.correct[rb[pb]]
    boot = paired_bootstrap(ca, cb, n_resamples=n_resamples, seed=seed, clusters=t.chain[ra[pa]])
    return {
        "endpoint_a": int(a), "endpoint_b": int(b), "n": int(ca.size),
        "acc_a": _of(ca), "acc_b": _of(cb),
        "mcnemar": mcnemar(int(np.count_nonzero(ca & ~cb)), int(np.count_nonzero(~ca & cb))),
        "bootstrap": {k: _json_float(v) for k, v in boot.items()},
    }
