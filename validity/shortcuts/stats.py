"""Descriptive statistics of an item set: gold distribution, never/always-gold options, option tells,
and the cluster bootstrap used for every interval. Pure numpy / scipy."""
from __future__ import annotations

from collections import Counter

import numpy as np
from scipy import stats as sps

from .table import ItemTable


def cluster_bootstrap(num: np.ndarray, den: np.ndarray, clusters: np.ndarray, *, n_boot: int = 1000,
                      seed: int = 0, chunk: int = 200) -> np.ndarray | None:
    """Replicates (n_boot x k) of the ratio sum(num)/sum(den) per column, resampling whole clusters
    (patients) with replacement. None when fewer than 2 clusters (no interval can be honest)."""
    num = np.asarray(num, dtype=np.float64).reshape(len(clusters), -1)
    den = np.asarray(den, dtype=np.float64).reshape(len(clusters), -1)
    codes, inv = np.unique(clusters, return_inverse=True)
    J = len(codes)
    if J < 2:
        return None
    S = np.zeros((J, num.shape[1]))
    D = np.zeros((J, den.shape[1]))
    np.add.at(S, inv, num)
    np.add.at(D, inv, den)
    rng = np.random.default_rng(seed)
    out = np.empty((n_boot, num.shape[1]))
    for b0 in range(0, n_boot, chunk):
        b = min(chunk, n_boot - b0)
        draws = rng.integers(0, J, size=(b, J))
        W = np.bincount((draws + (np.arange(b) * J)[:, None]).ravel(), minlength=b * J).reshape(b, J).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[b0:b0 + b] = (W @ S) / (W @ D)
    return out


def interval(replicates: np.ndarray | None, column: int = 0) -> list[float] | None:
    if replicates is None:
        return None
    col = replicates[:, column]
    col = col[np.isfinite(col)]
    if not len(col):
        return None
    lo, hi = np.percentile(col, [2.5, 97.5])
    return [float(lo), float(hi)]


def normalised_entropy(counts, k: int) -> float:
    counts = np.asarray(counts, dtype=np.float64)
    if k <= 1 or counts.sum() == 0:
        return 0.0
    return float(sps.entropy(counts) / np.log(k))


def gold_distribution(table: ItemTable, cmask: np.ndarray, *, n_boot: int, seed: int, top: int = 25) -> dict | None:
    """cmask: bool over choice items. k (for the entropy) is the answer space seen in the cell: the
    distinct gold values plus the option texts of single-choice and yes/no items."""
    items = table.choice[cmask]
    if not len(items):
        return None
    golds = [table.gold_keys[i] for i in items]
    counts = Counter(golds)
    space = set(counts)
    multi = table.choice_is_multi()
    for j in np.flatnonzero(cmask & ~multi):
        space.update(table.option_texts[o] for o in table.opt_id[table.ptr[j]:table.ptr[j + 1]])
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    majority, n_major = ordered[0]
    share = n_major / len(golds)
    is_major = np.array([g == majority for g in golds], dtype=np.float64)
    reps = cluster_bootstrap(is_major, np.ones_like(is_major), table.cluster[items], n_boot=n_boot, seed=seed)
    return {"n": len(golds), "k": len(space), "counts": [[v, n] for v, n in ordered[:top]],
            "n_distinct": len(counts), "majority": majority, "majority_share": share,
            "majority_share_ci": interval(reps),
            "entropy": normalised_entropy([n for _, n in ordered], len(space))}


def never_always_gold(table: ItemTable, cmask: np.ndarray, *, min_shown: int = 5) -> dict:
    """Option texts shown at least `min_shown` times in the cell that are never / always the gold."""
    sel = cmask[table.owner]
    ids = table.opt_id[sel]
    if not len(ids):
        return {"never_gold": [], "always_gold": [], "min_shown": min_shown}
    shown = np.bincount(ids, minlength=len(table.option_texts))
    gold = np.bincount(ids[table.opt_gold[sel]], minlength=len(table.option_texts))
    eligible = shown >= min_shown
    never = np.flatnonzero(eligible & (gold == 0))
    always = np.flatnonzero(eligible & (gold == shown))
    def fmt(idx):
        return sorted(([table.option_texts[o], int(shown[o])] for o in idx), key=lambda x: (-x[1], x[0]))
    return {"never_gold": fmt(never), "always_gold": fmt(always), "min_shown": min_shown}


class Tells:
    """Per choice item option tells, computed once: length rank of the gold, word counts, and whether
    the gold is the only hand-written option (an option string shown once in its category)."""

    def __init__(self, table: ItemTable):
        t = self.table = table
        self.single = np.array([table.answer_type[i] == "single_choice" for i in table.choice], dtype=bool)
        n_opt = t.n_options()
        starts = t.starts()
        pos = np.arange(len(t.opt_id)) - t.ptr[:-1][t.owner]
        # single-choice gold: its length and position (first gold for safety)
        gold_flat = np.flatnonzero(t.opt_gold)
        _, first = np.unique(t.owner[gold_flat], return_index=True)
        g = gold_flat[first]
        self.gold_len = np.zeros(t.n_choice, dtype=np.int64)
        gold_pos = np.zeros(t.n_choice, dtype=np.int64)
        self.gold_len[t.owner[g]] = t.opt_len[g]
        gold_pos[t.owner[g]] = pos[g]
        gl = self.gold_len[t.owner]
        longer = (t.opt_len > gl).astype(np.int64)
        tie_before = ((t.opt_len == gl) & (pos < gold_pos[t.owner])).astype(np.int64)
        self.rank = 1 + (np.add.reduceat(longer + tie_before, starts) if len(starts) else np.zeros(0, np.int64))
        self.n_opt = n_opt
        gold_words = np.add.reduceat(np.where(t.opt_gold, t.opt_words, 0), starts) if len(starts) else np.zeros(0)
        all_words = np.add.reduceat(t.opt_words, starts) if len(starts) else np.zeros(0)
        n_gold = np.add.reduceat(t.opt_gold.astype(np.int64), starts) if len(starts) else np.zeros(0)
        self.gold_words = gold_words / np.maximum(n_gold, 1)
        self.distractor_words = (all_words - gold_words) / np.maximum(n_opt - n_gold, 1)
        # hand-written: the option string occurs in only one item of the category (all audited items)
        ocat = t.category[t.choice][t.owner].astype(np.int64)
        key = ocat * max(1, len(t.option_texts)) + t.opt_id
        uniq, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
        hand = (cnt[inv] == 1)
        self.n_hand = np.add.reduceat(hand.astype(np.int64), starts) if len(starts) else np.zeros(0, np.int64)
        gold_hand = np.add.reduceat((hand & t.opt_gold).astype(np.int64), starts) if len(starts) else np.zeros(0)
        self.gold_only_hand = (self.n_hand == 1) & (gold_hand == 1)

    def summary(self, cmask: np.ndarray) -> dict:
        sel = cmask & self.single
        n = int(sel.sum())
        out = {"n_single_choice": n, "length_rank": None, "word_count": None, "handwritten": None}
        if not n:
            return out
        ranks, nopt = self.rank[sel], self.n_opt[sel]
        by_n = {}
        stat, df, small = 0.0, 0, False
        for k in np.unique(nopt):
            counts = np.bincount(ranks[nopt == k] - 1, minlength=int(k))[: int(k)]
            by_n[int(k)] = counts.tolist()
            if k >= 2 and counts.sum() > 0:
                res = sps.chisquare(counts)
                stat += float(res.statistic)
                df += int(k) - 1
                small = small or counts.sum() / k < 5
        p = float(sps.chi2.sf(stat, df)) if df else None
        out["length_rank"] = {"counts_by_n_options": by_n, "chi2": stat if df else None, "df": df, "p": p,
                              "expected_below_5": small, "gold_longest_share": float(np.mean(ranks == 1)),
                              "gold_longest_chance": float(np.mean(1.0 / nopt)),
                              "gold_shortest_share": float(np.mean(ranks == nopt))}
        out["word_count"] = {"gold_mean": float(np.mean(self.gold_words[sel])),
                             "distractor_mean": float(np.mean(self.distractor_words[sel]))}
        one = self.n_hand[sel] == 1
        only = self.gold_only_hand[sel]
        out["handwritten"] = {"items_with_one_handwritten": int(one.sum()), "gold_only_handwritten": int(only.sum()),
                              "share_of_items": float(only.mean()),
                              "share_when_one": float(only.sum() / one.sum()) if one.any() else None,
                              "chance_when_one": float(np.mean(1.0 / nopt[one])) if one.any() else None}
        return out
