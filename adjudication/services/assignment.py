"""Who reads which case: manual assignment, round-robin, double reading, and the one rule that
always holds: nobody adjudicates an item they annotated.

"Annotated" means any of: authored a version of the QA item (`QAItem.created_by`), drew a box on
the image (`GroundingBox.author`, except boxes an adjudication itself created), or submitted a
Label Studio annotation of a task on the image (`LabelStudioAnnotation.author`), or is listed as
an annotator of an annotator disagreement on the image.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, F

from accounts.roles import Capability, Role, user_can
from adjudication.models import ACTIVE_READING_STATUSES, UNDECIDED_STATUSES, AdjudicationCase, CaseReading
from annotation.models import Finding, GroundingBox, QAItem
from audit.services import audit_record
from labelstudio.models import AnnotatorDisagreement, LabelStudioAnnotation


def readers_needed(case: AdjudicationCase) -> int:
    return 2 if case.double_read else 1


def conflicted_readers(cases: Sequence[AdjudicationCase]) -> dict[int, set[int]]:
    """case id -> ids of the users who annotated its item or image (module docstring). Four queries
    for any number of cases."""
    by_image: dict[int, set[int]] = defaultdict(set)
    by_key: dict[str, set[int]] = defaultdict(set)
    image_ids = {c.image_id for c in cases}
    keys = {c.item_key for c in cases if c.item_key}
    for image_id, author in (LabelStudioAnnotation.objects.filter(task__image_id__in=image_ids, author__isnull=False)
                             .order_by().values_list("task__image_id", "author_id").distinct()):
        by_image[image_id].add(author)
    for image_id, author in (GroundingBox.objects.filter(image_id__in=image_ids, author__isnull=False)
                             .exclude(source=Finding.Source.ADJUDICATION)
                             .order_by().values_list("image_id", "author_id").distinct()):
        by_image[image_id].add(author)
    for image_id, annotators in AnnotatorDisagreement.objects.filter(image_id__in=image_ids).values_list(
            "image_id", "annotators"):
        by_image[image_id].update(a for a in annotators or () if isinstance(a, int))
    for key, author in (QAItem.objects.filter(item_key__in=keys, created_by__isnull=False)
                        .order_by().values_list("item_key", "created_by_id").distinct()):
        by_key[str(key)].add(author)
    return {c.pk: by_image[c.image_id] | by_key.get(str(c.item_key), set()) for c in cases}


def adjudicators() -> list:
    """Active users in the adjudicator group, by username (the round-robin order)."""
    return list(get_user_model().objects.filter(is_active=True, groups__name=Role.ADJUDICATOR.value)
                .order_by("username").distinct())


def _check_reader(user) -> None:
    if not user_can(user, Capability.ADJUDICATE):
        raise ValidationError(f"{user.username} does not have the adjudicator role")


def _next_role(case: AdjudicationCase, active: int) -> str:
    if case.status == AdjudicationCase.Status.TIE:
        return CaseReading.Role.TIEBREAK
    return CaseReading.Role.PRIMARY if active == 0 else CaseReading.Role.SECOND


def _open_reading(case: AdjudicationCase, reader, *, role: str, assigned_by) -> CaseReading:
    """Create (or revive a withdrawn) reading of `case` by `reader`."""
    reading, created = CaseReading.objects.get_or_create(
        case=case, reader=reader, defaults={"role": role, "assigned_by": assigned_by})
    if not created:
        if reading.status != CaseReading.Status.WITHDRAWN:
            raise ValidationError(f"{reader.username} already reads case {case.pk}")
        reading.status, reading.role, reading.assigned_by = CaseReading.Status.ASSIGNED, role, assigned_by
        reading.save(update_fields=["status", "role", "assigned_by"])
    return reading


def case_assign(*, case: AdjudicationCase, readers: Sequence, actor,
                double_read: bool | None = None) -> list[CaseReading]:
    """Assign `readers` to an undecided case (a curator's manual choice). `double_read` switches
    independent double reading on or off for the case. Refused: a reader without the adjudicator
    role, a reader who annotated the item or image, more readers than the case needs."""
    with transaction.atomic():
        case = AdjudicationCase.objects.select_for_update().get(pk=case.pk)
        if case.status not in UNDECIDED_STATUSES:
            raise ValidationError(f"case {case.pk} is already {case.get_status_display()}")
        if double_read is not None and double_read != case.double_read:
            if case.readings.filter(status=CaseReading.Status.SUBMITTED).exists():
                raise ValidationError("double reading cannot be switched after a verdict was submitted")
            case.double_read = double_read
        conflicted = conflicted_readers([case])[case.pk]
        tie = case.status == AdjudicationCase.Status.TIE      # a tie needs one third reader
        active = case.readings.filter(status__in=ACTIVE_READING_STATUSES,
                                      **({"role": CaseReading.Role.TIEBREAK} if tie else {})).count()
        need = 1 if tie else readers_needed(case)
        if active + len(readers) > need:
            raise ValidationError(f"case {case.pk} needs {need} reader(s) and has {active}; withdraw one first")
        created = []
        for reader in readers:
            _check_reader(reader)
            if reader.pk in conflicted:
                raise ValidationError(f"{reader.username} annotated this item or image and cannot adjudicate it")
            created.append(_open_reading(case, reader, role=_next_role(case, active), assigned_by=actor))
            active += 1
        case.version += 1
        case.save(update_fields=["double_read", "version", "updated_at"])
        audit_record(actor=actor, action="adjudication.case.assign", target=case,
                     after={"readers": [r.pk for r in readers], "double_read": case.double_read,
                            "roles": [r.role for r in created]})
    return created


def reading_withdraw(*, reading: CaseReading, actor) -> None:
    """Take a pending reading back (e.g. to reassign); a submitted verdict is never withdrawn."""
    with transaction.atomic():
        case = AdjudicationCase.objects.select_for_update().get(pk=reading.case_id)
        reading = CaseReading.objects.select_for_update().get(pk=reading.pk)
        if reading.status != CaseReading.Status.ASSIGNED:
            raise ValidationError(f"this reading is {reading.status}; only a pending reading can be withdrawn")
        reading.status = CaseReading.Status.WITHDRAWN
        reading.save(update_fields=["status"])
        AdjudicationCase.objects.filter(pk=case.pk).update(version=F("version") + 1)
        audit_record(actor=actor, action="adjudication.case.withdraw", target=case,
                     after={"reader": reading.reader_id, "role": reading.role})


@dataclass
class RoundRobinSummary:
    cases: int = 0
    readings: int = 0
    skipped_conflicted: int = 0
    per_reader: dict = field(default_factory=dict)


def _loads(readers: Sequence) -> dict[int, int]:
    rows = (CaseReading.objects.filter(reader__in=readers, status=CaseReading.Status.ASSIGNED)
            .values("reader_id").annotate(n=Count("id")))
    loads = {r.pk: 0 for r in readers}
    loads.update({row["reader_id"]: row["n"] for row in rows})
    return loads


def _pick(readers: Sequence, loads: dict[int, int], exclude: set[int], k: int, cursor: int) -> tuple[list, int]:
    """k readers not in `exclude`: least loaded first, ties broken by the rotating cursor (round-robin)."""
    n = len(readers)
    order = sorted(range(n), key=lambda i: (loads[readers[i].pk], (i - cursor) % n))
    chosen = [readers[i] for i in order if readers[i].pk not in exclude][:k]
    if chosen:
        cursor = (readers.index(chosen[-1]) + 1) % n
    return chosen, cursor


def cases_assign_round_robin(*, case_ids: Iterable[int] | None = None, actor, readers: Sequence | None = None,
                             double_read: bool = False, limit: int = 500) -> RoundRobinSummary:
    """Give every undecided, unassigned case (of `case_ids`, default: the queue by priority, at most
    `limit`) one reader (two with `double_read`), least loaded adjudicator first, in turn. Cases
    whose every eligible reader annotated them are skipped and stay unassigned."""
    readers = list(readers) if readers is not None else adjudicators()
    for r in readers:
        _check_reader(r)
    summary = RoundRobinSummary()
    if not readers:
        raise ValidationError("there are no active adjudicators to assign cases to")
    qs = AdjudicationCase.objects.filter(status=AdjudicationCase.Status.OPEN).exclude(
        readings__status__in=ACTIVE_READING_STATUSES)
    if case_ids is not None:
        qs = qs.filter(pk__in=list(case_ids))
    with transaction.atomic():
        cases = list(qs.select_for_update(of=("self",)).order_by("-priority", "id")[:limit])
        conflicts = conflicted_readers(cases)
        # a reader withdrawn from a case is not handed it again automatically
        for case_id, reader_id in CaseReading.objects.filter(case__in=cases).values_list("case_id", "reader_id"):
            conflicts[case_id] = conflicts[case_id] | {reader_id}
        loads, cursor, rows = _loads(readers), 0, []
        k = 2 if double_read else 1
        for case in cases:
            chosen, cursor = _pick(readers, loads, conflicts[case.pk], k, cursor)
            if len(chosen) < k:
                summary.skipped_conflicted += 1
                continue
            for i, reader in enumerate(chosen):
                rows.append(CaseReading(case=case, reader=reader, assigned_by=actor if _authenticated(actor) else None,
                                        role=CaseReading.Role.PRIMARY if i == 0 else CaseReading.Role.SECOND))
                loads[reader.pk] += 1
                summary.per_reader[reader.username] = summary.per_reader.get(reader.username, 0) + 1
            case.double_read, case.version = double_read, case.version + 1
            summary.cases += 1
        CaseReading.objects.bulk_create(rows, batch_size=1000)
        AdjudicationCase.objects.bulk_update(list({r.case.pk: r.case for r in rows}.values()),
                                             ["double_read", "version"], batch_size=500)
        summary.readings = len(rows)
        audit_record(actor=actor, action="adjudication.cases.assign_round_robin", object_type="adjudication.case",
                     after={**asdict(summary), "double_read": double_read,
                            "case_ids": sorted({r.case_id for r in rows})[:1000]},
                     objects=[("adjudication.case", case_id) for case_id in {r.case_id for r in rows}])
    return summary


def _authenticated(user) -> bool:
    return bool(getattr(user, "is_authenticated", False))


def tiebreak_assign(*, case: AdjudicationCase) -> CaseReading | None:
    """Called inside the verdict transaction when two readings disagree: the least loaded eligible
    adjudicator who has not read the case becomes the third reader (None if nobody is eligible:
    a curator assigns one by hand)."""
    readers = adjudicators()
    taken = set(case.readings.values_list("reader_id", flat=True))
    exclude = conflicted_readers([case])[case.pk] | taken
    chosen, _ = _pick(readers, _loads(readers), exclude, 1, 0) if readers else ([], 0)
    if not chosen:
        return None
    return _open_reading(case, chosen[0], role=CaseReading.Role.TIEBREAK, assigned_by=None)
