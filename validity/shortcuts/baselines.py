"""Blind baselines: they see the question and the options, never the image.

Every baseline returns, for the choice items it is asked about, a per-option boolean prediction
(the option set it picks); `table.segment_correct` turns that into right / wrong per item.

- prior: per category, the most frequent gold among the shown options (the exact option set first,
  back-off to the category's gold counts per option);
- text: scikit-learn logistic regression (SGD, log loss, streamed in chunks) over hashed features of
  each (question, option) pair; the best-scoring option wins;
- longest / shortest: the option with the most / fewest characters;
- rarest: the option string shown least often in train within the category (hand-written tell);
- odd_one_out: the option least similar to the others (mean token Jaccard).

prior, text and rarest are fitted on a training selection; the others need no fitting.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import SGDClassifier
from sklearn.utils import murmurhash3_32

from .table import ItemTable, segment_pick_max, words


@dataclass(frozen=True)
class Baseline:
    code: str
    label: str
    fitted: bool
    description: str


BASELINES = (
    Baseline("prior", "Prior", True, "per category, the most frequent train gold among the shown options "
             "(the same option set first, back-off to the category)"),
    Baseline("text", "Text-only classifier", True, "logistic regression on hashed word and character n-grams of "
             "each option and question-word x option features, fitted on train"),
    Baseline("longest", "Longest option", False, "the option with the most characters"),
    Baseline("shortest", "Shortest option", False, "the option with the fewest characters"),
    Baseline("rarest", "Rarest option", True, "the option string shown least often in train within the category "
             "(hand-written among templated)"),
    Baseline("odd_one_out", "Least similar option", False, "the option with the lowest mean token Jaccard "
             "similarity to the other options"),
)
CODES = tuple(b.code for b in BASELINES)
BIT = {code: 1 << i for i, code in enumerate(CODES)}


def option_rows(table: ItemTable, items: np.ndarray) -> np.ndarray:
    """Flat option indices of the given choice items (in order)."""
    counts = table.n_options()[items]
    if not len(items):
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    return np.repeat(table.ptr[:-1][items], counts) + (np.arange(counts.sum()) - np.repeat(offsets, counts))


def _keys(table: ItemTable) -> np.ndarray:
    """(category, option text) as one int64 per option."""
    ocat = table.category[table.choice][table.owner].astype(np.int64)
    return ocat * max(1, len(table.option_texts)) + table.opt_id


def _lookup(keys: np.ndarray, uniq: np.ndarray, counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(keys), dtype=np.float64)
    if not len(uniq):
        return out
    pos = np.clip(np.searchsorted(uniq, keys), 0, len(uniq) - 1)
    found = uniq[pos] == keys
    out[found] = counts[pos[found]]
    return out


class Features:
    """Per-table caches shared by every fit: option n-gram rows, question words, set keys."""

    def __init__(self, table: ItemTable, *, n_features: int = 2 ** 20):
        self.table = table
        self.n_features = n_features
        self.keys = _keys(table)
        texts = table.option_texts
        word_vec = HashingVectorizer(analyzer="word", ngram_range=(1, 2), n_features=2 ** 18, alternate_sign=False,
                                     norm=None, dtype=np.float32)
        char_vec = HashingVectorizer(analyzer="char_wb", ngram_range=(2, 4), n_features=2 ** 18, alternate_sign=False,
                                     norm="l2", dtype=np.float32)
        self.option_matrix = sp.hstack([word_vec.transform(texts), char_vec.transform(texts)], format="csr") \
            if texts else sp.csr_matrix((0, 2 ** 19), dtype=np.float32)
        # question words (unique per question), per choice item
        vocab: dict[str, int] = {}
        cache: dict[str, list[int]] = {}
        qptr, qids = [0], []
        for i in table.choice:
            q = table.questions[i]
            ids = cache.get(q)
            if ids is None:
                ids = cache[q] = sorted({vocab.setdefault(w, len(vocab)) for w in words(q)})
            qids.extend(ids)
            qptr.append(len(qids))
        self.qptr = np.asarray(qptr, dtype=np.int64)
        self.qids = np.asarray(qids, dtype=np.int64)
        # length rank tags per option: 0 longest, 1 shortest, 2 in between (ties count as both ends)
        if len(table.opt_len):
            starts = table.starts()
            lmax = np.maximum.reduceat(table.opt_len, starts)[table.owner]
            lmin = np.minimum.reduceat(table.opt_len, starts)[table.owner]
            self.rank_tag = np.where(table.opt_len == lmax, 0, np.where(table.opt_len == lmin, 1, 2)).astype(np.int64)
        else:
            self.rank_tag = np.zeros(0, dtype=np.int64)
        # the exact option set of each choice item (order-free), for the prior
        self.set_keys = [(int(table.category[table.choice[j]]),
                          tuple(sorted(table.opt_id[table.ptr[j]:table.ptr[j + 1]].tolist())))
                         for j in range(table.n_choice)]
        self._odd = None

    def _hash(self, a: np.ndarray, b: np.ndarray, salt: int) -> np.ndarray:
        mixed = ((a.astype(np.int64) * 1_000_003 + b.astype(np.int64)) & 0x7FFFFFFF).astype(np.int32)
        return np.asarray(murmurhash3_32(mixed, seed=salt, positive=True), dtype=np.int64) % self.n_features

    def pair_matrix(self, items: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
        """Features of every (question, option) pair of the given choice items, and the flat option rows."""
        t = self.table
        rows = option_rows(t, items)
        owner = t.owner[rows]
        oid = t.opt_id[rows]
        cat = t.category[t.choice][owner]
        n_q = (self.qptr[owner + 1] - self.qptr[owner])
        total = int(n_q.sum())
        pair_rep = np.repeat(np.arange(len(rows)), n_q)
        offsets = np.cumsum(n_q) - n_q
        within = np.arange(total) - np.repeat(offsets, n_q)
        qword = self.qids[np.repeat(self.qptr[owner], n_q) + within] if total else np.zeros(0, np.int64)
        cols = [self._hash(qword, oid[pair_rep], 1), self._hash(cat, oid, 2), self._hash(cat, self.rank_tag[rows], 3),
                self._hash(np.zeros_like(oid), self.rank_tag[rows], 4)]
        r = np.concatenate([pair_rep, np.arange(len(rows)), np.arange(len(rows)), np.arange(len(rows))])
        c = np.concatenate(cols)
        cross = sp.csr_matrix((np.ones(len(c), dtype=np.float32), (r, c)), shape=(len(rows), self.n_features))
        return sp.hstack([cross, self.option_matrix[oid]], format="csr"), rows

    def odd_scores(self) -> np.ndarray:
        """Per option: minus its mean token Jaccard similarity to the other options of its item."""
        if self._odd is None:
            t = self.table
            tokens = [frozenset(words(x)) for x in t.option_texts]
            out = np.zeros(len(t.opt_id), dtype=np.float64)
            for j in range(t.n_choice):
                a, b = t.ptr[j], t.ptr[j + 1]
                sets = [tokens[k] for k in t.opt_id[a:b]]
                for x, s in enumerate(sets):
                    sims = [len(s & o) / len(s | o) if (s or o) else 1.0 for y, o in enumerate(sets) if y != x]
                    out[a + x] = -float(np.mean(sims)) if sims else 0.0
            self._odd = out
        return self._odd


def fit_predict(feats: Features, train: np.ndarray, target: np.ndarray, *, seed: int = 0,
                min_train: int = 5, epochs: int | None = None, chunk_items: int = 4096) -> dict:
    """Fit the fitted baselines on `train` (bool over choice items) and predict `target` (bool over
    choice items). Returns {code: (pred per option, applicable per choice item)}; predictions are
    meaningful on the options of target items only."""
    t = feats.table
    opt_train = train[t.owner]
    ccat = t.category[t.choice]
    n_train_cat = np.bincount(ccat[train], minlength=len(t.categories))
    fitted_ok = n_train_cat[ccat] >= min_train            # per choice item: its category had enough train items
    always = np.ones(t.n_choice, dtype=bool)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    # prior: category-level gold counts per option, overridden by the exact option set when seen
    gold_uniq, gold_counts = np.unique(feats.keys[opt_train & t.opt_gold], return_counts=True)
    shown_uniq, shown_counts = np.unique(feats.keys[opt_train], return_counts=True)
    gold_n = _lookup(feats.keys, gold_uniq, gold_counts)
    pred = segment_pick_max(gold_n, t)
    rate = gold_n / np.maximum(_lookup(feats.keys, shown_uniq, shown_counts), 1)
    by_set: dict[tuple, Counter] = {}
    for j in np.flatnonzero(train):
        a, b = t.ptr[j], t.ptr[j + 1]
        by_set.setdefault(feats.set_keys[j], Counter())[tuple(sorted(t.opt_id[a:b][t.opt_gold[a:b]].tolist()))] += 1
    multi = t.choice_is_multi()
    for j in np.flatnonzero(target):
        a, b = t.ptr[j], t.ptr[j + 1]
        seen = by_set.get(feats.set_keys[j])
        if seen:
            best = seen.most_common(1)[0][0]
            pred[a:b] = np.isin(t.opt_id[a:b], best)
        elif multi[j]:
            chosen = rate[a:b] > 0.5
            if chosen.any():
                pred[a:b] = chosen
    out["prior"] = (pred, fitted_ok)

    # rarest option string in train (within the category)
    out["rarest"] = (segment_pick_max(-_lookup(feats.keys, shown_uniq, shown_counts), t), fitted_ok)
    out["longest"] = (segment_pick_max(t.opt_len.astype(np.float64), t), always)
    out["shortest"] = (segment_pick_max(-t.opt_len.astype(np.float64), t), always)
    out["odd_one_out"] = (segment_pick_max(feats.odd_scores(), t), always)
    out["text"] = _text(feats, train, target, seed=seed, epochs=epochs, chunk_items=chunk_items, fitted_ok=fitted_ok)
    return out


def _text(feats: Features, train, target, *, seed, epochs, chunk_items, fitted_ok):
    t = feats.table
    score = np.zeros(len(t.opt_id), dtype=np.float64)
    train_items = np.flatnonzero(train)
    if not len(train_items):
        return segment_pick_max(score, t), np.zeros(t.n_choice, dtype=bool)
    n_pairs = int(t.n_options()[train_items].sum())
    if epochs is None:  # small tables get more passes; the paper's scale gets a few
        epochs = int(np.clip(np.ceil(300_000 / max(n_pairs, 1)), 4, 40))
    model = SGDClassifier(loss="log_loss", alpha=1e-5, random_state=seed, learning_rate="optimal")
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        order = rng.permutation(train_items)
        for k in range(0, len(order), chunk_items):
            chunk = np.sort(order[k:k + chunk_items])
            X, rows = feats.pair_matrix(chunk)
            model.partial_fit(X, t.opt_gold[rows].astype(np.int8), classes=np.array([0, 1], dtype=np.int8))
    target_items = np.flatnonzero(target)
    for k in range(0, len(target_items), chunk_items):
        X, rows = feats.pair_matrix(target_items[k:k + chunk_items])
        score[rows] = model.decision_function(X)
    return segment_pick_max(score, t), fitted_ok
