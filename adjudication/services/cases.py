"""Adjudication cases: detection results stored as a queue (docs/adjudication.md).

`cases_sync` runs the detection rules on evaluation runs (plus open Label Studio annotator
disagreements) and upserts one case per item_key / image: new keys become open cases, open or
in-progress cases take the new hits (runs are merged, nothing is duplicated), resolved cases stay
resolved. One audit event per sync."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from django.core.cache import cache
from django.db import transaction

from adjudication.facts import detect_cases
from adjudication.models import AdjudicationCase
from annotation.models import Image, QAItem
from audit.services import audit_record


@dataclass
class CasesSyncSummary:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    resolved_kept: int = 0


def _hit_dicts(draft) -> list[dict]:
    return [{"rule": h.rule, "priority": h.priority, "models": list(h.models), "item_id": h.item_id,
             "evidence": h.evidence} for h in draft.hits]


def cases_sync(*, run_ids: list[int], actor=None, rules=None) -> CasesSyncSummary:
    drafts = detect_cases(run_ids=run_ids, rules=rules)
    summary = CasesSyncSummary()
    if not drafts:
        return summary
    existing = {c.key: c for c in AdjudicationCase.objects.filter(key__in=[d.key for d in drafts])}
    item_ids = {d.item_id for d in drafts if d.item_id}
    items = {i.pk: i for i in QAItem.objects.filter(pk__in=item_ids).select_related("category")}
    modality = dict(Image.objects.filter(pk__in={d.image_id for d in drafts}).values_list("pk", "modality"))
    new_rows, changed = [], []
    for draft in drafts:
        hits = _hit_dicts(draft)
        rules_text = "," + ",".join(sorted({h["rule"] for h in hits})) + ","
        case = existing.get(draft.key)
        if case is None:
            item = items.get(draft.item_id)
            new_rows.append(AdjudicationCase(
                key=draft.key, item=item, item_key=item.item_key if item else None, image_id=draft.image_id,
                stage_id=item.stage_id if item else None, category_id=item.category_id if item else None,
                modality=modality.get(draft.image_id, "") or "", rules=rules_text, hits=hits,
                priority=draft.priority, run_ids=sorted(set(run_ids))))
        elif case.status == AdjudicationCase.Status.RESOLVED:
            summary.resolved_kept += 1
        elif case.hits != hits or case.priority != draft.priority or not set(run_ids) <= set(case.run_ids):
            case.hits, case.rules, case.priority = hits, rules_text, draft.priority
            case.run_ids = sorted(set(case.run_ids) | set(run_ids))
            changed.append(case)
        else:
            summary.unchanged += 1
    with transaction.atomic():
        AdjudicationCase.objects.bulk_create(new_rows, batch_size=1000)
        AdjudicationCase.objects.bulk_update(changed, ["hits", "rules", "priority", "run_ids", "updated_at"],
                                             batch_size=500)
        summary.created, summary.updated = len(new_rows), len(changed)
        if new_rows:
            transaction.on_commit(lambda: cache.delete("adjudication:modalities"))   # the queue's filter choices
        audit_record(actor=actor, action="adjudication.cases.sync", object_type="adjudication.case",
                     after={"runs": sorted(set(run_ids)), **asdict(summary)},
                     objects=[("adjudication.case", case.pk) for case in (*new_rows, *changed) if case.pk])
    return summary
