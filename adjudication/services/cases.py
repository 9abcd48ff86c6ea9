"""Adjudication cases: detection results stored as a queue (docs/adjudication.md).

Only reference runs (`EvaluationRun.is_reference`, a curator's audited choice: workers/services/reference.py)
open or re-prioritise cases, so a throwaway run never reorders what the radiologists read; baselines never
count as models (the rules skip their answers).

`cases_sync(run_ids=...)` re-syncs the queue around those runs (what the `adjudication.detect` task does
after a reference run is scored, marked or unmarked):

- the detection rules read the predictions of every reference run on the chains the given runs touched
  (plus open Label Studio annotator disagreements), so a case's hits and priority always come from all
  the reference runs that cover its item, whichever of them was synced last;
- new keys become open cases; open or in-progress cases take the new hits and priority; a withdrawn
  case raised again is reopened; resolved cases stay resolved;
- each case records the runs that raised it (`run_ids`: the runs whose answers the firing hits read);
- an undecided case that cites a run which is no longer a reference run is re-scored without it; when
  no reference run raises it any more it is withdrawn if nobody gave a verdict yet (its pending
  readings are withdrawn too), and kept as it is when a verdict was already given (the reading goes on);
- a run that is not a reference run and that no case cites changes nothing.

One audit event per sync that changed anything."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from django.core.cache import cache
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from adjudication.facts import conflict_facts, draft_runs, run_facts
from adjudication.models import UNDECIDED_STATUSES, AdjudicationCase, CaseReading
from adjudication.rules import cases_from_hits, detect
from annotation.models import Image, QAItem
from audit.services import audit_record
from labelstudio.models import AnnotatorDisagreement
from workers.models import EvaluationRun, Prediction


@dataclass
class CasesSyncSummary:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    resolved_kept: int = 0
    reopened: int = 0
    withdrawn: int = 0
    kept_in_reading: int = 0      # no reference run raises it any more, but a verdict was already given
    reference_runs: list = field(default_factory=list)   # the given runs that are reference runs
    ignored_runs: list = field(default_factory=list)     # the given runs that are not (they add nothing)


def _hit_dicts(draft) -> list[dict]:
    return [{"rule": h.rule, "priority": h.priority, "models": list(h.models), "item_id": h.item_id,
             "evidence": h.evidence} for h in draft.hits]


def reference_run_ids() -> set[int]:
    return set(EvaluationRun.objects.filter(is_reference=True).values_list("pk", flat=True))


def _chains_of(run_ids: list[int]):
    """The chains these runs predicted on, and those of open annotator disagreements (a subquery)."""
    return QAItem.objects.filter(
        Q(pk__in=Prediction.objects.filter(run_id__in=run_ids).values("item_id"))
        | Q(pk__in=AnnotatorDisagreement.objects.filter(status="open", qa_item__isnull=False).values("qa_item_id"))
    ).values("chain_id")


def _citing(cases, runs: set[int]) -> list[AdjudicationCase]:
    return [c for c in cases if set(c.run_ids or ()) & runs]


def cases_sync(*, run_ids: list[int], actor=None, rules=None) -> CasesSyncSummary:
    asked = sorted(set(run_ids))
    reference = reference_run_ids()
    summary = CasesSyncSummary(reference_runs=[r for r in asked if r in reference],
                               ignored_runs=[r for r in asked if r not in reference])
    unmarked = set(summary.ignored_runs)
    chains = _chains_of(asked)
    scoped = QAItem.objects.filter(chain_id__in=chains).values("item_key")
    # undecided cases that cite a run that is not (or no longer) a reference run: re-scored without it
    stale = _citing(AdjudicationCase.objects.filter(status__in=UNDECIDED_STATUSES, item_key__in=scoped)
                    .only("pk", "key", "run_ids", "status"), unmarked) if unmarked else []
    if not summary.reference_runs and not stale:
        return summary
    others = reference - set(asked)
    if summary.reference_runs and not others:   # every reference run is synced: no need to cut by chain
        items, answers = run_facts(run_ids=summary.reference_runs)
    else:
        items, answers = run_facts(run_ids=sorted(reference), chain_ids=chains)
    drafts = cases_from_hits(detect(items, answers, conflict_facts(), rules=rules), items)
    if not summary.reference_runs:               # only unmarking: touch nothing but the stale cases
        keys = {c.key for c in stale}
        drafts = [d for d in drafts if d.key in keys]
    raised_by = draft_runs(drafts, items, answers)
    existing = {c.key: c for c in AdjudicationCase.objects.filter(key__in=[d.key for d in drafts])}
    item_ids = {d.item_id for d in drafts if d.item_id}
    item_rows = {i.pk: i for i in QAItem.objects.filter(pk__in=item_ids).select_related("category")}
    modality = dict(Image.objects.filter(pk__in={d.image_id for d in drafts}).values_list("pk", "modality"))
    new_rows, changed, reopened = [], [], []
    for draft in drafts:
        hits, runs = _hit_dicts(draft), raised_by.get(draft.key, [])
        rules_text = "," + ",".join(sorted({h["rule"] for h in hits})) + ","
        case = existing.get(draft.key)
        if case is None:
            item = item_rows.get(draft.item_id)
            new_rows.append(AdjudicationCase(
                key=draft.key, item=item, item_key=item.item_key if item else None, image_id=draft.image_id,
                stage_id=item.stage_id if item else None, category_id=item.category_id if item else None,
                modality=modality.get(draft.image_id, "") or "", rules=rules_text, hits=hits,
                priority=draft.priority, run_ids=runs))
        elif case.status == AdjudicationCase.Status.RESOLVED:
            summary.resolved_kept += 1
        elif case.status == AdjudicationCase.Status.WITHDRAWN:
            case.hits, case.rules, case.priority, case.run_ids = hits, rules_text, draft.priority, runs
            case.status, case.version = AdjudicationCase.Status.OPEN, case.version + 1
            reopened.append(case)
        elif case.hits != hits or case.priority != draft.priority or case.run_ids != runs:
            case.hits, case.rules, case.priority, case.run_ids = hits, rules_text, draft.priority, runs
            changed.append(case)
        else:
            summary.unchanged += 1
    drafted = {d.key for d in drafts}
    gone = [c.pk for c in stale if c.key not in drafted] if rules is None else []
    with transaction.atomic():
        AdjudicationCase.objects.bulk_create(new_rows, batch_size=1000)
        AdjudicationCase.objects.bulk_update(changed, ["hits", "rules", "priority", "run_ids", "updated_at"],
                                             batch_size=500)
        AdjudicationCase.objects.bulk_update(reopened, ["hits", "rules", "priority", "run_ids", "status", "version",
                                                        "updated_at"], batch_size=500)
        withdrawn, readings = _withdraw(gone, summary)
        summary.created, summary.updated, summary.reopened = len(new_rows), len(changed), len(reopened)
        if new_rows:
            transaction.on_commit(lambda: cache.delete("adjudication:modalities"))   # the queue's filter choices
        touched = [case.pk for case in (*new_rows, *changed, *reopened) if case.pk] + withdrawn
        audit_record(actor=actor, action="adjudication.cases.sync", object_type="adjudication.case",
                     after={"runs": asked, **asdict(summary), "withdrawn_cases": withdrawn,
                            "readings_withdrawn": readings},
                     objects=[("adjudication.case", pk) for pk in touched])
    return summary


def _withdraw(case_ids: list[int], summary: CasesSyncSummary) -> tuple[list[int], int]:
    """Withdraw these cases (no reference run raises them any more) unless a verdict was given: those
    stay as they are. Inside the sync's transaction, the rows locked and checked again."""
    if not case_ids:
        return [], 0
    cases = list(AdjudicationCase.objects.select_for_update().filter(pk__in=case_ids, status__in=UNDECIDED_STATUSES))
    given = set(CaseReading.objects.filter(case__in=cases, status=CaseReading.Status.SUBMITTED)
                .values_list("case_id", flat=True))
    ids = [c.pk for c in cases if c.pk not in given and c.status == AdjudicationCase.Status.OPEN]
    summary.kept_in_reading += len(cases) - len(ids)
    summary.withdrawn += len(ids)
    AdjudicationCase.objects.filter(pk__in=ids).update(status=AdjudicationCase.Status.WITHDRAWN,
                                                       version=F("version") + 1, updated_at=timezone.now())
    readings = CaseReading.objects.filter(case_id__in=ids, status=CaseReading.Status.ASSIGNED).update(
        status=CaseReading.Status.WITHDRAWN)
    return sorted(ids), readings
