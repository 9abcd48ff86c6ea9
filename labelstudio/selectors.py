"""Reads for the Label Studio pages, API and commands: batches (scoped to the reader), their tasks,
progress, agreement and sync log, and what a new batch is made of (images, QA items, readers)."""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q
from django.http import Http404

from accounts.roles import Capability, Role, user_can
from accounts.selectors import user_list
from annotation.models import GroundingBox, Image, QAItem, TaskCategory

from .links import label_studio_project_url
from .models import AnnotationBatch, AnnotationTask, LabelStudioAnnotation, SyncLogEntry
from .services.agreement import pooled_agreement


def batch_visible_to(user):
    """Curators, auditors and admins see every batch; readers only the batches they read."""
    qs = AnnotationBatch.objects.all()
    if user_can(user, Capability.MANAGE_ANNOTATION) or user_can(user, Capability.VIEW_ALL_IMAGES):
        return qs
    return qs.filter(readers=user)


def sees_reader_work(user) -> bool:
    """Agreement, disagreements and other readers' work: curators, auditors and admins. Readers annotate
    blind (a task's disagreement can be with the gold answer), so they see their batches' progress only."""
    return user_can(user, Capability.MANAGE_ANNOTATION) or user_can(user, Capability.VIEW_ALL_IMAGES)


def batch_list(*, user):
    return (batch_visible_to(user).select_related("created_by")
            .annotate(n_tasks=Count("tasks", distinct=True),
                      n_done=Count("tasks", filter=Q(tasks__status="done"), distinct=True),
                      n_disagreements=Count("tasks", filter=Q(tasks__has_disagreement=True), distinct=True))
            .order_by("-pk"))


@dataclass(frozen=True)
class ReaderBatch:
    """One batch a reader reads, and what is left in it for them."""

    batch: AnnotationBatch
    n_tasks: int
    n_mine: int           # tasks they annotated or skipped (active annotations)
    n_waiting: int        # tasks still open that they have not annotated
    ls_url: str           # the project in Label Studio; "" before the push or without a public URL

    @property
    def in_label_studio(self) -> bool:
        return self.batch.in_label_studio


def reader_worklist(*, user) -> list[ReaderBatch]:
    """The batches `user` reads, newest first, with the tasks waiting for them: open tasks (fewer
    annotations than the batch asks for) they have not annotated yet. Three queries, whatever the size."""
    batches = list(AnnotationBatch.objects.filter(readers=user).annotate(n_tasks=Count("tasks")).order_by("-pk"))
    if not batches:
        return []
    mine = LabelStudioAnnotation.objects.filter(author=user, status=LabelStudioAnnotation.Status.ACTIVE,
                                                task__batch__in=batches)
    n_mine = dict(mine.values("task__batch").order_by().annotate(n=Count("task", distinct=True))
                  .values_list("task__batch", "n"))
    waiting = dict(AnnotationTask.objects.filter(batch__in=batches).exclude(status=AnnotationTask.Status.DONE)
                   .exclude(pk__in=mine.values("task_id")).values("batch").order_by().annotate(n=Count("id"))
                   .values_list("batch", "n"))
    return [ReaderBatch(batch=b, n_tasks=b.n_tasks, n_mine=n_mine.get(b.pk, 0), n_waiting=waiting.get(b.pk, 0),
                        ls_url=label_studio_project_url(b, user)) for b in batches]


def batch_get(*, user, pk: int):
    batch = batch_visible_to(user).select_related("created_by").filter(pk=pk).first()
    if batch is None:
        raise Http404("no such annotation batch")
    return batch


def batch_task_count(*, batch) -> int:
    return batch.tasks.count()


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
    if disagreement and sees_reader_work(user):   # a blind reader cannot sort tasks by disagreement
        qs = qs.filter(has_disagreement=True)
    return qs


def batch_sync_log(*, batch, level: str = ""):
    qs = batch.sync_log.all()
    if level:
        qs = qs.filter(level=level)
    return qs.order_by("-pk")


def batch_agreement_summary(*, batch) -> dict:
    """Mean box F1 / IoU over the batch's tasks with 2+ annotators; κ and percent agreement over all
    their judgments pooled (computed in Python over one JSON column: a batch has at most a few
    thousand tasks)."""
    values = list(batch.tasks.filter(agreement__isnull=False).values_list("agreement", flat=True))

    def mean(key):
        xs = [v.get(key) for v in values if isinstance(v, dict) and v.get(key) is not None]
        return sum(xs) / len(xs) if xs else None

    pooled = pooled_agreement(values)
    return {"tasks": len(values), "box_f1": mean("box_f1"), "mean_iou": mean("mean_iou"), "kappa": pooled["kappa"],
            "percent_agreement": pooled["percent_agreement"], "judgments": pooled["judgments"],
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


def task_rejections(*, batch, task, limit: int = 50):
    """The newest sync-log errors about this task, every reader's copy included (regions the pull
    rejected); none before the push."""
    ids = [i for i in [task.ls_task_id, *task.reader_copies.values_list("ls_task_id", flat=True)] if i]
    if not ids:
        return []
    return batch.sync_log.filter(ls_task_id__in=ids, level=SyncLogEntry.Level.ERROR).order_by("-pk")[:limit]


def batch_find(*, name: str) -> AnnotationBatch | None:
    """The oldest batch with this name (batch names are not unique), or None."""
    return AnnotationBatch.objects.filter(name=name).order_by("pk").first()


def batches_pushed(*, pk: int | None = None):
    """Batches already in Label Studio (a project id), by id; only `pk` when given."""
    qs = AnnotationBatch.objects.filter(Q(ls_project_id__isnull=False) | Q(per_reader=True, pushed_at__isnull=False)
                                        ).order_by("pk")
    return qs.filter(pk=pk) if pk else qs


def image_find(*, pk: int) -> Image | None:
    """An image by id, unscoped: for the signed links Label Studio's editor loads (the token is the
    permission)."""
    return Image.objects.filter(pk=pk).first()


# --- what a new batch is made of ---------------------------------------------------------------

def reader_candidates():
    """Active annotators and adjudicators, by username: who may read a batch."""
    return user_list(roles=[Role.ANNOTATOR, Role.ADJUDICATOR])


def category_choices():
    """Active task categories in their display order (a batch of QA items may pick one)."""
    return TaskCategory.objects.filter(is_active=True).order_by("order")


def batch_image_ids(*, modality: str = "", body_region: str = "", source_dataset: str = "", limit: int) -> list[int]:
    """Up to `limit` image ids, lowest first, matching the filters given (empty ones are ignored)."""
    qs = Image.objects.all()
    for name, value in (("modality", modality), ("body_region", body_region), ("source_dataset", source_dataset)):
        if value:
            qs = qs.filter(**{name: value})
    return list(qs.order_by("pk").values_list("pk", flat=True)[:limit])


def batch_item_ids(*, category: str = "", modality: str = "", body_region: str = "", source_dataset: str = "",
                   limit: int) -> list[int]:
    """Up to `limit` current approved QA item ids, lowest first; `category` is a category code and the
    other filters are on the item's image (empty ones are ignored)."""
    qs = QAItem.objects.filter(is_current=True, status=QAItem.Status.APPROVED)
    if category:
        qs = qs.filter(category__code=category)
    for name, value in (("modality", modality), ("body_region", body_region), ("source_dataset", source_dataset)):
        if value:
            qs = qs.filter(**{f"chain__image__{name}": value})
    return list(qs.order_by("pk").values_list("pk", flat=True)[:limit])
