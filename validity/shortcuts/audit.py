"""The shortcut audit: descriptive statistics on every audited item, blind baselines fitted on the
train split and scored on the evaluated split, per category / per stage / overall, with intervals
from a cluster bootstrap over patients, and a per-item image-necessary verdict."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import GroupKFold

from .baselines import BASELINES, BIT, CODES, Features, fit_predict
from .stats import Tells, cluster_bootstrap, gold_distribution, interval, never_always_gold
from .table import SPLITS, AuditInputError, ItemRow, ItemTable, chance, segment_correct

EVALUABLE_SPLITS = ("test", "val")
RED_POINTS, AMBER_POINTS = 0.10, 0.05                 # best blind accuracy minus chance
MAJORITY_LIMIT, MAJORITY_LIMIT_TWO = 0.60, 0.55       # answer balance targets (issue 12)
EFFECTIVE_Z = 2.58                                    # a baseline "works" in a category: one-sided, p < 0.005


@dataclass
class AuditParams:
    split: str = "test"
    seed: int = 0
    n_boot: int = 1000
    min_shown: int = 5        # an option counts as never/always gold when shown at least this often
    min_train: int = 5        # fitted baselines need this many train items in the category
    min_cell: int = 10        # fewer scored items than this: the cell is reported as too small
    min_patients: int = 10    # fewer patients than this: a patient-level interval means nothing; too small
    n_folds: int = 5          # grouped cross-fitting of train items' flags

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class AuditResult:
    results: dict
    item_id: np.ndarray       # every audited item
    split: list[str]
    mask: np.ndarray          # int16 bitmask of the blind baselines that got the item right (0 when not scored)
    image_necessary: list     # True / False, None when not assessed (box, short_text, malformed)


def validate_split(split: str) -> str:
    if split not in EVALUABLE_SPLITS:
        if split == "train":
            raise AuditInputError("the baselines are fitted on train; scoring them on train would score training "
                                  "data: choose 'test' or 'val'")
        raise AuditInputError(f"unknown split {split!r}: choose one of {', '.join(EVALUABLE_SPLITS)}")
    return split


def run_audit(rows: Iterable[ItemRow | dict], *, params: AuditParams | None = None,
              progress: Callable[[int, int, str], None] | None = None) -> AuditResult:
    p = params or AuditParams()
    validate_split(p.split)
    table = ItemTable.from_rows(rows)
    if table.n == 0:
        raise AuditInputError("the item set is empty: nothing to audit")
    total_steps = 3 + p.n_folds
    step = [0]

    def tick(label):
        step[0] += 1
        if progress:
            progress(min(step[0], total_steps), total_steps, label)

    tick("items read")
    feats = Features(table)
    csplit = table.split[table.choice]
    train = csplit == SPLITS.index("train")
    evaluated = csplit == SPLITS.index(p.split)
    nb = len(CODES)
    correct = np.zeros((table.n_choice, nb), dtype=bool)
    applicable = np.zeros((table.n_choice, nb), dtype=bool)

    def take(preds, target):
        for b, code in enumerate(CODES):
            pred, ok = preds[code]
            right = segment_correct(pred, table)
            correct[target, b] = right[target]
            applicable[target, b] = ok[target]

    take(fit_predict(feats, train, ~train, seed=p.seed, min_train=p.min_train), ~train)
    tick("baselines fitted on train")
    # grouped cross-fitting: every train item gets a flag from baselines that never saw its patient
    train_idx = np.flatnonzero(train)
    groups = table.cluster[table.choice][train_idx]
    n_groups = len(np.unique(groups))
    folds_done = 0
    if n_groups >= 2:
        for _, held in GroupKFold(n_splits=min(p.n_folds, n_groups)).split(train_idx, groups=groups):
            fold = np.zeros(table.n_choice, dtype=bool)
            fold[train_idx[held]] = True
            take(fit_predict(feats, train & ~fold, fold, seed=p.seed, min_train=p.min_train), fold)
            folds_done += 1
            tick(f"cross-fitted train fold {folds_done}")
    else:
        unfitted = [b for b, base in enumerate(BASELINES) if not base.fitted]
        preds = fit_predict(feats, np.zeros(table.n_choice, dtype=bool), train, seed=p.seed, min_train=p.min_train)
        take(preds, train)
        fitted_cols = [b for b in range(nb) if b not in unfitted]
        applicable[np.ix_(train, fitted_cols)] = False
    while step[0] < total_steps - 1:
        tick("cross-fitting")

    hits = correct & applicable
    choice_mask = (hits * np.array([BIT[c] for c in CODES])).sum(axis=1).astype(np.int16)
    item_chance = chance(table)
    effective, effective_report = _effective(table, train, hits, applicable, item_chance, p)
    choice_necessary = ~(hits & effective[table.category[table.choice]]).any(axis=1)
    mask = np.zeros(table.n, dtype=np.int16)
    mask[table.choice] = choice_mask
    necessary: list = [None] * table.n
    for j, i in enumerate(table.choice):
        necessary[i] = bool(choice_necessary[j])

    tells = Tells(table)
    ccat = table.category[table.choice]
    cstage = table.stage[table.choice]
    cells = {"overall": _cell(table, tells, "overall", "all items", np.ones(table.n, bool),
                              np.ones(table.n_choice, bool), evaluated, correct, applicable, item_chance,
                              choice_necessary, p, per_option=False)}
    stages = []
    for s, code in sorted(enumerate(table.stages), key=lambda x: x[1]):
        stages.append(_cell(table, tells, code, code, table.stage == s, cstage == s, evaluated, correct, applicable,
                            item_chance, choice_necessary, p, per_option=False))
    categories = []
    for c, code in enumerate(table.categories):
        cell = _cell(table, tells, code, code, table.category == c, ccat == c, evaluated, correct, applicable,
                     item_chance, choice_necessary, p, per_option=True)
        cell["stage"] = table.category_stage[code]
        cell["answer_type"] = table.category_type[code]
        cell["effective_baselines"] = effective_report[code]
        categories.append(cell)
    categories.sort(key=lambda x: (x["stage"], x["key"]))
    tick("statistics and intervals")

    by_split = {s: int((table.split == k).sum()) for k, s in enumerate(SPLITS)}
    not_scored = {}
    for i in range(table.n):
        if necessary[i] is None:
            not_scored[table.answer_type[i]] = not_scored.get(table.answer_type[i], 0) + 1
    results = {
        "version": 1,
        "params": p.as_dict(),
        "baselines": [{"code": b.code, "label": b.label, "fitted": b.fitted, "description": b.description,
                       "bit": BIT[b.code]} for b in BASELINES],
        "counts": {"items": table.n, "choice_items": table.n_choice, "by_split": by_split,
                   "scored": int(evaluated.sum()), "not_scored_by_type": not_scored,
                   "malformed_item_ids": table.invalid[:50], "n_malformed": len(table.invalid),
                   "patients": int(len(np.unique(table.cluster))),
                   "image_necessary": int(choice_necessary.sum()), "cross_fit_folds": folds_done},
        "overall": cells["overall"],
        "stages": stages,
        "categories": categories,
        "notes": [
            "Box and short-text items are listed but not scored by the choice baselines; their image-necessary "
            "flag stays empty (not assessed).",
            f"Baselines are fitted on train and scored on {p.split}; train items get their flag from grouped "
            f"cross-fitting ({folds_done} folds by patient), other items from the train-fitted baselines.",
            "Intervals: 95% percentile intervals of a cluster bootstrap over patients (split groups), "
            f"{p.n_boot} replicates, seed {p.seed}.",
        ],
    }
    return AuditResult(results=_plain(results), item_id=table.item_id, split=[SPLITS[k] for k in table.split],
                       mask=mask, image_necessary=necessary)


def _plain(value):
    """numpy scalars -> Python (the results are stored as JSON)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _effective(table, train, hits, applicable, item_chance, p):
    """Which blind baselines count for the image-necessary verdict, per category.

    With complementary guesses (longest and shortest cover both options of a two-option item) "some
    baseline got it right" is true by construction, so a baseline counts in a category only where it
    works: its out-of-sample (cross-fitted) accuracy on the category's train items is more than
    AMBER_POINTS above chance and significantly so (z > EFFECTIVE_Z against uniform guessing). A
    category with fewer than `min_train` train items cannot be judged: there every applicable
    baseline counts (the literal rule)."""
    ccat = table.category[table.choice]
    effective = np.zeros((len(table.categories), len(CODES)), dtype=bool)
    report = {}
    for c, code in enumerate(table.categories):
        sel = train & (ccat == c)
        rows = []
        if sel.sum() < p.min_train:
            effective[c] = True
            report[code] = {"judged": False, "codes": list(CODES), "train_accuracy": {}}
            continue
        accs = {}
        for b, base in enumerate(CODES):
            app = applicable[sel, b]
            if app.sum() < p.min_train:
                continue
            acc = float(hits[sel, b][app].mean())
            accs[base] = acc
            ch = item_chance[sel][app]
            se = float(np.sqrt((ch * (1 - ch)).sum())) / len(ch)      # binomial, under uniform guessing
            gap = acc - float(ch.mean())
            if gap > AMBER_POINTS and gap > EFFECTIVE_Z * se:
                effective[c, b] = True
                rows.append(base)
        report[code] = {"judged": True, "codes": rows, "train_accuracy": accs,
                        "train_chance": float(item_chance[sel].mean())}
    return effective, report


def _cell(table, tells, key, label, item_mask, cmask, evaluated, correct, applicable, item_chance, necessary, p,
          *, per_option: bool) -> dict:
    ev = cmask & evaluated
    n_eval = int(ev.sum())
    cell = {"key": key, "label": label, "n_items": int(item_mask.sum()), "n_choice": int(cmask.sum()),
            "max_options": int(table.n_options()[cmask].max()) if cmask.any() else 0,
            "n_train": int((cmask & (table.split[table.choice] == 0)).sum()), "n_scored": n_eval,
            "patients_scored": int(len(np.unique(table.cluster[table.choice][ev]))) if n_eval else 0,
            "gold": gold_distribution(table, cmask, n_boot=p.n_boot, seed=p.seed),
            "options": never_always_gold(table, cmask, min_shown=p.min_shown) if per_option else None,
            "tells": tells.summary(cmask),
            "chance": float(item_chance[ev].mean()) if n_eval else None,
            "image_necessary": {"n": int(necessary[cmask].sum()),
                                "share": float(necessary[cmask].mean()) if cmask.any() else None,
                                "n_scored": int(necessary[ev].sum()),
                                "share_scored": float(necessary[ev].mean()) if n_eval else None},
            "baselines": {}, "best": None}
    if n_eval:
        C = correct[ev].astype(np.float64)
        A = applicable[ev].astype(np.float64)
        ch = item_chance[ev][:, None] * A
        # columns: accuracy per baseline, then (accuracy - chance) per baseline
        num = np.hstack([C * A, C * A - ch])
        den = np.hstack([A, A])
        reps = cluster_bootstrap(num, den, table.cluster[table.choice][ev], n_boot=p.n_boot, seed=p.seed)
        nb = len(CODES)
        for b, code in enumerate(CODES):
            n_b = int(A[:, b].sum())
            if not n_b:
                cell["baselines"][code] = {"n": 0, "applicable": False, "accuracy": None, "ci": None, "chance": None,
                                           "minus_chance": None, "minus_chance_ci": None}
                continue
            acc = float((C[:, b] * A[:, b]).sum() / n_b)
            chn = float(ch[:, b].sum() / n_b)
            cell["baselines"][code] = {"n": n_b, "applicable": True, "accuracy": acc, "ci": interval(reps, b),
                                       "chance": chn, "minus_chance": acc - chn,
                                       "minus_chance_ci": interval(reps, nb + b)}
        scored = [(v["accuracy"], code) for code, v in cell["baselines"].items() if v["applicable"]]
        if scored:
            best_code = max(scored, key=lambda x: (x[0], -CODES.index(x[1])))[1]
            cell["best"] = {"code": best_code, **cell["baselines"][best_code]}
    cell["flag"], cell["flag_reasons"] = _flag(cell, p)
    return cell


def _flag(cell: dict, p: AuditParams) -> tuple[str, list[str]]:
    reasons = []
    if cell["n_scored"] < p.min_cell:
        return "grey", [f"too small: {cell['n_scored']} scored item(s) in the {p.split} split "
                        f"(fewer than {p.min_cell}); {cell['n_train']} train item(s)"]
    if cell["patients_scored"] < p.min_patients:
        return "grey", [f"too small: the {cell['n_scored']} scored item(s) come from {cell['patients_scored']} "
                        f"patient(s) (fewer than {p.min_patients}): the unit of the intervals is the patient"]
    best = cell["best"]
    red = False
    if best and best["minus_chance"] is not None:
        gap = best["minus_chance"]
        lo = (best["minus_chance_ci"] or [None])[0]
        if gap > RED_POINTS and (lo is None or lo > 0):
            red = True
            reasons.append(f"blind baseline '{best['code']}' is {gap * 100:.1f} points above chance")
        elif gap > AMBER_POINTS:
            reasons.append(f"blind baseline '{best['code']}' is {gap * 100:.1f} points above chance")
    gold = cell["gold"]
    if gold:
        limit = MAJORITY_LIMIT_TWO if cell["max_options"] == 2 else MAJORITY_LIMIT
        if gold["majority_share"] > limit:
            reasons.append(f"majority gold '{gold['majority']}' is {gold['majority_share'] * 100:.0f}% "
                           f"(limit {limit * 100:.0f}%)")
    opts = cell.get("options") or {}
    if opts.get("never_gold"):
        reasons.append(f"{len(opts['never_gold'])} option(s) never gold")
    if opts.get("always_gold"):
        reasons.append(f"{len(opts['always_gold'])} option(s) always gold")
    lr = (cell["tells"] or {}).get("length_rank") or {}
    if lr.get("p") is not None and lr["p"] < 0.05:
        reasons.append(f"gold length rank not uniform (chi-square p = {lr['p']:.2g})")
    if red:
        return "red", reasons
    return ("amber" if reasons else "green"), reasons
