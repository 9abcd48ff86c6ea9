"""A task's agreement across its readers' copies, its disagreement record, and the batch summary.

Every reader annotates their own copy of a task (docs/labelstudio.md, "Independent readers"); their
annotations all belong to the one `AnnotationTask`, so agreement compares the readers' annotations of
it whatever project they came from. Boxes a reader accepted unchanged from a pre-annotation are not
that reader's independent judgment and are left out; regions the pull rejected are disagreements
(`region_rejected`) so the curator sees them with the task."""
from __future__ import annotations

from collections import defaultdict

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.models import Finding, GroundingBox, QAItem
from audit.services import audit_record
from labelstudio.agreement import AnnotatorView, LabeledBox, cohen_kappa, task_agreement
from labelstudio.models import AnnotationTask, AnnotatorDisagreement, LabelStudioAnnotation
from labelstudio.provenance import ACCEPTED


def _annotator(row: LabelStudioAnnotation) -> str:
    return str(row.author_id or row.ls_user_email or row.ls_user_id)


def task_refresh_agreement(task: AnnotationTask, *, ls_updated_at=None) -> None:
    """Recompute the task's counts, agreement and disagreement record from its active annotations."""
    rows = list(LabelStudioAnnotation.objects.filter(task=task, status=LabelStudioAnnotation.Status.ACTIVE,
                                                     was_cancelled=False).order_by("ls_annotation_id"))
    boxes = defaultdict(list)
    accepted = defaultdict(int)
    for box in (GroundingBox.objects.filter(ls_annotation_id__in=[str(r.ls_annotation_id) for r in rows],
                                            status=Finding.Status.ACTIVE).select_related("finding").order_by("pk")):
        if box.provenance == ACCEPTED:      # a pre-annotation submitted unchanged: not an independent read
            accepted[box.ls_annotation_id] += 1
            continue
        boxes[box.ls_annotation_id].append(LabeledBox(label=box.label, box=box.xyxy, kind=box.finding.kind,
                                                      attributes=box.finding.attributes))
    views = [AnnotatorView(annotator=_annotator(r), boxes=tuple(boxes[str(r.ls_annotation_id)]),
                           answer=tuple(r.answer) if r.answer is not None else None) for r in rows]
    agreement = task_agreement(views, iou_threshold=settings.MEDR2_AGREEMENT_IOU)
    details = list(agreement.disagreements)
    gold = _gold_answer(task.qa_item) if task.qa_item_id else None
    if gold is not None:
        for view in views:
            if view.answer is not None and tuple(sorted(view.answer)) != gold:
                details.append({"kind": "gold_answer", "annotators": [view.annotator],
                                "answers": [list(view.answer), list(gold)]})
    for row in rows:
        for rejection in row.rejections or []:
            details.append({"kind": "region_rejected", "annotators": [_annotator(row)],
                            "ls_annotation_id": row.ls_annotation_id, "code": rejection.get("code", ""),
                            "message": rejection.get("message", "")})
    n = len(rows)
    task.n_annotations = n
    task.status = AnnotationTask.Status.DONE if n >= _expected(task) else AnnotationTask.Status.OPEN
    task.agreement = None
    if n >= 2:
        task.agreement = agreement.as_dict()
        task.agreement["judgments"] = [[x, y] for x, y in agreement.judgments]
        task.agreement["accepted_boxes"] = {_annotator(r): accepted[str(r.ls_annotation_id)] for r in rows
                                            if accepted[str(r.ls_annotation_id)]}
    task.has_disagreement = bool(details)
    task.synced_at = timezone.now()
    if ls_updated_at is not None:
        task.ls_updated_at = ls_updated_at
    task.save(update_fields=["n_annotations", "status", "agreement", "has_disagreement", "synced_at", "ls_updated_at"])
    _refresh_disagreement(task, rows, details)


def _expected(task: AnnotationTask) -> int:
    """Annotations that make a task done: one per reader's copy (per-reader batches), else the batch's maximum."""
    batch = task.batch
    if batch.per_reader:
        return max(1, batch.readers.count())
    return batch.maximum_annotations


def _refresh_disagreement(task: AnnotationTask, rows: list[LabelStudioAnnotation], details: list[dict]) -> None:
    existing = AnnotatorDisagreement.objects.filter(task=task).first()
    status = AnnotatorDisagreement.Status
    if details:
        kinds = sorted({d["kind"] for d in details})
        values = dict(image_id=task.image_id, qa_item_id=task.qa_item_id, kinds=kinds, detail=details,
                      annotators=[r.author_id for r in rows])
        if existing is None:
            with transaction.atomic():
                row = AnnotatorDisagreement.objects.create(task=task, **values)
                audit_record(actor=None, action="labelstudio.disagreement.open", target=row,
                             after={"task_id": task.pk, "kinds": kinds})
        elif (existing.kinds != kinds or existing.detail != details
              or existing.status in (status.RESOLVED, status.WITHDRAWN)):
            before = {"kinds": existing.kinds, "status": existing.status}
            for name, value in values.items():
                setattr(existing, name, value)
            if existing.status in (status.RESOLVED, status.WITHDRAWN):
                existing.status = status.OPEN
            with transaction.atomic():
                existing.save()
                audit_record(actor=None, action="labelstudio.disagreement.update", target=existing, before=before,
                             after={"kinds": kinds, "status": existing.status})
    elif existing is not None and existing.status == status.OPEN:
        # agreeing needs the same readers still there: a side whose annotation was deleted did not agree
        remaining = {r.author_id for r in rows}
        gone = [a for a in existing.annotators if a not in remaining]
        withdrawn = bool(gone) or len(rows) < 2
        existing.status = status.WITHDRAWN if withdrawn else status.RESOLVED
        with transaction.atomic():
            existing.save(update_fields=["status", "updated_at"])
            if withdrawn:
                audit_record(actor=None, action="labelstudio.disagreement.withdraw", target=existing,
                             after={"task_id": task.pk, "reason": "an annotation in the disagreement was deleted",
                                    "annotators_gone": gone})
            else:
                audit_record(actor=None, action="labelstudio.disagreement.resolve", target=existing,
                             after={"task_id": task.pk, "reason": "the annotators now agree"})


def _gold_answer(item: QAItem) -> tuple | None:
    gold = item.gold_answer
    if item.category.answer_type in ("single_choice", "yes_no") and isinstance(gold, str):
        return (gold,)
    if item.category.answer_type == "multi_choice" and isinstance(gold, list):
        return tuple(sorted(str(g) for g in gold))
    return None


def pooled_agreement(values: list[dict]) -> dict:
    """Batch percent agreement and Cohen's κ over every categorical judgment of every task pooled (a
    mean of per-task κ would count a task with one identical judgment as κ = 1)."""
    pairs = [tuple(p) for v in values if isinstance(v, dict) for p in (v.get("judgments") or [])
             if isinstance(p, list | tuple) and len(p) == 2]
    if not pairs:
        return {"kappa": None, "percent_agreement": None, "judgments": 0}
    return {"kappa": cohen_kappa([a for a, _ in pairs], [b for _, b in pairs]),
            "percent_agreement": sum(1 for a, b in pairs if a == b) / len(pairs), "judgments": len(pairs)}
