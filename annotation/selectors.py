"""Reads, scoped to what the user may see. Views and APIs call these, never the ORM directly."""
from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Case, Count, Exists, F, Max, OuterRef, Prefetch, Q, QuerySet, When
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone

from accounts.roles import Capability, Role, user_can
from accounts.selectors import user_list
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
from common.params import as_int
from common.titles import Title


def image_visible_to(user) -> QuerySet[Image]:
    """Curators, auditors and admins see every image; annotators and adjudicators only the
    images assigned to them; everyone else nothing."""
    if user_can(user, Capability.VIEW_ALL_IMAGES):
        return Image.objects.all()
    if user_can(user, Capability.VIEW_IMAGES):
        return Image.objects.filter(assignees=user)
    return Image.objects.none()


def gold_visible_to(user) -> bool:
    """May `user` see the findings, gold boxes and lesion counts of the images they see? Not annotators:
    they annotate blind, so nothing on the platform shows them what the gold of their images is."""
    return user_can(user, Capability.VIEW_GOLD)


def boxes_visible_to(user, qs: QuerySet[GroundingBox] | None = None) -> QuerySet[GroundingBox]:
    """`qs` (default: every box) without the boxes `user` may not see. Users who see every image see every
    box. A reader (who sees only the images assigned to them) never sees a box another reader drew in
    Label Studio on an image they read themselves: a double read stays independent (docs/security.md,
    "Blinding"). Blind readers (annotators) see no boxes at all (`gold_visible_to`)."""
    qs = GroundingBox.objects.all() if qs is None else qs
    if user_can(user, Capability.VIEW_ALL_IMAGES):
        return qs
    if not gold_visible_to(user):
        return qs.none()
    mine = Image.assignees.through.objects.filter(user_id=user.pk).values("image_id")
    return qs.exclude(Q(image_id__in=mine) & ~Q(ls_annotation_id="") & ~Q(author_id=user.pk))


IMAGE_FILTERS = ("modality", "body_region", "source_format", "split_group")


def image_list(*, user, filters: dict | None = None) -> QuerySet[Image]:
    filters = filters or {}
    qs = image_visible_to(user)
    qs = filter_by(qs, filters, {name: name for name in IMAGE_FILTERS})
    if not gold_visible_to(user):   # blind readers: no lesion counts, and no filtering by them
        return qs.order_by("-created_at", "-id")
    has_findings = (filters.get("has_findings") or "").strip()
    active_lesions = Q(findings__status=Finding.Status.ACTIVE, findings__kind=Finding.Kind.LESION)
    qs = qs.annotate(n_lesions=Count("findings", filter=active_lesions, distinct=True))
    if has_findings == "yes":
        qs = qs.filter(n_lesions__gt=0)
    elif has_findings == "no":
        qs = qs.filter(n_lesions=0)
    return qs.order_by("-created_at", "-id")


ASSIGN_FILTERS = (*IMAGE_FILTERS, "import_batch")


def images_to_assign(*, filters: dict, ids: list[int] | None = None) -> QuerySet[Image]:
    """The images a curator's assignment names: matching every filter given (modality, body region, source
    format, split group, import batch) and, when `ids` are given, among them. With neither, no image:
    an empty form never assigns the whole archive."""
    filters = {k: v for k, v in (filters or {}).items() if k in ASSIGN_FILTERS and v not in (None, "")}
    if not filters and not ids:
        return Image.objects.none()
    qs = filter_by(Image.objects.all(), filters, {**{n: n for n in IMAGE_FILTERS}, "import_batch": "import_batch_id"})
    if ids:
        qs = qs.filter(pk__in=ids)
    return qs.order_by("pk")


def readers_with_assignments() -> list:
    """The active annotators and adjudicators, each with `n_assigned` (images assigned to them), by username."""
    return list(user_list(roles=[Role.ANNOTATOR, Role.ADJUDICATOR]).annotate(n_assigned=Count("assigned_images")))


def image_scope_key(user) -> str | None:
    """Which images `user` sees (`image_visible_to`) as part of a cache key: "all" for everyone who sees
    every image (they share one entry); for a reader their id with the number of their assignments and the
    newest one, so an entry is never another user's and a new or removed assignment makes a new one;
    None for a user who sees no image (nothing to cache)."""
    if user_can(user, Capability.VIEW_ALL_IMAGES):
        return "all"
    if not user_can(user, Capability.VIEW_IMAGES):
        return None
    mine = Image.assignees.through.objects.filter(user_id=user.pk).aggregate(n=Count("id"), last=Max("id"))
    return f"reader:{user.pk}:{mine['n']}:{mine['last'] or 0}"


IMAGE_CHOICE_FILTERS = ("modality", "body_region", "source_format")


def image_filter_choices(*, user) -> dict[str, list[str]]:
    """The values the image filters offer, among the images `user` sees: three DISTINCTs over every image,
    so cached for 5 minutes per scope (`image_scope_key`), like the adjudication queue's modalities, and
    per newest image, so that the images of an import can be filtered (and assigned) at once."""
    scope = image_scope_key(user)
    if scope is None:
        return {name: [] for name in IMAGE_CHOICE_FILTERS}
    qs = image_visible_to(user).order_by()
    newest = Image.objects.aggregate(last=Max("id"))["last"] or 0
    return cache.get_or_set(f"annotation:image-filter-choices:{scope}:{newest}", lambda: {
        name: [v for v in qs.values_list(name, flat=True).distinct().order_by(name) if v]
        for name in IMAGE_CHOICE_FILTERS}, 300)


def image_get(*, user, pk: int) -> Image:
    """404 (not 403) for an image the user may not see, so ids do not leak. Without `gold_visible_to`
    (annotators) its `active_boxes` and `active_findings` are empty."""
    active_boxes = boxes_visible_to(user, GroundingBox.objects.filter(status=Finding.Status.ACTIVE)
                                    .select_related("author", "finding"))
    active_findings = Finding.objects.filter(status=Finding.Status.ACTIVE)
    if not gold_visible_to(user):
        active_findings = active_findings.none()
    return get_object_or_404(
        image_visible_to(user).select_related("import_batch").prefetch_related(
            Prefetch("boxes", queryset=active_boxes, to_attr="active_boxes"),
            Prefetch("findings", queryset=active_findings, to_attr="active_findings"),
        ),
        pk=pk,
    )


#: a series in reading order: a one-file-per-slice DICOM series by position, a volume's slices by index
SERIES_ORDER = (F("series_position").asc(nulls_last=True), "frame_index", "pk")


def image_series(*, user, image: Image) -> list[Image]:
    """The images of `image`'s series that `user` may see, in reading order (`SERIES_ORDER`), each with
    its active boxes: a DICOM series (one file per slice or not) by its remapped Series Instance UID,
    otherwise the images of one source file (a NIfTI volume's slices); `[image]` when it has neither."""
    if image.series_uid:
        members = Q(series_uid=image.series_uid)
    elif image.source_sha256:
        members = Q(source_sha256=image.source_sha256)
    else:
        return [image]
    # annotators read blind: no boxes on any slice; other readers' reads stay hidden (boxes_visible_to)
    active_boxes = boxes_visible_to(user, GroundingBox.objects.filter(status=Finding.Status.ACTIVE)
                                    .select_related("finding"))
    return list(image_visible_to(user).filter(members)
                .prefetch_related(Prefetch("boxes", queryset=active_boxes, to_attr="active_boxes"))
                .order_by(*SERIES_ORDER))


def series_key_of(series_uid: str, source_sha256: str, sha256: str) -> str:
    """The series an image belongs to, as `_series_key` computes it in SQL."""
    return series_uid or source_sha256 or sha256


def _series_key():
    """Images of one DICOM series share its UID, else images of one source file share the file's hash;
    an image with neither is its own series."""
    return Case(When(~Q(series_uid=""), then=F("series_uid")), When(source_sha256="", then=F("sha256")),
                default=F("source_sha256"))


def image_series_list(*, user, filters: dict | None = None) -> QuerySet:
    """One row per series among the images `image_list` finds: ``{"series_key", "n_slices", "latest",
    "last_id"}``, newest first; a page of rows becomes cards with `image_series_cards`."""
    filters = filters or {}
    matching = filter_by(image_visible_to(user), filters, {name: name for name in IMAGE_FILTERS})
    has_findings = (filters.get("has_findings") or "").strip()
    if has_findings in ("yes", "no") and gold_visible_to(user):     # as `image_list`: blind readers filter none
        lesion = Finding.objects.filter(image=OuterRef("pk"), status=Finding.Status.ACTIVE, kind=Finding.Kind.LESION)
        matching = matching.filter(Exists(lesion)) if has_findings == "yes" else matching.exclude(Exists(lesion))
    return (matching.order_by().annotate(series_key=_series_key()).values("series_key")
            .annotate(n_slices=Count("id"), latest=Max("created_at"), last_id=Max("id"))
            .order_by("-latest", "-last_id"))


@dataclass
class SeriesCard:
    image: Image          # the middle slice (reading order) of the series' visible images
    n_slices: int         # the series' visible images (a filter may match only some of them)
    position: int         # the middle slice's place in the series, from 1
    n_lesions: int        # active lesion findings on the series' visible images (0 for blind readers)


def image_series_cards(*, user, rows) -> list[SeriesCard]:
    """Cards for rows of `image_series_list`, in the same order, each showing its middle slice."""
    rows = list(rows)
    keys = [r["series_key"] for r in rows]
    members: dict[str, list[int]] = {}
    for pk, uid, source, sha in (
            image_visible_to(user).filter(Q(series_uid__in=keys) | Q(source_sha256__in=keys) | Q(sha256__in=keys))
            .order_by(*SERIES_ORDER).values_list("pk", "series_uid", "source_sha256", "sha256")):
        members.setdefault(series_key_of(uid, source, sha), []).append(pk)
    series_of = {pk: key for key, pks in members.items() for pk in pks}
    lesions: dict[str, int] = {}
    lesion_images = []
    if gold_visible_to(user):   # blind readers (annotators) get no lesion counts
        lesion_images = Finding.objects.filter(image_id__in=list(series_of), status=Finding.Status.ACTIVE,
                                               kind=Finding.Kind.LESION).values_list("image_id", flat=True)
    for image_id in lesion_images:
        lesions[series_of[image_id]] = lesions.get(series_of[image_id], 0) + 1
    middle = {key: pks[len(pks) // 2] for key, pks in members.items()}
    images = image_visible_to(user).in_bulk(list(middle.values()))
    return [SeriesCard(image=images[middle[r["series_key"]]], n_slices=len(members[r["series_key"]]),
                       position=len(members[r["series_key"]]) // 2 + 1,
                       n_lesions=lesions.get(r["series_key"], 0))
            for r in rows if r["series_key"] in middle]


#: seconds the dashboard's counts are kept; the page says when they were counted
DASHBOARD_COUNTS_TTL = 60


def dashboard_counts(*, user) -> dict:
    """The dashboard's counts over the images `user` sees: images (by modality and body region), active
    findings and boxes, current QA items by stage and status (`by_status`: over every stage), and
    `counted_at`. Over every image they scan ~110k items, so they are cached for a minute per scope
    (`image_scope_key`): users who see every image share one entry, each reader has their own."""
    scope = image_scope_key(user)
    if scope is None:
        return _dashboard_counts(Image.objects.none(), everything=False, user=user)
    return cache.get_or_set(f"annotation:dashboard-counts:{scope}",
                            lambda: _dashboard_counts(image_visible_to(user), everything=scope == "all", user=user),
                            DASHBOARD_COUNTS_TTL)


def _dashboard_counts(images: QuerySet[Image], *, everything: bool, user) -> dict:
    """`everything`: `images` is every image, so the other counts need no filter by image."""
    def of_images(qs: QuerySet, lookup: str = "image__in") -> QuerySet:
        return qs if everything else qs.filter(**{lookup: images})

    statuses = [s.value for s in QAItem.Status]
    per_stage: dict[int, dict[str, int]] = {}
    # one grouped pass over the current items (stage and status are never null)
    for row in (of_images(QAItem.objects.filter(is_current=True), "chain__image__in").order_by()
                .values("stage_id", "status").annotate(n=Count("id"))):
        per_stage.setdefault(row["stage_id"], dict.fromkeys(statuses, 0))[row["status"]] = row["n"]
    by_stage = [{"stage": s, **per_stage.get(s.pk, {}), "total": sum(per_stage.get(s.pk, {}).values())}
                for s in Stage.objects.all()]
    by_modality = list(images.order_by().values("modality").annotate(n=Count("id")).order_by("-n", "modality"))
    return {
        "n_images": sum(row["n"] for row in by_modality),
        "n_findings": of_images(Finding.objects.filter(status=Finding.Status.ACTIVE)).count(),
        # a reader's count leaves out other readers' Label Studio boxes, as every page does (boxes_visible_to)
        "n_boxes": boxes_visible_to(user, of_images(GroundingBox.objects.filter(status=Finding.Status.ACTIVE))).count(),
        "by_modality": by_modality,
        "by_region": list(images.order_by().values("body_region").annotate(n=Count("id"))
                          .order_by("-n", "body_region")),
        "by_stage": by_stage,
        "by_status": {status: sum(counts.get(status, 0) for counts in per_stage.values()) for status in statuses},
        "n_items": sum(n for counts in per_stage.values() for n in counts.values()),
        "counted_at": timezone.now(),
    }


def import_batch_list(*, user) -> QuerySet[ImportBatch]:
    if not user_can(user, Capability.IMPORT_IMAGES):
        return ImportBatch.objects.none()
    return ImportBatch.objects.select_related("created_by").order_by("-created_at")


def import_batch_get(*, user, pk: int) -> ImportBatch:
    """404 for a batch the user may not see."""
    return get_object_or_404(import_batch_list(user=user), pk=pk)


IMPORT_FILE_STATUSES = tuple(ImportFileResult.Status.values)   # the batch page's outcome filter


def import_batch_files(*, batch: ImportBatch, status: str = "") -> QuerySet[ImportFileResult]:
    """The batch's per-file results in the batch's order; `status` keeps one outcome (anything else: all)."""
    rows = batch.files.all()
    if status in IMPORT_FILE_STATUSES:
        rows = rows.filter(status=status)
    return rows.order_by("position", "id")


def import_batch_file_count(*, batch: ImportBatch, status: str = "") -> int:
    """How many results `import_batch_files` lists, from the batch's counters (written in the transaction
    of the results they count): a page of a large batch never counts its rows."""
    counters = {ImportFileResult.Status.IMPORTED: batch.files_imported, ImportFileResult.Status.DUPLICATE:
                batch.files_duplicate, ImportFileResult.Status.FAILED: batch.files_failed}
    return counters.get(status, batch.files_done)


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


def image_ids_visible(*, user, ids) -> set[int]:
    """Those of `ids` that are images the user may see."""
    return set(image_visible_to(user).filter(pk__in=list(ids)).values_list("pk", flat=True))


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
    qs = filter_by(qs, filters, {k: v for k, v in ITEM_LOOKUPS.items() if k != "chain"})
    if filters.get("chain") not in (None, ""):   # the API checks it (common.params); a page's junk finds nothing
        chain = as_int(filters["chain"], min_value=1)
        qs = qs.filter(chain_id=chain) if chain else qs.none()
    necessary = IMAGE_NECESSARY_VALUES.get(filters.get("image_necessary") or "", "")
    if necessary != "":  # set by the latest shortcut audit (validity/); unknown: never audited or not assessed
        qs = qs.filter(image_necessary=necessary) if necessary is not None else qs.filter(image_necessary__isnull=True)
    if with_evidence:
        qs = qs.prefetch_related(Prefetch("evidence_boxes", queryset=boxes_visible_to(user)))
    return qs.select_related("stage", "category", "chain__image").order_by("chain_id", "step", "-version")


def item_get(*, user, pk: int) -> QAItem:
    return get_object_or_404(
        item_visible_to(user).select_related("stage", "category", "chain__image", "created_by", "previous")
        .prefetch_related(Prefetch("evidence_boxes", queryset=boxes_visible_to(user))),
        pk=pk,
    )


def item_versions(*, item: QAItem) -> QuerySet[QAItem]:
    return QAItem.objects.filter(item_key=item.item_key).select_related("created_by").order_by("-version")


def chain_get(*, user, pk: int) -> Chain:
    if not user_can(user, Capability.VIEW_ITEMS):
        raise Http404
    return get_object_or_404(Chain.objects.select_related("image").filter(image__in=image_visible_to(user)), pk=pk)


def chain_list(*, user, image: int | str | None = None, seed: int | str | None = None) -> QuerySet[Chain]:
    """Chains of the images the user sees; of one image and one seed when given (ids and numbers, or their
    text: what is not one is no filter)."""
    if not user_can(user, Capability.VIEW_ITEMS):
        return Chain.objects.none()
    qs = Chain.objects.filter(image__in=image_visible_to(user))
    if (image := as_int(image, min_value=1)) is not None:
        qs = qs.filter(image_id=image)
    if (seed := as_int(seed)) is not None:
        qs = qs.filter(seed=seed)
    return qs.annotate(n_items=Count("items", filter=Q(items__is_current=True))).order_by("pk")


def variant_search(*, user, kind: str = "", item: int | str | None = None,
                   seed: int | str | None = None) -> QuerySet[Variant]:
    qs = Variant.objects.filter(item__in=item_visible_to(user))
    if kind:
        qs = qs.filter(kind=kind)
    if (item := as_int(item, min_value=1)) is not None:
        qs = qs.filter(item_id=item)
    if (seed := as_int(seed)) is not None:
        qs = qs.filter(seed=seed)
    return qs.order_by("pk")


def chain_items(*, chain, user) -> QuerySet[QAItem]:
    return (QAItem.objects.filter(chain=chain, is_current=True).select_related("stage", "category")
            .prefetch_related(Prefetch("evidence_boxes", queryset=boxes_visible_to(user)))
            .annotate(n_variants=Count("variants")).order_by("step"))


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


CATEGORY_TITLES_KEY = "annotation:category-titles"


def category_titles() -> dict[str, Title]:
    """{code: Title(name, description)} of every task category and stage ("S1" → "Perception"), for
    `common.titles` (registered as "category" and "stage"); cached for a minute, dropped when a curator
    edits a category (annotation/services/taxonomy.py)."""
    return cache.get_or_set(CATEGORY_TITLES_KEY, lambda: {
        code: Title(name, description or "") for code, name, description in
        TaskCategory.objects.values_list("code", "name", "description")}, 60)


def stage_titles() -> dict[str, Title]:
    return cache.get_or_set("annotation:stage-titles", lambda: {
        code: Title(name, description or "") for code, name, description in
        Stage.objects.values_list("code", "name", "description")}, 300)


def item_filter_choices() -> dict:
    return {
        "stage": list(Stage.objects.values_list("code", "name")),
        "category": list(TaskCategory.objects.order_by("stage__order", "order").values_list("code", "name")),
        "status": list(QAItem.Status.choices),
    }
