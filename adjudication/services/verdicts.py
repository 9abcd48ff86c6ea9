"""Verdicts: a reader submits one; the case resolves when its readings say so; the resolution
changes the benchmark (docs/adjudication.md).

Optimistic locking: the case page carries the case `version`. Every decision (a resolution, a tie,
an assignment or withdrawal) bumps it; a submission whose version is stale is refused with
`CaseConflict` (a `common.errors.Conflict`: 409 in the API, with the case's current `version`) and
nothing is written, so a second adjudicator never overwrites the first. In
double reading, the first of the two readings does not bump the version: the second reader's
independent verdict is still wanted.

Effects of the deciding verdict, in the same transaction:
- confirmed: nothing changes but the case;
- corrected: a new QAItem version with the new gold answer (a redrawn box also becomes a new
  grounding box, source "adjudication", as the item's evidence) and its variants; after commit the
  predictions of every run on any version of the item are rescored (Celery, `adjudication.rescore`),
  and each affected run's metrics (leaderboards) are recomputed;
- ambiguous: the item's status becomes "ambiguous" (excluded from releases);
- flawed: the item's status becomes "rejected".
Open Label Studio annotator disagreements on the case's item or image are marked resolved.
"""
from __future__ import annotations

import json

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.roles import Capability, user_can
from adjudication.models import AdjudicationCase, CaseReading, Verdict
from adjudication.services.assignment import conflicted_readers, tiebreak_assign
from annotation.models import Finding, GroundingBox, QAItem
from annotation.services.findings import validate_box
from annotation.services.qa import qa_item_revise
from annotation.services.variants import variants_generate
from audit.services import audit_record
from common.errors import Conflict
from labelstudio.models import AnnotatorDisagreement

CHOICE_TYPES = ("single_choice", "yes_no", "multi_choice")
MAX_TIME_SPENT_S = 6 * 3600


class CaseConflict(Conflict):
    """The case changed since the reader opened it; their verdict was not saved. Carries the case
    (the case page shows its current state) and, in the API's error body, its current `version`."""

    def __init__(self, message: str, *, case: AdjudicationCase):
        super().__init__(message, version=case.version)
        self.case = case


def current_item(case: AdjudicationCase) -> QAItem | None:
    if not case.item_key:
        return None
    return (QAItem.objects.select_related("category", "chain__image").filter(item_key=case.item_key, is_current=True)
            .first())


def clean_answer(item: QAItem, answer):
    """The corrected gold in the item's own form, or ValidationError with what is wrong."""
    kind = item.category.answer_type
    if kind in CHOICE_TYPES:
        values = answer if isinstance(answer, list) else [answer]
        unknown = [v for v in values if v not in item.options]
        if not values or unknown:
            raise ValidationError(f"pick the new answer from the item's options ({', '.join(map(str, item.options))})")
        if kind == "multi_choice":
            new = [o for o in item.options if o in values]
        elif len(values) != 1:
            raise ValidationError("this item takes exactly one answer")
        else:
            new = values[0]
    elif kind == "box":
        image = item.chain.image
        if not isinstance(answer, (list, tuple)) or len(answer) != 4:
            raise ValidationError("redraw the box on the image: four numbers x0, y0, x1, y1")
        new = [round(v, 2) for v in validate_box(image, answer)]
    else:
        new = str(answer or "").strip()
        if not new:
            raise ValidationError("type the corrected answer")
    if _same(new, item.gold_answer):
        raise ValidationError("the corrected answer is the current gold answer; choose “gold confirmed” instead")
    return new


def _same(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) == 4 and all(
            isinstance(x, (int, float)) for x in (*a, *b)):
        return all(abs(float(x) - float(y)) < 1e-6 for x, y in zip(a, b, strict=True))
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _opinion(reading: CaseReading) -> str:
    """What two readings must share to agree: the verdict, and for a correction the new answer."""
    return json.dumps([reading.verdict, reading.answer], sort_keys=True)


def _claim(case: AdjudicationCase, reader) -> CaseReading:
    """The reader's pending reading, or a new one when the case still has room for a reader."""
    readings = list(case.readings.select_for_update())
    mine = next((r for r in readings if r.reader_id == reader.pk), None)
    if mine is not None and mine.status == CaseReading.Status.SUBMITTED:
        raise CaseConflict(f"you already gave your verdict on this case ({mine.get_verdict_display()}, "
                           f"{timezone.localtime(mine.submitted_at):%Y-%m-%d %H:%M}); it was not changed", case=case)
    if mine is not None and mine.status == CaseReading.Status.ASSIGNED:
        return mine
    role = case.role_open_to(reader.pk, readings)
    if role is None:
        tie = case.status == AdjudicationCase.Status.TIE
        raise PermissionDenied("this case awaits its assigned third reader" if tie
                               else "this case is assigned to another adjudicator")
    if mine is not None:  # withdrawn earlier: the same row comes back
        mine.status, mine.role, mine.assigned_by = CaseReading.Status.ASSIGNED, role, None
        return mine
    return CaseReading(case=case, reader=reader, role=role)


def case_verdict_submit(*, case_id: int, reader, verdict: str, expected_version: int, answer=None,
                        comment: str = "", time_spent_s: float | None = None) -> AdjudicationCase:
    """Record `reader`'s verdict on the case (module docstring). Raises CaseConflict (stale version,
    case already decided, verdict already given), PermissionDenied (no adjudicator role, own
    annotation, assigned to someone else) or ValidationError (bad verdict or answer)."""
    if not user_can(reader, Capability.ADJUDICATE):
        raise PermissionDenied("only adjudicators give verdicts")
    if verdict not in Verdict.values:
        raise ValidationError(f"unknown verdict {verdict!r}; use one of {', '.join(Verdict.values)}")
    with transaction.atomic():
        case = AdjudicationCase.objects.select_for_update().get(pk=case_id)
        if case.status == AdjudicationCase.Status.RESOLVED:
            who = case.resolved_by.get_username() if case.resolved_by_id else "someone"
            raise CaseConflict(f"{who} resolved this case ({case.get_outcome_display()}) at "
                               f"{timezone.localtime(case.resolved_at):%H:%M} while you had it open; "
                               "your verdict was not saved", case=case)
        if case.status == AdjudicationCase.Status.WITHDRAWN:
            raise CaseConflict("this case was withdrawn while you had it open (no reference run raises it any "
                               "more); your verdict was not saved", case=case)
        if case.version != int(expected_version):
            raise CaseConflict("this case changed while you had it open (another verdict or a new assignment); "
                               "your verdict was not saved: reload the case to see its current state", case=case)
        if reader.pk in conflicted_readers([case])[case.pk]:
            raise PermissionDenied("you annotated this item or image, so you cannot adjudicate it")
        item = current_item(case)
        if verdict == Verdict.CORRECTED:
            if item is None:
                raise ValidationError("an image-level case has no gold answer to correct; confirm, "
                                      "mark it ambiguous or flawed, and explain in the comment")
            answer = clean_answer(item, answer)
        else:
            answer = None
        reading = _claim(case, reader)
        reading.verdict, reading.answer, reading.comment = verdict, answer, (comment or "").strip()[:5000]
        reading.time_spent_s = None if time_spent_s is None else max(0.0, min(float(time_spent_s), MAX_TIME_SPENT_S))
        reading.status, reading.submitted_at = CaseReading.Status.SUBMITTED, timezone.now()
        reading.save()
        audit_record(actor=reader, action="adjudication.reading.submit", target=case, after={
            "reading": reading.pk, "role": reading.role, "verdict": verdict, "answer": answer,
            "time_spent_s": reading.time_spent_s, "has_comment": bool(reading.comment)})
        _decide(case, reading, item)
    return case


def _decide(case: AdjudicationCase, reading: CaseReading, item: QAItem | None) -> None:
    submitted = list(case.readings.filter(status=CaseReading.Status.SUBMITTED).order_by("submitted_at", "pk"))
    if not case.double_read or reading.role == CaseReading.Role.TIEBREAK:
        return _resolve(case, reading, item)
    pair = [r for r in submitted if r.role in (CaseReading.Role.PRIMARY, CaseReading.Role.SECOND)]
    if len(pair) < 2:
        case.status = AdjudicationCase.Status.IN_PROGRESS   # no version bump: the other reading is still wanted
        case.save(update_fields=["status", "updated_at"])
        return None
    if _opinion(pair[0]) == _opinion(pair[1]):
        return _resolve(case, reading, item)
    case.status, case.version = AdjudicationCase.Status.TIE, case.version + 1
    case.save(update_fields=["status", "version", "updated_at"])
    third = tiebreak_assign(case=case)
    audit_record(actor=reading.reader, action="adjudication.case.tie", target=case, after={
        "readings": [r.pk for r in pair], "verdicts": [r.verdict for r in pair],
        "third_reader": third.reader_id if third else None})
    return None


def _resolve(case: AdjudicationCase, reading: CaseReading, item: QAItem | None) -> None:
    actor = reading.reader
    result_item = None
    if item is not None:
        if reading.verdict == Verdict.CORRECTED:
            result_item = _correct(case, item, reading.answer, actor)
        elif reading.verdict in (Verdict.AMBIGUOUS, Verdict.FLAWED):
            status = QAItem.Status.AMBIGUOUS if reading.verdict == Verdict.AMBIGUOUS else QAItem.Status.REJECTED
            QAItem.objects.filter(pk=item.pk).update(status=status)
            audit_record(actor=actor, action="annotation.qa_item.review", target=item,
                         before={"status": item.status}, after={"status": status, "case": case.pk})
    case.status, case.outcome, case.outcome_answer = AdjudicationCase.Status.RESOLVED, reading.verdict, reading.answer
    case.resolved_at, case.resolved_by, case.result_item = timezone.now(), actor, result_item
    case.version += 1
    case.save(update_fields=["status", "outcome", "outcome_answer", "resolved_at", "resolved_by", "result_item",
                             "version", "updated_at"])
    CaseReading.objects.filter(case=case, status=CaseReading.Status.ASSIGNED).update(
        status=CaseReading.Status.WITHDRAWN)
    disagreements = AnnotatorDisagreement.objects.filter(image_id=case.image_id, status="open")
    if case.item_key:
        disagreements = disagreements.filter(qa_item__item_key=case.item_key)
    closed = disagreements.update(status="resolved")
    audit_record(actor=actor, action="adjudication.case.resolve", target=case, after={
        "outcome": reading.verdict, "answer": reading.answer, "deciding_reading": reading.pk,
        "result_item": result_item.pk if result_item else None, "annotator_disagreements_closed": closed})
    if result_item is not None:
        # import cycle: adjudication.tasks imports the services at module level (its tasks call them)
        from adjudication.tasks import rescore_later

        rescore_later(case.pk)


def _correct(case: AdjudicationCase, item: QAItem, answer, actor) -> QAItem:
    changes = {"gold_answer": answer}
    if item.category.answer_type == "box":
        old = list(item.evidence_boxes.select_related("finding"))
        replaced = next((b for b in old if _same([b.x0, b.y0, b.x1, b.y1], item.gold_answer)), None)
        source = replaced or next((b for b in old if b.finding.kind == Finding.Kind.LESION), None)
        if source is not None:
            box = GroundingBox.objects.create(
                finding=source.finding, image_id=source.image_id, x0=answer[0], y0=answer[1], x1=answer[2],
                y1=answer[3], label=source.label, source=Finding.Source.ADJUDICATION, author=actor)
            audit_record(actor=actor, action="annotation.box.create", target=box, after={
                "finding": source.finding_id, "box": answer, "source": "adjudication", "case": case.pk})
            changes["evidence_boxes"] = [b for b in old if b is not replaced] + [box]
    new = qa_item_revise(item=item, actor=actor, reason=f"adjudication case {case.pk}: gold corrected", **changes)
    seed = (item.variants.values_list("seed", flat=True).first()) or 0
    variants_generate(items=[new.pk], actor=actor, seed=seed)
    return new
