"""Intervals on the right unit: duplicating rows never narrows an interval (a Hypothesis property over
every interval model_metrics, cell_table and compare_models report), and correlated variants of one
item widen the interval as the item count says, not the row count."""
from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.workers.scoring.synth import table
from workers.scoring.metrics import PredictionTable, cell_table, compare_models, model_metrics
from workers.scoring.stats import wilson_interval

R = 200   # resamples in the property test (the property holds for any R)
KINDS = ("misleading_hint", "correct_hint", "option_permutation", "image_ablation", "wrong_visual_cue",
         "box_dose_response", "false_premise", "true_premise", "negation")
SUBKINDS = {"image_ablation": ("blank", "noise", "swap"), "wrong_visual_cue": ("wrong_region", "mislabeled"),
            "box_dose_response": ("0.7", "0.5", "0.3")}
BREAKDOWNS = (("endpoint", "split"), ("endpoint", "stage"), ("endpoint", "kind"),
              ("endpoint", "split", "stage", "category", "modality", "kind"), ("answer_type",), ())


def random_table(seed: int) -> PredictionTable:
    """Two endpoints, 1-6 clusters of 1-2 chains; chains of 1-4 stages; every item a clean variant and
    a few adversarial ones; random outcomes, IoUs, cue decisions and answer / cue keys."""
    rng = np.random.default_rng(seed)
    rows = []
    variant = item = chain = 0
    for cluster in range(int(rng.integers(1, 7))):
        for _ in range(int(rng.integers(1, 3))):
            chain += 1
            for stage in range(1, int(rng.integers(1, 5)) + 1):
                item += 1
                answer_type = ("single_choice", "yes_no", "multi_choice", "box")[int(rng.integers(0, 4))]
                n_opt = {"single_choice": 4, "yes_no": 2, "multi_choice": 3, "box": 0}[answer_type]
                kinds = ["clean", *rng.choice(KINDS, int(rng.integers(0, 4)))]
                for kind in kinds:
                    variant += 1
                    sub = str(rng.choice(SUBKINDS[kind])) if kind in SUBKINDS else ""
                    rows.append((variant, item, chain, cluster, stage, kind, sub, answer_type, n_opt))
    n = len(rows)
    variant_, item_, chain_, cluster_, stage_, kind, sub, answer_type, n_opt = (np.array(c) for c in zip(*rows))
    both = np.concatenate
    outcome = rng.choice(["answered", "answered", "answered", "abstained", "unparseable", "error"], 2 * n)
    box = both([answer_type, answer_type]) == "box"
    return table(variant=both([variant_, variant_]), item=both([item_, item_]), chain=both([chain_, chain_]),
                 cluster=both([cluster_, cluster_]), stage=both([stage_, stage_]), kind=both([kind, kind]),
                 subkind=both([sub, sub]), answer_type=both([answer_type, answer_type]), n_options=both([n_opt, n_opt]),
                 endpoint=np.repeat([1, 2], n), split=rng.choice(["train", "test"], 2 * n),
                 modality=rng.choice(["CT", "MR"], 2 * n), category=rng.choice(["a", "b"], 2 * n),
                 outcome=outcome, correct=(rng.random(2 * n) < 0.6) & (outcome == "answered"),
                 iou=np.where(box | (rng.random(2 * n) < 0.2), rng.random(2 * n), np.nan),
                 cue_adopted=np.where(rng.random(2 * n) < 0.5, (rng.random(2 * n) < 0.4).astype(float), np.nan),
                 answer=np.where(box, "", rng.choice(list("ABC"), 2 * n)),
                 cue=np.where(rng.random(2 * n) < 0.5, rng.choice(list("ABC"), 2 * n), ""),
                 cue_clean=np.where(rng.random(2 * n) < 0.3, (rng.random(2 * n) < 0.5).astype(float), np.nan),
                 level=np.array([float(s) if k == "box_dose_response" else np.nan
                                 for k, s in zip(both([kind, kind]), both([sub, sub]))]),
                 family=rng.choice(["letter", "json", "abstained", ""], 2 * n))


def duplicated(t: PredictionTable, k: int) -> PredictionTable:
    return PredictionTable(**{f.name: np.repeat(getattr(t, f.name), k) for f in fields(PredictionTable) if f.init})


def intervals(obj, path=()):
    """{path: (lo, hi)} of every interval in a nested output (stat/difference dicts and cell rows)."""
    out = {}
    if isinstance(obj, dict):
        for lo_key, hi_key in (("lo", "hi"), ("acc_lo", "acc_hi")):
            if lo_key in obj and hi_key in obj:
                out[path] = (obj[lo_key], obj[hi_key])
        for key, v in obj.items():
            out.update(intervals(v, (*path, key)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.update(intervals(v, (*path, i)))
    return out


def everything(t: PredictionTable) -> dict:
    return {"models": model_metrics(t, n_resamples=R),
            "cells": [cell_table(t, by, n_resamples=R) for by in BREAKDOWNS],
            "compare": compare_models(t, 1, 2, n_resamples=R, answered_only=False)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 5))
def test_duplicating_rows_never_narrows_an_interval(seed, k):
    t = random_table(seed)
    before, after = intervals(everything(t)), intervals(everything(duplicated(t, k)))
    assert before.keys() == after.keys()
    tol = 1e-6   # sums are float32: k × a rounds like a
    for path, (lo, hi) in before.items():
        lo2, hi2 = after[path]
        if lo is None:
            continue
        assert lo2 is not None and lo2 <= lo + tol and hi2 >= hi - tol, (path, (lo, hi), (lo2, hi2))


def test_the_property_sees_every_kind_of_interval():
    paths = intervals(everything(random_table(3)))
    names = {p[-1] for p in paths if p and isinstance(p[-1], str)}
    assert {"step_accuracy", "drop", "cue_adoption_corrected", "chance_corrected", "accuracy", "mean_iou",
            "bootstrap", "acc_a"} <= names
    assert any(p[0] == "cells" for p in paths)


def correlated(items: int = 50, variants: int = 14) -> PredictionTable:
    """`items` items (one cluster each), each answered identically under `variants` variants; half right."""
    item = np.repeat(np.arange(items), variants)
    return table(variant=np.arange(items * variants), item=item, cluster=item,
                 kind=np.where(np.arange(items * variants) % variants == 0, "clean", "option_permutation"),
                 correct=item % 2 == 0)


def test_correlated_variants_get_the_item_level_interval():
    (cell,) = cell_table(correlated(), [])
    assert cell["accuracy"] == 0.5 and cell["n"] == 700
    wilson = wilson_interval(350, 700)
    assert wilson == (pytest.approx(0.463, abs=0.002), pytest.approx(0.537, abs=0.002))   # what Wilson claimed
    assert cell["acc_lo"] == pytest.approx(0.37, abs=0.02) and cell["acc_hi"] == pytest.approx(0.63, abs=0.02)
    # the same on item-level aggregates: 50 items, half right
    (items,) = cell_table(correlated(variants=1), [])
    assert (items["acc_lo"], items["acc_hi"]) == (pytest.approx(cell["acc_lo"]), pytest.approx(cell["acc_hi"]))
    m = model_metrics(correlated())[1]["robustness"]["option_permutation"]["adversarial_accuracy"]
    assert m["clusters"] == 50 and m["hi"] - m["lo"] > 0.2


def test_one_cluster_reports_no_interval():
    t = table(variant=np.arange(20), item=np.arange(20), cluster=np.zeros(20, int), correct=np.arange(20) % 2 == 0)
    (cell,) = cell_table(t, [])
    assert cell["acc_lo"] is None and cell["acc_hi"] is None
    s = model_metrics(t)[1]["step_accuracy"]
    assert s["clusters"] == 1 and s["lo"] is None and math.isclose(s["value"], 0.5)
