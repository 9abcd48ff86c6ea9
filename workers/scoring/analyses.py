"""Per-endpoint analyses of variants and stages, computed for `workers.scoring.metrics`.

The fields are defined in the module docstring of `workers.scoring.metrics` (the reference); this module
holds their code. `metrics.model_metrics` builds one `Endpoint` per endpoint id and calls:

- `stage_degradation`: accuracy by stage and variant kind on the full chains;
- `robustness`: clean-vs-variant pairs per non-clean kind (drop, flips, cue adoption, by stage and
  subkind, `effect_of` the kind); visual_reliance is its image_ablation drop;
- `hint_reliance`: correct_hint − misleading_hint accuracy on the items that have both;
- `circular_eval`: CircularEval over option_permutation predictions;
- `dose_response`: box_dose_response predictions by IoU level against the clean ones;
- `premise`: false_premise rejection against its control, true_premise.

Each returns `Pending` statistics of the endpoint's shared `StatBatch`; `metrics` runs the batch and
resolves them. Layering: imports `stats` and `table`, never `metrics`.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from workers.scoring.stats import Pending, StatBatch
from workers.scoring.table import PredictionTable, chance, factorize

__all__ = ["DIAGNOSTIC", "DOSE_LEVELS", "EFFECTS", "HELPFUL", "HIT", "KIND_ORDER", "STAGES", "Endpoint",
           "circular_eval", "dose_response", "effect_of", "hint_reliance", "premise", "robustness",
           "stage_degradation"]

HIT = 0.5
STAGES = (1, 2, 3, 4)
# annotation.variants.generator.KINDS (not imported: that package pulls in PIL; a test keeps them equal)
KIND_ORDER = ("clean", "misleading_hint", "correct_hint", "false_premise", "true_premise", "option_permutation",
              "negation", "correct_visual_cue", "wrong_visual_cue", "box_dose_response", "image_ablation",
              "premise_injection")
HELPFUL = ("correct_hint", "correct_visual_cue")
DIAGNOSTIC = ("image_ablation", "true_premise")
EFFECTS = ("harmful", "helpful", "diagnostic")
DOSE_LEVELS = ("0.7", "0.5", "0.3")


def effect_of(kind: str) -> str:
    """"helpful", "diagnostic" or "harmful" (metrics module docstring, robustness)."""
    return "helpful" if kind in HELPFUL else "diagnostic" if kind in DIAGNOSTIC else "harmful"


def _kind_key(kind: str) -> tuple[int, str]:
    return (KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER), kind)


class Endpoint:
    """One endpoint's predictions and the bootstrap batch all its statistics share."""

    def __init__(self, t: PredictionTable, n_resamples: int, seed: int, confidence: float) -> None:
        self.t = t
        _, codes = factorize(t.cluster)
        self.codes_of_rows = codes
        self.b = StatBatch(codes, int(codes.max()) + 1 if len(codes) else 0, n_resamples=n_resamples, seed=seed,
                           confidence=confidence)
        self.clean = t.is_("kind", "clean")
        self.chance = chance(t)
        # the first clean prediction (by variant id) of each item: the one every pair uses
        ci = np.flatnonzero(self.clean)
        order = np.lexsort((t.variant[ci], t.item[ci]))
        self.items, first = np.unique(t.item[ci][order], return_index=True)
        self.clean_rows = ci[order][first]

    def codes(self, name: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(distinct values of the whole table's column, codes of `rows`); values may be absent."""
        uniq, inv = self.t.codes(name)
        return uniq, inv[rows]

    def clean_row_of(self, rows: np.ndarray) -> np.ndarray:
        """Per row, the row of its item's first clean prediction, or -1."""
        if not len(self.items):
            return np.full(len(rows), -1, dtype=np.int64)
        item = self.t.item[rows]
        pos = np.minimum(np.searchsorted(self.items, item), len(self.items) - 1)
        return np.where(self.items[pos] == item, self.clean_rows[pos], -1)

    def prop(self, k_mask: np.ndarray, mask: np.ndarray | None = None, codes: np.ndarray | None = None) -> Pending:
        """Proportion of `k_mask` over the rows (or units, with `codes`) where `mask`."""
        b = self.b
        return b.proportion(b.sums(k_mask, mask, codes), b.sums(None, mask, codes))


def stage_degradation(e: Endpoint) -> dict[str, Any]:
    """Accuracy by stage on the full chains (metrics module docstring)."""
    t, b = e.t, e.b
    ci = np.flatnonzero(e.clean & np.isin(t.stage, STAGES))
    chains, inv = factorize(t.chain[ci])
    seen = np.zeros((len(chains), len(STAGES)), dtype=bool)
    seen[inv, t.stage[ci] - 1] = True
    full = chains[seen.all(axis=1)]
    out: dict[str, Any] = {"chains": int(full.size), "stages": list(STAGES), "by_kind": {}, "drop": {}}
    if not full.size:
        return out
    rows = np.flatnonzero(np.isin(t.chain, full) & np.isin(t.stage, STAGES))
    kinds, k_inv = e.codes("kind", rows)
    groups = k_inv * len(STAGES) + (t.stage[rows] - 1)
    size = len(kinds) * len(STAGES)
    codes = e.codes_of_rows[rows]
    n = b.grouped(groups, size, codes=codes)
    k = b.grouped(groups, size, t.correct[rows], codes=codes)
    ch = b.grouped(groups, size, e.chance[rows], codes=codes)
    n_tot, ch_tot = n.sum(axis=0), ch.sum(axis=0)
    present = np.bincount(k_inv, minlength=len(kinds)) > 0
    for j in sorted(np.flatnonzero(present).tolist(), key=lambda j: _kind_key(str(kinds[j]))):
        table: dict[int, Any] = {}
        for si, s in enumerate(STAGES):
            col = j * len(STAGES) + si
            if n_tot[col] <= 0:
                continue
            table[s] = {"accuracy": b.proportion(k[:, col], n[:, col]),
                        "chance": float(ch_tot[col] / n_tot[col]),
                        "chance_corrected": b.mean([(k[:, col], 1.0), (ch[:, col], -1.0)],
                                                   [(n[:, col], 1.0), (ch[:, col], -1.0)], n=n_tot[col])}
        out["by_kind"][str(kinds[j])] = table
    if "clean" in out["by_kind"]:
        accs = [out["by_kind"]["clean"][s]["accuracy"] for s in STAGES]
        out["drop"] = {s: b.difference(accs[0], accs[i], n=full.size) for i, s in enumerate(STAGES)}
    return out


def robustness(e: Endpoint) -> dict[str, dict[str, Any]]:
    """Per non-clean kind: clean-vs-adversarial pairs of one endpoint's predictions (metrics module docstring)."""
    t, b = e.t, e.b
    adv = np.flatnonzero(~e.clean)
    if adv.size == 0:
        return {}
    kinds, kinv = e.codes("kind", adv)
    cr = e.clean_row_of(adv)
    paired = cr >= 0
    cr = np.where(paired, cr, 0)
    cc = paired & t.correct[cr]
    ac = paired & t.correct[adv]
    codes = e.codes_of_rows[adv]
    cue = t.cue_adopted[adv]
    decided = ~np.isnan(cue)
    adopted = decided & (cue == 1.0)
    key_cue = t.cue[adv] != ""
    by_clean = np.where(key_cue, t.answer[cr] == t.cue[adv], t.cue_clean[adv] == 1.0)
    decidable = paired & decided & (key_cue | ~np.isnan(t.cue_clean[adv]))
    quantities = {"pairs": paired, "cc": cc, "ac": ac, "harmful": cc & ~ac, "helpful": paired & ~cc & ac,
                  "decided": decided, "adopted": adopted, "dec": decidable, "dec_adv": decidable & adopted,
                  "dec_clean": decidable & by_clean}

    def per_group(groups: np.ndarray, size: int, names=tuple(quantities)) -> dict[str, np.ndarray]:
        return {q: b.grouped(groups, size, quantities[q], codes=codes) for q in names}

    def drop(c: dict[str, np.ndarray], j: int) -> Pending:
        return b.mean([(c["cc"][:, j], 1.0), (c["ac"][:, j], -1.0)], c["pairs"][:, j])

    def cue_stats(c: dict[str, np.ndarray], j: int) -> dict[str, Any]:
        shift = [(c["dec_adv"][:, j], 1.0), (c["dec_clean"][:, j], -1.0)]
        return {"cue_adoption_rate": b.proportion(c["adopted"][:, j], c["decided"][:, j]),
                "cue_adoption_corrected": b.mean(shift, c["dec"][:, j]),
                "cue_adoption_normalised": b.mean(shift, [(c["dec"][:, j], 1.0), (c["dec_clean"][:, j], -1.0)],
                                                  n=c["dec"][:, j].sum())}

    k_c = per_group(kinv, len(kinds))
    # (kind, stage) and (kind, subkind) combinations that occur
    stages, s_inv = factorize(t.stage[adv])
    ks, ks_inv = factorize(kinv * len(stages) + s_inv)
    ks_c = per_group(ks_inv, len(ks), ("pairs", "cc", "ac"))
    subkinds, sub_inv = e.codes("subkind", adv)
    has_sub = subkinds[sub_inv] != ""
    ksub, ksub_inv = factorize(kinv[has_sub] * len(subkinds) + sub_inv[has_sub])
    ksub_groups = np.zeros(adv.size, dtype=np.int64)
    ksub_groups[has_sub] = ksub_inv
    sub_c = {q: b.grouped(ksub_groups, len(ksub), quantities[q], has_sub, codes)
             for q in ("pairs", "cc", "ac", "decided", "adopted", "dec", "dec_adv", "dec_clean")}
    out: dict[str, dict[str, Any]] = {}
    present = np.bincount(kinv, minlength=len(kinds)) > 0
    for j in sorted(np.flatnonzero(present).tolist(), key=lambda j: _kind_key(str(kinds[j]))):
        kind = str(kinds[j])
        pairs = k_c["pairs"][:, j]
        stage_out = {}
        for col in np.flatnonzero(ks // len(stages) == j).tolist():
            n_s = int(round(ks_c["pairs"][:, col].sum()))
            if n_s:
                stage_out[int(stages[ks[col] % len(stages)])] = {"n_pairs": n_s, "drop": drop(ks_c, col)}
        sub_out = {}
        for col in np.flatnonzero(ksub // len(subkinds) == j).tolist():
            sub_out[str(subkinds[ksub[col] % len(subkinds)])] = {
                "n_pairs": int(round(sub_c["pairs"][:, col].sum())), "drop": drop(sub_c, col), **cue_stats(sub_c, col)}
        out[kind] = {
            "n_pairs": int(round(pairs.sum())),
            "clean_accuracy": b.proportion(k_c["cc"][:, j], pairs),
            "adversarial_accuracy": b.proportion(k_c["ac"][:, j], pairs),
            "drop": drop(k_c, j),
            "flip_rate": b.proportion([(k_c["harmful"][:, j], 1.0), (k_c["helpful"][:, j], 1.0)], pairs),
            "harmful_flip_rate": b.proportion(k_c["harmful"][:, j], k_c["cc"][:, j]),
            "helpful_flip_rate": b.proportion(k_c["helpful"][:, j], [(pairs, 1.0), (k_c["cc"][:, j], -1.0)]),
            **cue_stats(k_c, j),
            "effect": effect_of(kind),
            "by_stage": stage_out,
            "subkinds": sub_out,
        }
    return out


def hint_reliance(e: Endpoint) -> dict[str, Any]:
    t, b = e.t, e.b
    ch, mh = t.is_("kind", "correct_hint"), t.is_("kind", "misleading_hint")
    both = np.intersect1d(t.item[ch], t.item[mh])
    in_both = np.isin(t.item, both)
    acc_ch, acc_mh = e.prop(t.correct, ch & in_both), e.prop(t.correct, mh & in_both)
    return {"diff": b.difference(acc_ch, acc_mh, n=both.size), "n": int(both.size),
            "correct_hint": acc_ch, "misleading_hint": acc_mh}


def circular_eval(e: Endpoint) -> dict[str, Any]:
    t = e.t
    items, clean_row = e.items, e.clean_rows
    rot = np.flatnonzero(t.is_("kind", "option_permutation"))
    cr = e.clean_row_of(rot)
    rot = rot[cr >= 0]
    pos = np.searchsorted(items, t.item[rot])
    n_opt = t.n_options[clean_row]
    variants, v_inv = factorize(t.variant[rot])
    distinct = np.unique(pos * max(len(variants), 1) + v_inv) // max(len(variants), 1)   # (item, variant) once
    rotations = np.bincount(distinct, minlength=len(items))
    wrong = np.bincount(pos, weights=~t.correct[rot], minlength=len(items))
    counted = (n_opt >= 2) & (rotations >= n_opt - 1)
    right = counted & t.correct[clean_row] & (wrong == 0)
    codes = e.codes_of_rows[clean_row]
    n = int(np.count_nonzero(counted))
    chance_n = e.chance[clean_row][counted] ** n_opt[counted]
    return {"n": n, "accuracy": e.prop(right, counted, codes),
            "clean_accuracy": e.prop(t.correct[clean_row], counted, codes),
            "chance": float(chance_n.mean()) if n else None}


def _dose_levels(t: PredictionTable, rows: np.ndarray) -> np.ndarray:
    """Level of each box_dose_response row: its subkind, else its level formatted "%g"."""
    uniq, inv = t.codes("subkind")
    sub = uniq[inv[rows]]
    values, where = np.unique(t.level[rows], return_inverse=True)
    names = np.array(["" if math.isnan(v) else f"{v:g}" for v in values.tolist()] or [""], dtype=str)
    return np.where(sub != "", sub, names[where.ravel()] if rows.size else sub)


def dose_response(e: Endpoint) -> dict[str, Any]:
    t = e.t
    rows = np.flatnonzero(t.is_("kind", "box_dose_response"))
    if not rows.size:
        return {}
    levels = _dose_levels(t, rows)
    present = [lv for lv in DOSE_LEVELS if np.any(levels == lv)]
    present += sorted({lv for lv in levels.tolist() if lv and lv not in DOSE_LEVELS}, key=float, reverse=True)
    has_box = t.is_("answer_type", "box") | ~np.isnan(t.iou)
    iou = np.where(np.isnan(t.iou), 0.0, t.iou)

    def level_stats(mask: np.ndarray) -> dict[str, Any]:
        boxed = mask & has_box
        return {"n": int(np.count_nonzero(mask)), "accuracy": e.prop(t.correct, mask),
                "mean_iou": e.b.mean(e.b.sums(iou, boxed), e.b.sums(None, boxed)),
                "hit_rate": e.prop(iou >= HIT, boxed)}

    out: dict[str, Any] = {}
    for lv in present:
        mask = np.zeros(len(t), dtype=bool)
        mask[rows[levels == lv]] = True
        out[lv] = level_stats(mask)
    out["clean"] = level_stats(e.clean & np.isin(t.item, t.item[rows]))
    return out


def premise(e: Endpoint) -> dict[str, Any]:
    t = e.t
    fp, tp = t.is_("kind", "false_premise"), t.is_("kind", "true_premise")
    decided = tp & ~np.isnan(t.cue_adopted)
    rejection, false_rejection = e.prop(t.correct, fp), e.prop(t.cue_adopted == 1.0, decided)
    return {"false_premise_rejection": rejection, "true_premise_false_rejection": false_rejection,
            "true_premise_accuracy": e.prop(t.correct, tp),
            "discrimination": e.b.difference(rejection, false_rejection)}
