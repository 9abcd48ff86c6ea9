"""Reads, scoped to what the user may see. Views and APIs call these, never the ORM directly."""
from __future__ import annotations

from django.db.models import Count, Prefetch, Q, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from accounts.roles import Capability, user_can
from annotation.models import (
    Chain,
    Finding,
    GroundingBox,
    Image,
    ImportBatch,
    ImportFileResult,
    QAItem,
    Stage,
    TaskCategory,
    Variant,
)
from common.filters import filter_by


def image_visible_to(user) -> QuerySet[Image]:
    """Curators, auditors and admins see every image; annotators and adjudicators only the
    images assigned to them; everyone else nothing."""
    if user_can(user, Capability.VIEW_ALL_IMAGES):
        return Image.objects.all()
    if user_can(user, Capability.VIEW_IMAGES):
        return Image.objects.filter(assignees=user)
    return Image.objects.none()


IMAGE_FILTERS = ("modality", "body_region", "source_format", "split_group")


def image_list(*, user, filters: dict | None = None) -> QuerySet[Image]:
    filters = filters or {}
    qs = image_visible_to(user)
    qs = filter_by(qs, filters, {name: name for name in IMAGE_FILTERS})
    has_findings = (filters.get("has_findings") or "").strip()
    active_lesions = Q(findings__status=Finding.Status.ACTIVE, findings__kind=Finding.Kind.LESION)
    qs = qs.annotate(n_lesions=Count("findings", filter=active_lesions, distinct=True))
    if has_findings == "yes":
        qs = qs.filter(n_lesions__gt=0)
    elif has_findings == "no":
        qs = qs.filter(n_lesions=0)
    return qs.order_by("-created_at", "-id")


def image_filter_choices(*, user) -> dict[str, list[str]]:
    qs = image_visible_to(user).order_by()
    return {
        name: [v for v in qs.values_list(name, flat=True).distinct().order_by(name) if v]
        for name in ("modality", "body_region", "source_format")
    }


def image_get(*, user, pk: int) -> Image:
    """404 (not 403) for an image the user may not see, so ids do not leak."""
    active_boxes = GroundingBox.objects.filter(status=Finding.Status.ACTIVE).select_related("author", "finding")
    active_findings = Finding.objects.filter(status=Finding.Status.ACTIVE)
    return get_object_or_404(
        image_visible_to(user).select_related("import_batch").prefetch_related(
            Prefetch("boxes", queryset=active_boxes, to_attr="active_boxes"),
            Prefetch("findings", queryset=active_findings, to_attr="active_findings"),
        ),
        pk=pk,
    )


def dashboard_counts(*, user) -> dict:
    images = image_visible_to(user)
    items = QAItem.objects.filter(is_current=True, chain__image__in=images)
    by_stage = {row["stage__code"]: row for row in items.values("stage__code").annotate(
        total=Count("id"),
        draft=Count("id", filter=Q(status=QAItem.Status.DRAFT)),
        in_review=Count("id", filter=Q(status=QAItem.Status.IN_REVIEW)),
        approved=Count("id", filter=Q(status=QAItem.Status.APPROVED)),
        rejected=Count("id", filter=Q(status=QAItem.Status.REJECTED)),
        ambiguous=Count("id", filter=Q(status=QAItem.Status.AMBIGUOUS)),
    )}
    stages = [{"stage": s, **by_stage.get(s.code, {})} for s in Stage.objects.all()]
    return {
        "n_images": images.count(),
        "n_findings": Finding.objects.filter(image__in=images, status=Finding.Status.ACTIVE).count(),
        "n_boxes": GroundingBox.objects.filter(image__in=images, status=Finding.Status.ACTIVE).count(),
        "by_modality": list(images.order_by().values("modality").annotate(n=Count("id")).order_by("-n", "modality")),
        "by_region": list(images.order_by().values("body_region").annotate(n=Count("id"))
                          .order_by("-n", "body_region")),
        "by_stage": stages,
        "n_items": items.count(),
    }


def import_batch_list(*, user) -> QuerySet[ImportBatch]:
    if not user_can(user, Capability.IMPORT_IMAGES):
        return ImportBatch.objects.none()
    return ImportBatch.objects.select_related("created_by").order_by("-created_at")


def import_batch_get(*, user, pk: int) -> ImportBatch:
    """404 for a batch the user may not see."""
    return get_object_or_404(import_batch_list(user=user), pk=pk)


def import_batch_files(*, batch: ImportBatch) -> QuerySet[ImportFileResult]:
    return batch.files.all()


def image_id_list(*, ids: list[int] | None = None, source_dataset: str = "") -> list[int]:
    """Ids of every image (the commands act for the platform, not for one user), in id order;
    only `ids` when given, only images of `source_dataset` when given."""
    qs = Image.objects.order_by("pk")
    if ids is not None:
        qs = qs.filter(pk__in=ids)
    if source_dataset:
        qs = qs.filter(source_dataset=source_dataset)
    return list(qs.values_list("pk", flat=True))


# --- chains, QA items, variants -------------------------------------------------------------
ITEM_FILTERS = ("stage", "category", "modality", "status", "image_necessary")
IMAGE_NECESSARY_VALUES = {"yes": True, "no": False, "unknown": None}


def item_visible_to(user) -> QuerySet[QAItem]:
    """QA items of the images the user may see."""
    if not user_can(user, Capability.VIEW_ITEMS):
        return QAItem.objects.none()
    if user_can(user, Capability.VIEW_ALL_IMAGES):
        return QAItem.objects.all()
    return QAItem.objects.filter(chain__image__in=image_visible_to(user))


def item_ids_visible(*, user, ids) -> set[int]:
    """Those of `ids` that are items the user may see."""
    return set(item_visible_to(user).filter(pk__in=list(ids)).values_list("pk", flat=True))


def item_id_list(*, status: str = "", source_dataset: str = "", stage: str = "") -> list[int]:
    """Ids of the current item versions (every image: the commands act for the platform), in id
    order; filtered by status, the image's source dataset and the stage code when given."""
    qs = filter_by(QAItem.objects.filter(is_current=True).order_by("pk"),
                   {"status": status, "source_dataset": source_dataset, "stage": stage},
                   {"status": "status", "source_dataset": "chain__image__source_dataset", "stage": "stage__code"})
    return list(qs.values_list("pk", flat=True))


# the item list's filters and the field each one matches (validity's audit adds its own)
ITEM_LOOKUPS = {"stage": "stage__code", "category": "category__code", "modality": "chain__image__modality",
                "status": "status", "chain": "chain_id"}


def item_list(*, user, filters: dict | None = None, current_only: bool = True,
              with_evidence: bool = False) -> QuerySet[QAItem]:
    filters = filters or {}
    qs = item_visible_to(user)
    if current_only:
        qs = qs.filter(is_current=True)
    qs = filter_by(qs, filters, ITEM_LOOKUPS)
    necessary = IMAGE_NECESSARY_VALUES.get(filters.get("image_necessary") or "", "")
    if necessary != "":  # set by the latest shortcut audit (validity/); unknown: never audited or not assessed
        qs = qs.filter(image_necessary=necessary) if necessary is not None else qs.filter(image_necessary__isnull=True)
    if with_evidence:
        qs = qs.prefetch_related("evidence_boxes")
    return qs.select_related("stage", "category", "chain__image").order_by("chain_id", "step", "-version")


def item_get(*, user, pk: int) -> QAItem:
    return get_object_or_404(
        item_visible_to(user).select_related("stage", "category", "chain__image", "created_by", "previous")
        .prefetch_related("evidence_boxes"),
        pk=pk,
    )


def item_versions(*, item: QAItem) -> QuerySet[QAItem]:
    return QAItem.objects.filter(item_key=item.item_key).select_related("created_by").order_by("-version")


def chain_get(*, user, pk: int) -> Chain:
    if not user_can(user, Capability.VIEW_ITEMS):
        raise Http404
    return get_object_or_404(Chain.objects.select_related("image").filter(image__in=image_visible_to(user)), pk=pk)


def chain_list(*, user, image: str = "", seed: str = "") -> QuerySet[Chain]:
    if not user_can(user, Capability.VIEW_ITEMS):
        return Chain.objects.none()
    qs = Chain.objects.filter(image__in=image_visible_to(user))
    if str(image).isdigit():
        qs = qs.filter(image_id=int(image))
    if str(seed).lstrip("-").isdigit():
        qs = qs.filter(seed=int(seed))
    return qs.annotate(n_items=Count("items", filter=Q(items__is_current=True))).order_by("pk")


def variant_search(*, user, kind: str = "", item: str = "", seed: str = "") -> QuerySet[Variant]:
    qs = Variant.objects.filter(item__in=item_visible_to(user))
    if kind:
        qs = qs.filter(kind=kind)
    if str(item).isdigit():
        qs = qs.filter(item_id=int(item))
    if str(seed).lstrip("-").isdigit():
        qs = qs.filter(seed=int(seed))
    return qs.order_by("pk")


def chain_items(*, chain) -> QuerySet[QAItem]:
    return (QAItem.objects.filter(chain=chain, is_current=True).select_related("stage", "category")
            .prefetch_related("evidence_boxes").annotate(n_variants=Count("variants")).order_by("step"))


def variant_list(*, item: QAItem) -> QuerySet[Variant]:
    return Variant.objects.filter(item=item).order_by("id")


def variant_get(*, user, pk: int) -> Variant:
    return get_object_or_404(Variant.objects.select_related("item__chain__image", "item__category")
                             .filter(item__in=item_visible_to(user)), pk=pk)


# --- taxonomy ----------------------------------------------------------------------------------
def stage_list(*, with_categories: bool = False) -> QuerySet[Stage]:
    qs = Stage.objects.order_by("order")
    return qs.prefetch_related("categories") if with_categories else qs


def category_list() -> QuerySet[TaskCategory]:
    """Every task category (active or not), in stage then category order."""
    return TaskCategory.objects.select_related("stage").order_by("stage__order", "order")


def category_get(*, code: str) -> TaskCategory:
    """A fresh row each call (a form may change one while the page shows the other)."""
    return get_object_or_404(TaskCategory.objects.select_related("stage"), code=code)


def item_filter_choices() -> dict:
    return {
        "stage": list(Stage.objects.values_list("code", "name")),
        "category": list(TaskCategory.objects.order_by("stage__order", "order").values_list("code", "name")),
        "status": list(QAItem.Status.choices),
    }
