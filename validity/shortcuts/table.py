"""The audited item set as columns (numpy arrays plus ragged option arrays). No Django.

Only "choice" items (single_choice, yes_no, multi_choice with >= 2 options and a gold among them)
are scored by the blind baselines; box and short_text items are kept in the table and counted,
never scored.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SPLITS = ("train", "val", "test")
CHOICE_TYPES = ("single_choice", "yes_no", "multi_choice")
_WORD = re.compile(r"\w+", re.UNICODE)


class AuditInputError(ValueError):
    """Bad input to the audit (empty item set, unknown split, malformed rows)."""


def words(text: str) -> list[str]:
    return _WORD.findall(str(text).lower())


@dataclass(frozen=True)
class ItemRow:
    item_id: int
    category: str
    stage: str
    answer_type: str
    question: str
    options: list
    gold: Any
    split: str           # train | val | test
    cluster: str         # patient / split group: the unit of the intervals


def _option_text(value) -> str:
    return value if isinstance(value, str) else str(value)


@dataclass
class ItemTable:
    # one entry per item
    item_id: np.ndarray          # int64
    category: np.ndarray         # int32 code into categories
    stage: np.ndarray            # int32 code into stages
    answer_type: list[str]
    split: np.ndarray            # int8: 0 train, 1 val, 2 test
    cluster: np.ndarray          # int64 code into clusters
    questions: list[str]
    categories: list[str]
    stages: list[str]
    category_stage: dict[str, str]
    category_type: dict[str, str]
    # choice items (scored): indices into the item arrays and ragged option arrays
    choice: np.ndarray           # int64 indices of scored items
    ptr: np.ndarray              # int64 (n_choice + 1): options of choice item j are ptr[j]:ptr[j+1]
    owner: np.ndarray            # int64 per option: its choice item
    opt_id: np.ndarray           # int64 per option: id into option_texts
    opt_gold: np.ndarray         # bool per option
    opt_len: np.ndarray          # int32 characters
    opt_words: np.ndarray        # int32 words
    option_texts: list[str]
    gold_keys: list[str]         # per item: the gold as one comparable string ("" for unscored)
    invalid: list[int] = field(default_factory=list)   # item ids whose gold is not among their options

    @property
    def n(self) -> int:
        return len(self.item_id)

    @property
    def n_choice(self) -> int:
        return len(self.choice)

    def starts(self) -> np.ndarray:
        return self.ptr[:-1]

    def n_options(self) -> np.ndarray:
        return np.diff(self.ptr)

    def choice_is_multi(self) -> np.ndarray:
        return np.array([self.answer_type[i] == "multi_choice" for i in self.choice], dtype=bool)

    @classmethod
    def from_rows(cls, rows: Iterable[ItemRow | Mapping]) -> ItemTable:
        item_id, cat, stage, atype, split, cluster, questions, gold_keys = [], [], [], [], [], [], [], []
        cat_codes: dict[str, int] = {}
        stage_codes: dict[str, int] = {}
        cluster_codes: dict[str, int] = {}
        option_codes: dict[str, int] = {}
        category_stage: dict[str, str] = {}
        category_type: dict[str, str] = {}
        choice, ptr, opt_id, opt_gold = [], [0], [], []
        invalid = []
        split_codes = {s: i for i, s in enumerate(SPLITS)}
        for row in rows:
            r = row if isinstance(row, ItemRow) else ItemRow(**row)
            if r.split not in split_codes:
                raise AuditInputError(f"item {r.item_id}: unknown split {r.split!r} "
                                      f"(expected one of {', '.join(SPLITS)})")
            i = len(item_id)
            item_id.append(int(r.item_id))
            cat.append(cat_codes.setdefault(r.category, len(cat_codes)))
            stage.append(stage_codes.setdefault(r.stage, len(stage_codes)))
            category_stage.setdefault(r.category, r.stage)
            category_type.setdefault(r.category, r.answer_type)
            atype.append(r.answer_type)
            split.append(split_codes[r.split])
            cluster.append(cluster_codes.setdefault(r.cluster or f"item:{r.item_id}", len(cluster_codes)))
            questions.append(r.question or "")
            options = [_option_text(o) for o in (r.options or [])]
            key = ""
            if r.answer_type in CHOICE_TYPES and len(options) >= 2 and len(set(options)) == len(options):
                golds = r.gold if r.answer_type == "multi_choice" and isinstance(r.gold, (list, tuple)) else [r.gold]
                golds = {_option_text(g) for g in golds}
                flags = [o in golds for o in options]
                if golds and sum(flags) == len(golds):
                    choice.append(i)
                    for o, f in zip(options, flags):
                        opt_id.append(option_codes.setdefault(o, len(option_codes)))
                        opt_gold.append(f)
                    ptr.append(len(opt_id))
                    key = " + ".join(o for o, f in zip(options, flags) if f)
                else:
                    invalid.append(int(r.item_id))
            gold_keys.append(key)
        option_texts = list(option_codes)
        opt_id_a = np.asarray(opt_id, dtype=np.int64)
        lengths = np.fromiter((len(t) for t in option_texts), dtype=np.int32, count=len(option_texts))
        nwords = np.fromiter((len(words(t)) for t in option_texts), dtype=np.int32, count=len(option_texts))
        ptr_a = np.asarray(ptr, dtype=np.int64)
        return cls(
            item_id=np.asarray(item_id, dtype=np.int64), category=np.asarray(cat, dtype=np.int32),
            stage=np.asarray(stage, dtype=np.int32), answer_type=atype, split=np.asarray(split, dtype=np.int8),
            cluster=np.asarray(cluster, dtype=np.int64), questions=questions, categories=list(cat_codes),
            stages=list(stage_codes), category_stage=category_stage, category_type=category_type,
            choice=np.asarray(choice, dtype=np.int64), ptr=ptr_a,
            owner=np.repeat(np.arange(len(choice), dtype=np.int64), np.diff(ptr_a)),
            opt_id=opt_id_a, opt_gold=np.asarray(opt_gold, dtype=bool),
            opt_len=lengths[opt_id_a] if len(opt_id_a) else np.zeros(0, np.int32),
            opt_words=nwords[opt_id_a] if len(opt_id_a) else np.zeros(0, np.int32),
            option_texts=option_texts, gold_keys=gold_keys, invalid=invalid,
        )


def segment_pick_max(score: np.ndarray, table: ItemTable) -> np.ndarray:
    """One-hot (per option) of the best-scoring option of each choice item; ties go to the option
    shown first (options are shown in a shuffled order, so this is a fair tie-break)."""
    pred = np.zeros(len(score), dtype=bool)
    if not len(score):
        return pred
    segmax = np.maximum.reduceat(score, table.starts())
    hit = np.flatnonzero(score >= segmax[table.owner])
    _, first = np.unique(table.owner[hit], return_index=True)
    pred[hit[first]] = True
    return pred


def segment_correct(pred: np.ndarray, table: ItemTable) -> np.ndarray:
    """Per choice item: the predicted option set equals the gold set exactly."""
    if not len(pred):
        return np.zeros(0, dtype=bool)
    wrong = np.logical_or.reduceat(pred != table.opt_gold, table.starts())
    return ~wrong


def chance(table: ItemTable) -> np.ndarray:
    """Expected accuracy of uniform guessing per choice item: 1/n; multi_choice exact set 1/(2^n - 1)."""
    n = table.n_options().astype(np.float64)
    multi = table.choice_is_multi()
    out = 1.0 / n
    out[multi] = 1.0 / (np.power(2.0, n[multi]) - 1.0)
    return out
