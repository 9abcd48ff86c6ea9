"""A small prediction table whose metrics are computed by hand in the tests, and a plain reference
implementation of the cluster-bootstrap interval to check the intervals against.

Two endpoints (1, 2); chains 10, 20, 30 of four steps (step = stage = 1..4); item id = chain * 10 +
step; the clean variant of item i has id i * 10. Step 2 is a box item, the others single choice.
Chains 10 and 20 are CT, chain 30 MR. "T"/"F" = correct or not.

Endpoint 1, clean            Endpoint 2, clean
  chain 10: T  T(.8) T T       chain 10: T T(.7) F T
  chain 20: T  F(.3) T T       chain 20: T T(.9) T T
  chain 30: F* T(.6) F F       chain 30: T F*(0) T T        (* abstained)

Endpoint 1, adversarial (endpoint 2 has none):
  misleading_hint   101 F cue 1 | 201 T cue 0 | 301 T cue 0
  correct_hint      101 T | 201 T | 104 T
  image_ablation    103 F (answered) | 103 F (unparseable) | 203 T | 999 F (error; chain 40, no clean)
  wrong_visual_cue  102 box F, iou .1, cue 1

The table has no cluster column, so the resampling unit is the chain: endpoint 1 has the clusters
10, 20, 30, 40 (chain 40 holds only the errored ablation), endpoint 2 the clusters 10, 20, 30.
"""
from __future__ import annotations

import math

import numpy as np

from workers.scoring.metrics import PredictionTable
from workers.scoring.stats import resampling_weights, wilson_interval

COLUMNS = ("endpoint", "variant", "item", "chain", "stage", "step", "category", "modality", "kind",
           "answer_type", "outcome", "correct", "iou", "cue_adopted")
CATEGORY = {1: "modality-id", 2: "lesion-box", 3: "lesion-shape", 4: "diagnosis"}
NAN = math.nan


def row(endpoint, variant, item, kind="clean", correct=True, outcome="answered", iou=None, cue=None):
    chain, step = divmod(item, 10)
    if item == 999:
        chain, step = 40, 1
    answer_type = "box" if step == 2 else "single_choice"
    modality = "MR" if chain == 30 else "CT"
    return (endpoint, variant, item, chain, step, step, CATEGORY[step], modality, kind, answer_type, outcome,
            correct, iou, cue)


def clean_rows(endpoint: int, pattern: dict[int, tuple]) -> list[tuple]:
    rows = []
    for item, spec in pattern.items():
        correct, iou, outcome = spec
        rows.append(row(endpoint, item * 10, item, correct=correct, iou=iou, outcome=outcome))
    return rows


A = "answered"
ENDPOINT1_CLEAN = {
    101: (True, None, A), 102: (True, 0.8, A), 103: (True, None, A), 104: (True, None, A),
    201: (True, None, A), 202: (False, 0.3, A), 203: (True, None, A), 204: (True, None, A),
    301: (False, None, "abstained"), 302: (True, 0.6, A), 303: (False, None, A), 304: (False, None, A),
}
ENDPOINT2_CLEAN = {
    101: (True, None, A), 102: (True, 0.7, A), 103: (False, None, A), 104: (True, None, A),
    201: (True, None, A), 202: (True, 0.9, A), 203: (True, None, A), 204: (True, None, A),
    301: (True, None, A), 302: (False, 0.0, "abstained"), 303: (True, None, A), 304: (True, None, A),
}
ENDPOINT1_ADVERSARIAL = [
    row(1, 1011, 101, "misleading_hint", False, cue=1.0),
    row(1, 2011, 201, "misleading_hint", True, cue=0.0),
    row(1, 3011, 301, "misleading_hint", True, cue=0.0),
    row(1, 1012, 101, "correct_hint", True),
    row(1, 2012, 201, "correct_hint", True),
    row(1, 1042, 104, "correct_hint", True),
    row(1, 1031, 103, "image_ablation", False),
    row(1, 1032, 103, "image_ablation", False, outcome="unparseable"),
    row(1, 2031, 203, "image_ablation", True),
    row(1, 9991, 999, "image_ablation", False, outcome="error"),
    row(1, 1021, 102, "wrong_visual_cue", False, iou=0.1, cue=1.0),
]


def hand_rows() -> list[tuple]:
    # interleave endpoints and kinds so that nothing relies on the input order
    rows = clean_rows(2, ENDPOINT2_CLEAN) + ENDPOINT1_ADVERSARIAL + clean_rows(1, ENDPOINT1_CLEAN)
    return rows[::-1]


def hand_table() -> PredictionTable:
    return PredictionTable.from_rows(hand_rows(), COLUMNS)


CLUSTERS = {1: (10, 20, 30, 40), 2: (10, 20, 30)}


def reference_interval(per_cluster: dict, clusters, *, proportion: bool = True, seed: int = 0,
                       n_resamples: int = 1000) -> tuple[float | None, float | None]:
    """The interval of a ratio statistic, straight from the definition in workers/scoring/stats.py:
    per_cluster maps a cluster id to (Σ numerator, Σ denominator) of its units; `clusters` are all the
    population's cluster ids (the columns of W, in id order)."""
    clusters = sorted(clusters)
    num = np.array([per_cluster.get(c, (0, 0))[0] for c in clusters], dtype=float)
    den = np.array([per_cluster.get(c, (0, 0))[1] for c in clusters], dtype=float)
    holding = int(np.count_nonzero(den))
    if holding < 2:
        return None, None
    if proportion and (num.sum() == 0 or num.sum() == den.sum()):
        return wilson_interval(0 if num.sum() == 0 else holding, holding)
    w = resampling_weights(len(clusters), n_resamples, seed).astype(float)
    ratios = []
    for r in range(n_resamples):
        d = sum(w[r, i] * den[i] for i in range(len(clusters)))
        if d:
            ratios.append(sum(w[r, i] * num[i] for i in range(len(clusters))) / d)
    lo, hi = np.quantile(ratios, [0.025, 0.975])
    return float(lo), float(hi)
