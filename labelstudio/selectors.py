"""Reads for the Label Studio pages and API: batches (scoped to the reader), their tasks, progress,
agreement and sync log."""
from __future__ import annotations

from django.db.models import Count, Q
from django.http import Http404

from accounts.roles import Capability, user_can
from annotation.models import GroundingBox

from .models import AnnotationBatch, LabelStudioAnnotation


def batch_visible_to(user):
    """Curators, auditors and admins see every batch; readers only the batches they read."""
    qs = AnnotationBatch.objects.all()
    if user_can(user, Capability.MANAGE_ANNOTATION) or user_can(user, Capability.VIEW_ALL_IMAGES):
        return qs
    return qs.filter(readers=user)


def batch_list(*, user):
    return (batch_visible_to(user).select_related("created_by")
            .annotate(n_tasks=Count("tasks", distinct=True),
                      n_done=Count("tasks", filter=Q(tasks__status="done"), distinct=True),
                      n_disagreements=Count("tasks", filter=Q(tasks__has_disagreement=True), distinct=True))
            .order_by("-pk"))


def batch_get(*, user, pk: int):
    batch = batch_visible_to(user).select_related("created_by").filter(pk=pk).first()
    if batch is None:
        raise Http404("no such annotation batch")
    return batch


def batch_reader_progress(*, batch) -> list[dict]:
    """Per radiologist: tasks annotated (submitted, not skipped) and skipped, out of the batch's
    tasks; one grouped query. Label Studio users without a Med-R2 account appear by email."""


    total = batch.tasks.count()
    rows = (LabelStudioAnnotation.objects.filter(task__batch=batch, status="active")
            .values("author_id", "author__username", "ls_user_email")
            .annotate(done=Count("task", filter=Q(was_cancelled=False), distinct=True),
                      skipped=Count("task", filter=Q(was_cancelled=True), distinct=True))
            .order_by("author__username", "ls_user_email"))
    seen = {r["author_id"] for r in rows if r["author_id"]}
    out = [{"name": r["author__username"] or r["ls_user_email"] or "unknown", "mapped": bool(r["author_id"]),
            "done": r["done"], "skipped": r["skipped"], "total": total,
            "percent": 100.0 * r["done"] / total if total else 0.0} for r in rows]
    for reader in batch.readers.exclude(pk__in=seen).order_by("username"):
        out.append({"name": reader.get_username(), "mapped": True, "done": 0, "skipped": 0, "total": total,
                    "percent": 0.0})
    return out


def batch_tasks(*, batch, user, status: str = "", disagreement: bool = False):
    qs = batch.tasks.select_related("image", "qa_item", "qa_item__category").order_by("pk")
    if status:
        qs = qs.filter(status=status)
    if disagreement:
        qs = qs.filter(has_disagreement=True)
    return qs


def batch_sync_log(*, batch, level: str = ""):
    qs = batch.sync_log.all()
    if level:
        qs = qs.filter(level=level)
    return qs.order_by("-pk")


def batch_agreement_summary(*, batch) -> dict:
    """Mean box F1 / IoU / kappa over the batch's tasks with 2+ annotators (computed in Python over
    one JSON column: a batch has at most a few thousand tasks)."""
    values = list(batch.tasks.filter(agreement__isnull=False).values_list("agreement", flat=True))

    def mean(key):
        xs = [v.get(key) for v in values if isinstance(v, dict) and v.get(key) is not None]
        return sum(xs) / len(xs) if xs else None

    return {"tasks": len(values), "box_f1": mean("box_f1"), "mean_iou": mean("mean_iou"), "kappa": mean("kappa"),
            "percent_agreement": mean("percent_agreement"),
            "disagreements": batch.tasks.filter(has_disagreement=True).count()}


def task_get(*, user, batch, pk: int):
    task = batch.tasks.select_related("image", "qa_item", "qa_item__category").filter(pk=pk).first()
    if task is None:
        raise Http404("no such task")
    return task


def task_annotations(*, task) -> list[dict]:
    """Each pulled annotation (newest revision, retired ones too) with its boxes, one query each."""

    rows = list(LabelStudioAnnotation.objects.filter(task=task).select_related("author").order_by("ls_annotation_id"))
    boxes: dict[str, list] = {}
    for box in (GroundingBox.objects.filter(ls_annotation_id__in=[str(r.ls_annotation_id) for r in rows])
                .select_related("finding").order_by("pk")):
        boxes.setdefault(box.ls_annotation_id, []).append(box)
    return [{"row": r, "boxes": boxes.get(str(r.ls_annotation_id), [])} for r in rows]
