"""Rescoring after a gold correction: every prediction on any version of the item, in every run, is
scored again against the current version's gold; what changed is written back with an append-only
`PredictionRescore` row, and each affected run's metrics (its leaderboard) are recomputed: only the
models whose predictions changed (`run_score(changed_endpoints=...)`); the stored metrics of the others
are kept, as they still describe those models' unchanged predictions.

The expected answer of an old variant under the new gold follows the variant generator
(annotation/variants/__init__.py): a variant whose expected answer is the item's gold (clean, hints,
option permutations, visual cues, dose-response, ablations, premise injection, and true premise —
the control of false premise, whose expected answer is the gold with `rejects_premise: False`) now
expects the new gold, with its letter(s) looked up in *that variant's* option order; a variant whose
expected answer is not the gold (false premise: "the premise is false", `rejects_premise: True`;
negation: "no" about an absent finding) keeps it. Whether a model adopted a cue does not depend on
the gold, so `cue_adopted` stays.

Joint answer + box variants (`expected["evidence_box"]`) are judged against the new version's evidence
boxes: when their box is no longer among them (a box correction replaced it), the new evidence box that
overlaps it most takes its place; the model's box (`Prediction.box`) gets a new IoU.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from django.db import transaction
from django.db.models import F, OuterRef, Q, Subquery

from adjudication.models import PredictionRescore
from annotation.models import QAItem
from annotation.variants import letters_for
from audit.services import audit_record
from workers.models import EvaluationRun, Prediction
from workers.scoring.item import box_iou, score_prediction
from workers.services.scoring import run_score

KEEPS_EXPECTED = ("rejects_premise", "absent_finding")   # expected answer not derived from the gold


def _evidence_box_under(old, boxes: list | None):
    """The evidence box of a joint variant under the new version's evidence `boxes` (module docstring)."""
    if not boxes or old is None:
        return old
    as_lists = [[float(v) for v in b] for b in boxes]
    if [float(v) for v in old] in as_lists:
        return old
    best = max(as_lists, key=lambda b: box_iou(b, old))
    return best if box_iou(best, old) > 0 or len(as_lists) == 1 else old


def expected_under(variant_expected: dict, variant_options: list, gold, answer_type: str,
                   evidence_boxes: list | None = None) -> dict:
    """The expected answer of an existing variant when the item's gold becomes `gold` (and its evidence
    boxes `evidence_boxes`, [x0, y0, x1, y1] each, when known)."""
    expected = dict(variant_expected or {})
    if "evidence_box" in expected:
        expected["evidence_box"] = _evidence_box_under(expected["evidence_box"], evidence_boxes)
    if any(expected.get(flag) for flag in KEEPS_EXPECTED):
        return expected
    expected["value"] = list(gold) if isinstance(gold, (list, tuple)) else gold
    try:
        expected["letter"] = letters_for(list(variant_options or []), gold, answer_type)
    except ValueError:      # the new gold is not among this variant's options: nothing can match it
        expected["letter"] = None
    return expected


@dataclass
class RescoreSummary:
    predictions: int = 0
    changed: int = 0
    flipped_to_correct: int = 0
    flipped_to_wrong: int = 0
    runs: list = field(default_factory=list)


def predictions_rescore(*, item_key, actor, reason: str, case=None, rescore_runs: bool = True) -> RescoreSummary:
    """Rescore every prediction on the item `item_key` against its current gold (module docstring)."""
    gold_item = QAItem.objects.select_related("category").get(item_key=item_key, is_current=True)
    answer_type = gold_item.category.answer_type
    evidence = [[b.x0, b.y0, b.x1, b.y1] for b in gold_item.evidence_boxes.order_by("pk")]
    summary = RescoreSummary()
    history, changed = [], []
    rows = (Prediction.objects.filter(item__item_key=item_key).select_related("variant").order_by("pk"))
    for p in rows.iterator(chunk_size=2000):
        summary.predictions += 1
        v = p.variant
        expected = expected_under(v.expected_answer, v.options, gold_item.gold_answer, answer_type, evidence)
        score = score_prediction(answer_type=answer_type, kind=v.kind, expected=expected, params=v.params or {},
                                 options=v.options or [], outcome=p.outcome, value=p.parsed, box=p.box)
        if score.correct == p.correct and score.iou == p.iou:
            continue
        history.append(PredictionRescore(prediction=p, gold_item=gold_item, correct_before=p.correct,
                                         correct_after=score.correct, iou_before=p.iou, iou_after=score.iou,
                                         reason=reason[:300], case=case))
        if score.correct != p.correct:
            if score.correct:
                summary.flipped_to_correct += 1
            else:
                summary.flipped_to_wrong += 1
        p.correct, p.iou = score.correct, score.iou
        changed.append(p)
    summary.changed = len(changed)
    with transaction.atomic():
        Prediction.objects.bulk_update(changed, ["correct", "iou"], batch_size=1000)
        PredictionRescore.objects.bulk_create(history, batch_size=1000)
        audit_record(actor=actor, action="workers.predictions.rescore", target=gold_item,
                     after={**asdict(summary), "item_key": str(item_key), "reason": reason,
                            "case": case.pk if case is not None else None})
    summary.runs = runs_to_rescore(gold_item)
    if rescore_runs:
        for run in EvaluationRun.objects.filter(pk__in=summary.runs).order_by("pk"):
            run_score(run=run, actor=actor, changed_endpoints=endpoints_rescored_since_scoring(run))
    return summary


def endpoints_rescored_since_scoring(run: EvaluationRun) -> set[int]:
    """The models of `run` with a prediction rescored after the run's metrics were computed (this
    correction's, and any an earlier worker left behind): only their metrics change, so `run_score`
    computes only theirs and keeps the stored rest (`workers.services.scoring.run_score`)."""
    rescored = PredictionRescore.objects.filter(prediction__run=run)
    if run.scored_at is not None:
        rescored = rescored.filter(created_at__gt=run.scored_at)
    return set(rescored.order_by().values_list("prediction__endpoint_id", flat=True).distinct())


def runs_to_rescore(gold_item: QAItem) -> list[int]:
    """Scored runs with a prediction rescored against `gold_item` after the run's metrics were
    computed: also those a worker killed between the rescoring and the run scoring left behind."""
    latest = (PredictionRescore.objects.filter(gold_item=gold_item, prediction__run_id=OuterRef("pk"))
              .order_by("-created_at").values("created_at")[:1])
    return list(EvaluationRun.objects.filter(metrics__isnull=False)
                .annotate(rescored_at=Subquery(latest)).filter(rescored_at__isnull=False)
                .filter(Q(scored_at__isnull=True) | Q(scored_at__lt=F("rescored_at")))
                .order_by("pk").values_list("pk", flat=True))
