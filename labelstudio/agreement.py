"""Agreement between annotators (and later between adjudicators).  Pure Python: no Django, no database.

* `box_iou`, `match_boxes`: one-to-one greedy matching of boxes by IoU.
* `cohen_kappa`, `fleiss_kappa`, `krippendorff_alpha_nominal`: chance-corrected agreement on nominal data.
* `task_agreement`: everything about one task seen by several annotators, pairwise, with a list of the
  disagreements an adjudicator has to look at; `TaskAgreement.as_dict()` is what goes into a JSONField.

Boxes are pixels ``(x0, y0, x1, y1)``, top-left inclusive, bottom-right exclusive (see `convert`).
Everything here is deterministic: same input, same output, same order.
"""
from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MISSING", "AnnotatorView", "LabeledBox", "PairAgreement", "TaskAgreement",
    "box_iou", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha_nominal", "match_boxes", "task_agreement",
]

MISSING = "∅"               # the category of an attribute one annotator did not set
_PE_ONE_EPS = 1e-12         # expected agreement this close to 1 counts as 1 (a single category)
_ROUND = 4                  # decimals kept by as_dict()

Box = tuple[float, float, float, float]


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two ``(x0, y0, x1, y1)`` boxes; 0.0 when they do not overlap or both have no area."""
    ax0, ay0, ax1, ay1 = a
    bx0, by0, bx1, by1 = b
    inter_w = min(ax1, bx1) - max(ax0, bx0)
    inter_h = min(ay1, by1) - max(ay0, by0)
    inter = inter_w * inter_h if inter_w > 0 and inter_h > 0 else 0.0
    area_a = max(ax1 - ax0, 0.0) * max(ay1 - ay0, 0.0)
    area_b = max(bx1 - bx0, 0.0) * max(by1 - by0, 0.0)
    union = area_a + area_b - inter
    return float(inter / union) if union > 0 and inter > 0 else 0.0


@dataclass(frozen=True)
class LabeledBox:
    """A box with its label and finding kind.  `attributes` (control -> value or list of values) is left out
    of equality and hashing, so boxes stay hashable whatever the attribute values are."""

    label: str
    box: Box
    kind: str = "lesion"
    attributes: Mapping = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if len(self.box) != 4:
            raise ValueError(f"box must be four numbers (x0, y0, x1, y1), got {self.box!r}")
        object.__setattr__(self, "box", tuple(float(v) for v in self.box))


def _same_label(a: LabeledBox, b: LabeledBox) -> bool:
    return a.label == b.label and a.kind == b.kind


def match_boxes(a: Sequence[LabeledBox], b: Sequence[LabeledBox], *, iou_threshold: float = 0.5,
                same_label: bool = True) -> list[tuple[int, int, float]]:
    """One-to-one matching of the boxes of `a` to those of `b`, as ``(i, j, iou)`` sorted by ``i``.

    Greedy on all candidate pairs by IoU, highest first (ties by ``(i, j)`` ascending); a candidate pair
    overlaps (IoU > 0), has IoU >= `iou_threshold` and, when `same_label`, the same label and kind.
    """
    candidates = []
    for i, box_a in enumerate(a):
        for j, box_b in enumerate(b):
            if same_label and not _same_label(box_a, box_b):
                continue
            iou = box_iou(box_a.box, box_b.box)
            if iou > 0 and iou >= iou_threshold:
                candidates.append((-iou, i, j))
    candidates.sort()
    used_a: set[int] = set()
    used_b: set[int] = set()
    matches = []
    for neg_iou, i, j in candidates:
        if i in used_a or j in used_b:
            continue
        used_a.add(i)
        used_b.add(j)
        matches.append((i, j, -neg_iou))
    return sorted(matches)


# ---------------------------------------------------------------------------------------------------------------
# chance-corrected agreement on nominal data
# ---------------------------------------------------------------------------------------------------------------

def _chance_corrected(observed: float, expected: float) -> float:
    """(po - pe) / (1 - pe); when pe is 1 (one category only): 1.0 if po is 1, else 0.0."""
    if expected >= 1.0 - _PE_ONE_EPS:
        return 1.0 if observed >= 1.0 - _PE_ONE_EPS else 0.0
    return (observed - expected) / (1.0 - expected)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' nominal judgments ``a[k]``, ``b[k]`` of the same items.

    None when there are no items; 1.0 / 0.0 when only one category occurs (expected agreement 1).
    Raises `ValueError` when `a` and `b` differ in length.
    """
    if len(a) != len(b):
        raise ValueError(f"cohen_kappa needs two equally long rating lists, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return None
    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    counts_a, counts_b = Counter(a), Counter(b)
    expected = sum(counts_a[c] * counts_b[c] for c in counts_a) / (n * n)
    return _chance_corrected(observed, expected)


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa; ``ratings[i]`` holds the categories that the raters of subject ``i`` gave it.

    Every subject needs the same number of raters n >= 2 (else `ValueError`); categories are any hashables.
    None when there are no subjects; 1.0 / 0.0 when only one category occurs (expected agreement 1).
    """
    if len(ratings) == 0:
        return None
    n = len(ratings[0])
    for i, subject in enumerate(ratings):
        if len(subject) != n:
            raise ValueError(f"fleiss_kappa needs the same number of raters for every subject: "
                             f"subject 0 has {n}, subject {i} has {len(subject)}")
    if n < 2:
        raise ValueError(f"fleiss_kappa needs at least 2 raters per subject, got {n}")
    subjects = len(ratings)
    totals: Counter = Counter()
    agreement_sum = 0.0
    for subject in ratings:
        counts = Counter(subject)
        totals.update(counts)
        agreement_sum += (sum(c * c for c in counts.values()) - n) / (n * (n - 1))
    observed = agreement_sum / subjects
    expected = sum((count / (subjects * n)) ** 2 for count in totals.values())
    return _chance_corrected(observed, expected)


def krippendorff_alpha_nominal(units: Sequence[Sequence[Hashable | None]]) -> float | None:
    """Krippendorff's alpha for nominal data; ``units[u]`` holds the values coders gave unit ``u``.

    None entries are missing values and ignored; units left with fewer than 2 values are not pairable and
    ignored.  Uses the coincidence matrix: ``alpha = 1 - Do / De``.  None when no value is pairable;
    1.0 / 0.0 when only one category occurs (expected disagreement 0).
    """
    coincidences: Counter = Counter()    # (c, k) -> o_ck over ordered pairs of values from different coders
    for unit in units:
        values = [v for v in unit if v is not None]
        m = len(values)
        if m < 2:
            continue
        for p, q in itertools.permutations(range(m), 2):
            coincidences[(values[p], values[q])] += 1.0 / (m - 1)
    marginals: Counter = Counter()
    for (c, _k), o in coincidences.items():
        marginals[c] += o
    n = sum(marginals.values())
    if n < 2 - 1e-9:
        return None
    observed = sum(o for (c, k), o in coincidences.items() if c != k) / n
    expected = (n * n - sum(v * v for v in marginals.values())) / (n * (n - 1))
    if expected <= _PE_ONE_EPS:
        return 1.0 if observed <= _PE_ONE_EPS else 0.0
    return 1.0 - observed / expected


# ---------------------------------------------------------------------------------------------------------------
# one task, several annotators
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AnnotatorView:
    """What one annotator (or adjudicator) said about a task: boxes and the answer (None: no answer given)."""

    annotator: str
    boxes: tuple[LabeledBox, ...] = ()
    answer: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "boxes", tuple(self.boxes))
        if self.answer is not None:
            object.__setattr__(self, "answer", tuple(self.answer))


@dataclass(frozen=True)
class PairAgreement:
    """Agreement of two annotators.  `matched` holds ``(i, j, iou)`` indices into their boxes; `box_f1` is
    ``2 * matched / (len(a) + len(b))`` (1.0 when both drew nothing); `mean_iou` is None without matches;
    `n_judgments` / `n_agree` count the categorical judgments (answer, attributes of matched boxes)."""

    annotator_a: str
    annotator_b: str
    matched: tuple[tuple[int, int, float], ...]
    unmatched_a: tuple[int, ...]
    unmatched_b: tuple[int, ...]
    box_f1: float
    mean_iou: float | None
    n_judgments: int
    n_agree: int


@dataclass(frozen=True)
class TaskAgreement:
    """Agreement on one task over all annotator pairs (see `task_agreement`)."""

    n_annotators: int
    pairs: tuple[PairAgreement, ...] = ()
    box_f1: float | None = None
    mean_iou: float | None = None
    percent_agreement: float | None = None
    kappa: float | None = None
    disagreements: tuple[dict, ...] = ()
    judgments: tuple[tuple[str, str], ...] = ()   # the pooled categorical judgments behind kappa

    @property
    def has_disagreement(self) -> bool:
        """True when any pair disagrees on a box, a label, an attribute or the answer."""
        return bool(self.disagreements)

    def as_dict(self) -> dict:
        """Plain JSON types only (lists, dicts, str, int, float rounded to 4 decimals, bool, None)."""
        return _plain({
            "n_annotators": self.n_annotators,
            "box_f1": self.box_f1,
            "mean_iou": self.mean_iou,
            "percent_agreement": self.percent_agreement,
            "kappa": self.kappa,
            "has_disagreement": self.has_disagreement,
            "pairs": [
                {
                    "annotator_a": p.annotator_a,
                    "annotator_b": p.annotator_b,
                    "matched": [[i, j, iou] for i, j, iou in p.matched],
                    "unmatched_a": list(p.unmatched_a),
                    "unmatched_b": list(p.unmatched_b),
                    "box_f1": p.box_f1,
                    "mean_iou": p.mean_iou,
                    "n_judgments": p.n_judgments,
                    "n_agree": p.n_agree,
                }
                for p in self.pairs
            ],
            "disagreements": list(self.disagreements),
        })


def _plain(value: Any) -> Any:
    """`value` with tuples as lists and floats rounded to 4 decimals, recursively."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return round(value, _ROUND)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    raise TypeError(f"cannot store {type(value).__name__} as JSON: {value!r}")


def _category(value: Any) -> str:
    """One attribute value or answer as a hashable category: lists become their sorted values joined by '|'."""
    if value is None:
        return MISSING
    if isinstance(value, (list, tuple)):
        return "|".join(sorted(str(v) for v in value))
    return str(value)


def _box_list(box: LabeledBox) -> list[float]:
    return [round(v, _ROUND) for v in box.box]


@dataclass
class _PairResult:
    agreement: PairAgreement
    judgments: list[tuple[str, str]]
    disagreements: list[dict]
    ious: list[float]


def _compare_pair(a: AnnotatorView, b: AnnotatorView, iou_threshold: float) -> _PairResult:
    names = [a.annotator, b.annotator]
    matched = match_boxes(a.boxes, b.boxes, iou_threshold=iou_threshold)
    matched_a = {i for i, _, _ in matched}
    matched_b = {j for _, j, _ in matched}
    unmatched_a = [i for i in range(len(a.boxes)) if i not in matched_a]
    unmatched_b = [j for j in range(len(b.boxes)) if j not in matched_b]

    judgments: list[tuple[str, str]] = []
    disagreements: list[dict] = []
    if a.answer is not None or b.answer is not None:
        answer_a = None if a.answer is None else _category(a.answer)
        answer_b = None if b.answer is None else _category(b.answer)
        if answer_a is not None and answer_b is not None:
            judgments.append((answer_a, answer_b))
        if answer_a != answer_b:
            disagreements.append({
                "kind": "answer", "annotators": names,
                "answers": [None if a.answer is None else list(a.answer), None if b.answer is None else list(b.answer)],
            })

    relabeled = match_boxes([a.boxes[i] for i in unmatched_a], [b.boxes[j] for j in unmatched_b],
                            iou_threshold=iou_threshold, same_label=False)
    relabeled_a = {unmatched_a[i] for i, _, _ in relabeled}
    relabeled_b = {unmatched_b[j] for _, j, _ in relabeled}
    for i, j, iou in relabeled:
        box_a, box_b = a.boxes[unmatched_a[i]], b.boxes[unmatched_b[j]]
        disagreements.append({
            "kind": "box_label", "annotators": names, "labels": [box_a.label, box_b.label],
            "iou": round(iou, _ROUND), "boxes": [_box_list(box_a), _box_list(box_b)],
        })

    for i, j, _iou in matched:
        box_a, box_b = a.boxes[i], b.boxes[j]
        for key in sorted(set(box_a.attributes) | set(box_b.attributes), key=str):
            pair = (_category(box_a.attributes.get(key)), _category(box_b.attributes.get(key)))
            judgments.append(pair)
            if pair[0] != pair[1]:
                disagreements.append({
                    "kind": "attribute", "annotators": names, "label": box_a.label, "attribute": str(key),
                    "values": list(pair), "boxes": [_box_list(box_a), _box_list(box_b)],
                })

    for view, unmatched, relabeled_side in ((a, unmatched_a, relabeled_a), (b, unmatched_b, relabeled_b)):
        for k in unmatched:
            if k not in relabeled_side:
                box = view.boxes[k]
                disagreements.append({
                    "kind": "box_unmatched", "annotators": names, "annotator": view.annotator,
                    "label": box.label, "box": _box_list(box),
                })

    ious = [iou for _, _, iou in matched]
    total = len(a.boxes) + len(b.boxes)
    agreement = PairAgreement(
        annotator_a=a.annotator,
        annotator_b=b.annotator,
        matched=tuple(matched),
        unmatched_a=tuple(unmatched_a),
        unmatched_b=tuple(unmatched_b),
        box_f1=2 * len(matched) / total if total else 1.0,
        mean_iou=sum(ious) / len(ious) if ious else None,
        n_judgments=len(judgments),
        n_agree=sum(1 for x, y in judgments if x == y),
    )
    return _PairResult(agreement, judgments, disagreements, ious)


def task_agreement(views: Sequence[AnnotatorView], *, iou_threshold: float = 0.5) -> TaskAgreement:
    """Agreement of the annotators of one task, over every pair ``(views[i], views[j])``, ``i < j``, in order.

    * `box_f1`: mean over pairs of the pair's box F1; `mean_iou`: mean IoU over the matched boxes of all pairs
      (None without any match).
    * judgments: the answer (when both gave one; sorted choices joined with '|') and, for every matched box
      pair, each attribute present on either box (missing -> ``"∅"``); `percent_agreement` and `kappa`
      (`cohen_kappa`) over the judgments of all pairs pooled, None without judgments.
    * `disagreements`: JSON-ready dicts with ``kind`` ``answer`` (also when only one of the two answered),
      ``box_label`` (same place, IoU >= threshold, different label or kind), ``attribute`` and
      ``box_unmatched``, each with ``annotators: [a, b]``.

    With fewer than two views there are no pairs and every statistic is None.
    """
    if len(views) < 2:
        return TaskAgreement(n_annotators=len(views))
    results = [_compare_pair(a, b, iou_threshold) for a, b in itertools.combinations(views, 2)]
    judgments = [pair for r in results for pair in r.judgments]
    ious = [iou for r in results for iou in r.ious]
    return TaskAgreement(
        n_annotators=len(views),
        pairs=tuple(r.agreement for r in results),
        box_f1=sum(r.agreement.box_f1 for r in results) / len(results),
        mean_iou=sum(ious) / len(ious) if ious else None,
        percent_agreement=sum(1 for x, y in judgments if x == y) / len(judgments) if judgments else None,
        kappa=cohen_kappa([x for x, _ in judgments], [y for _, y in judgments]),
        disagreements=tuple(d for r in results for d in r.disagreements),
        judgments=tuple(judgments),
    )
