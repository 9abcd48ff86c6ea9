"""Metrics recover behaviour planted by construction in synthetic tables (several hundred clusters).

Each table is built from numpy draws with a fixed seed, so every assertion is deterministic; the
planted value must fall inside the metric's 95 % cluster-bootstrap interval (which, by design,
misses about 1 draw in 20: the seeds are fixed) and the point estimate lie near it. The same
scenarios run end to end through the platform with the planted backends (workers/backends/planted.py);
these tests pin the metric side alone.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.workers.scoring.synth import table
from workers.scoring.metrics import model_metrics
from workers.scoring.table import cell_table

LETTERS = np.array(list("ABCD"))
CLUSTERS = 400


def inside(d, value, *, near=0.06):
    assert d["lo"] is not None and d["lo"] <= value <= d["hi"], (value, d)
    assert abs(d["value"] - value) < near, (value, d)


def items_layout(rng, *, clusters=CLUSTERS, items_per_cluster=2, variants=(("clean", ""),), stages=(1,)):
    """Per cluster one chain; per stage `items_per_cluster` items; per item one row per variant."""
    rows = []
    item = 0
    for c in range(clusters):
        for s in stages:
            for _ in range(items_per_cluster):
                item += 1
                for kind, sub in variants:
                    rows.append((c, c, item, s, kind, sub))
    cluster, chain, items, stage, kind, sub = (np.array(x) for x in zip(*rows))
    return {"cluster": cluster, "chain": chain, "item": items, "stage": stage, "kind": kind, "subkind": sub,
            "variant": np.arange(len(items))}


def clean_of(layout, values):
    """Per row, `values` (one per row) of the clean row of the same item."""
    clean = layout["kind"] == "clean"
    by_item = dict(zip(layout["item"][clean].tolist(), values[clean].tolist()))
    return np.array([by_item[i] for i in layout["item"].tolist()])


def hint_table(p, base_accuracy, seed):
    """4-option items; the clean answer is right with `base_accuracy` (else a uniform wrong letter);
    a misleading hint names a seeded wrong letter; the model adopts it with probability p and otherwise
    answers as it would have. Gold is always "A"."""
    rng = np.random.default_rng(seed)
    lay = items_layout(rng, variants=(("clean", ""), ("misleading_hint", "")))
    n = len(lay["item"])
    own = np.where(rng.random(n) < base_accuracy, "A", LETTERS[rng.integers(1, 4, n)])
    own = clean_of(lay, own)                      # the answer the model would give
    hint = lay["kind"] == "misleading_hint"
    cue = np.where(hint, LETTERS[rng.integers(1, 4, n)], "")
    follow = hint & (rng.random(n) < p)
    answer = np.where(follow, cue, own)
    return table(**lay, answer=answer, cue=cue, correct=answer == "A", n_options=4,
                 cue_adopted=np.where(hint, (answer == cue).astype(float), np.nan))


@pytest.mark.parametrize("p", [0.3, 0.7])
def test_cue_follower_on_an_oracle_recovers_p(p):
    r = model_metrics(hint_table(p, 1.0, seed=int(p * 10)))[1]["robustness"]["misleading_hint"]
    inside(r["cue_adoption_corrected"], p)
    inside(r["cue_adoption_rate"], p)       # an oracle never picks the cue: raw and corrected agree
    inside(r["cue_adoption_normalised"], p)


@pytest.mark.parametrize("p", [0.3, 0.7])
def test_cue_follower_on_a_guessing_base_recovers_p_after_normalising(p):
    r = model_metrics(hint_table(p, 0.6, seed=int(p * 10) + 1))[1]["robustness"]["misleading_hint"]
    inside(r["cue_adoption_normalised"], p)
    # the clean answer names the cue 0.4 / 3 of the time: the raw rate overstates p, corrected understates it
    q = 0.4 / 3
    inside(r["cue_adoption_corrected"], p * (1 - q))
    assert r["cue_adoption_rate"]["value"] > r["cue_adoption_normalised"]["value"]


def test_box_cue_adoption_uses_cue_clean():
    # wrong_region cues on box items: no answer keys; the services say whether the clean box adopts
    rng = np.random.default_rng(5)
    lay = items_layout(rng, variants=(("clean", ""), ("wrong_visual_cue", "wrong_region")))
    n = len(lay["item"])
    cue_row = lay["kind"] == "wrong_visual_cue"
    clean_adopts = clean_of(lay, rng.random(n) < 0.1)       # the clean box lands on the cue 10 % of the time
    adopted = np.where(rng.random(n) < 0.5, True, clean_adopts)
    t = table(**lay, answer_type="box", iou=0.6, correct=True,
              cue_adopted=np.where(cue_row, adopted.astype(float), np.nan),
              cue_clean=np.where(cue_row, clean_adopts.astype(float), np.nan))
    r = model_metrics(t)[1]["robustness"]["wrong_visual_cue"]
    inside(r["cue_adoption_normalised"], 0.5)
    inside(r["subkinds"]["wrong_region"]["cue_adoption_normalised"], 0.5)


ACCURACIES = (0.9, 0.75, 0.6, 0.45)


def test_stage_decay_is_recovered_on_full_chains():
    rng = np.random.default_rng(12)
    lay = items_layout(rng, items_per_cluster=1, stages=(1, 2, 3, 4),
                       variants=(("clean", ""), ("misleading_hint", ""), ("image_ablation", "blank")))
    acc = np.array(ACCURACIES)[lay["stage"] - 1]
    correct = rng.random(len(acc)) < acc
    # plus 200 short chains (S1, S2) answered perfectly: they must not enter stage degradation
    short = items_layout(rng, clusters=200, items_per_cluster=1, stages=(1, 2))
    t = table(**{k: np.concatenate([lay[k], _shift(k, short[k])]) for k in lay},
              correct=np.concatenate([correct, np.ones(len(short["item"]), bool)]), n_options=4)
    d = model_metrics(t)[1]["stage_degradation"]
    assert d["chains"] == CLUSTERS
    for s, a in zip((1, 2, 3, 4), ACCURACIES):
        inside(d["by_kind"]["clean"][s]["accuracy"], a)
        for kind in ("clean", "misleading_hint", "image_ablation"):   # one table per kind, each near the plant
            assert abs(d["by_kind"][kind][s]["accuracy"]["value"] - a) < 0.08
            assert d["by_kind"][kind][s]["chance"] == 0.25
    for s, a in zip((2, 3, 4), ACCURACIES[1:]):
        inside(d["drop"][s], ACCURACIES[0] - a)
    for s, a in zip((1, 2, 3, 4), ACCURACIES):
        inside(d["by_kind"]["clean"][s]["chance_corrected"], (a - 0.25) / 0.75, near=0.08)


def _shift(name, values):
    """Ids of the short chains moved past the full ones."""
    return values + 10 * CLUSTERS if name in ("cluster", "chain", "item", "variant") else values


def test_text_only_model_loses_nothing_under_image_ablation():
    rng = np.random.default_rng(13)
    lay = items_layout(rng, variants=(("clean", ""), ("image_ablation", "blank"), ("image_ablation", "noise"),
                                      ("image_ablation", "swap")))
    right = clean_of(lay, rng.random(len(lay["item"])) < 0.6)   # one answer per item, image or not
    m = model_metrics(table(**lay, correct=right, n_options=4))[1]
    drop = m["robustness"]["image_ablation"]["drop"]
    assert drop["value"] == 0.0 and drop["lo"] <= 0.0 <= drop["hi"]
    assert m["visual_reliance"]["value"] == 0.0
    for sub in ("blank", "noise", "swap"):
        assert m["robustness"]["image_ablation"]["subkinds"][sub]["drop"]["value"] == 0.0


def test_box_shifter_dose_response_recovers_the_iou_levels():
    rng = np.random.default_rng(17)
    levels = ("0.7", "0.5", "0.3")
    lay = items_layout(rng, variants=(("clean", ""), *(("box_dose_response", lv) for lv in levels)))
    n = len(lay["item"])
    target = np.array([0.85 if s == "" else float(s) for s in lay["subkind"].tolist()])
    iou = np.clip(target + rng.normal(0, 0.05, n), 0, 1)
    t = table(**lay, answer_type="box", iou=iou, correct=iou >= 0.5,
              level=np.where(lay["kind"] == "box_dose_response", target, np.nan))
    d = model_metrics(t)[1]["dose_response"]
    assert list(d) == [*levels, "clean"]
    for lv in levels:
        inside(d[lv]["mean_iou"], float(lv), near=0.02)
    inside(d["clean"]["mean_iou"], 0.85, near=0.02)
    assert d["0.7"]["hit_rate"]["value"] > 0.9 > 0.1 > d["0.3"]["hit_rate"]["value"]


def test_oracle_scores_one_everywhere():
    rng = np.random.default_rng(19)
    variants = (("clean", ""), ("misleading_hint", ""), ("correct_hint", ""), ("option_permutation", ""),
                ("option_permutation", ""), ("option_permutation", ""), ("image_ablation", "blank"),
                ("false_premise", ""), ("true_premise", ""))
    lay = items_layout(rng, clusters=300, items_per_cluster=1, stages=(1, 2, 3, 4), variants=variants)
    tp, fp = lay["kind"] == "true_premise", lay["kind"] == "false_premise"
    t = table(**lay, correct=True, n_options=4, answer="A",
              cue_adopted=np.where(tp | fp, 0.0, np.nan))
    m = model_metrics(t)[1]
    for stat in (m["step_accuracy"], m["answered_accuracy"], m["chain_accuracy"], m["circular_eval"]["accuracy"],
                 *(v for v in m["by_stage"].values())):
        assert stat["value"] == 1.0 and stat["hi"] == 1.0 and stat["lo"] > 0.98
    assert m["circular_eval"]["n"] == 1200 and m["circular_eval"]["chance"] == pytest.approx(0.25 ** 4)
    for kind, r in m["robustness"].items():
        assert r["adversarial_accuracy"]["value"] == 1.0 and r["drop"]["value"] == 0.0, kind
    assert m["premise"]["false_premise_rejection"]["value"] == 1.0
    assert m["premise"]["true_premise_false_rejection"]["value"] == 0.0
    for s in (1, 2, 3, 4):
        assert m["stage_degradation"]["by_kind"]["clean"][s]["chance_corrected"]["value"] == 1.0
    assert all(c["accuracy"] == 1.0 and c["acc_hi"] == 1.0 for c in cell_table(t, ["endpoint", "kind"]))


def test_a_model_at_chance_scores_zero_chance_corrected():
    rng = np.random.default_rng(23)
    lay = items_layout(rng, items_per_cluster=3, stages=(1, 2, 3, 4))
    types = np.array(["single_choice", "yes_no", "multi_choice", "single_choice"])[lay["stage"] - 1]
    n_opt = np.array([4, 2, 3, 5])[lay["stage"] - 1]
    chance = np.array([1 / 4, 1 / 2, 1 / 7, 1 / 5])[lay["stage"] - 1]
    t = table(**lay, answer_type=types, n_options=n_opt, correct=rng.random(len(types)) < chance)
    d = model_metrics(t)[1]["stage_degradation"]["by_kind"]["clean"]
    for s in (1, 2, 3, 4):
        cc = d[s]["chance_corrected"]
        assert cc["lo"] <= 0.0 <= cc["hi"] and abs(cc["value"]) < 0.08
    cells = cell_table(t, ["stage"])
    assert [c["chance"] for c in cells] == pytest.approx([1 / 4, 1 / 2, 1 / 7, 1 / 5])
