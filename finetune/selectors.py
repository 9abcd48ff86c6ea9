"""Reads for fine-tuning: jobs, and the facts a recipe is built from (items per split, chains, variants)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db.models import QuerySet

from annotation.models import QAItem, Variant
from annotation.services.variants import variant_image_path
from annotation.splits import split_for_group
from annotation.storage import resolve
from common.errors import NotFound
from releases.models import Release, ReleaseItem
from releases.selectors import heavy_fields, release_rows
from workers.models import ModelEndpoint
from workers.services.runs import FILTER_KEYS, filtered_items

from .core.recipes import ChainFacts, StepFacts, VariantFacts
from .models import FineTuneJob


def job_list() -> QuerySet[FineTuneJob]:
    """Jobs with what their rows name: the release and the evaluation run without their heavy JSON (a release's
    changelog, a run's metrics: megabytes at the paper's scale)."""
    return (FineTuneJob.objects.select_related("base_endpoint", "release", "result_endpoint", "evaluation_run",
                                               "created_by")
            .defer(*heavy_fields("release__"), "evaluation_run__metrics", "evaluation_run__provenance"))


def job_find(*, pk: int) -> FineTuneJob | None:
    return job_list().filter(pk=pk).first()


def job_get(*, pk: int) -> FineTuneJob:
    job = job_find(pk=pk)
    if job is None:
        raise NotFound(f"no fine-tuning job {pk}")
    return job


def job_completed_named(*, name: str) -> FineTuneJob | None:
    return job_list().filter(name=name, status=FineTuneJob.Status.COMPLETED).first()


def items_by_split(*, release=None, item_filters: dict | None = None) -> dict[str, list[int]]:
    """Item ids per patient-level split: a release's frozen rows, or current items matching the filters
    (approved unless the filter names a status), split by their image's split group."""
    out: dict[str, list[int]] = {"train": [], "val": [], "test": []}
    if release is not None:
        rows = ReleaseItem.objects.filter(release=release).order_by("item_id").values_list("item_id", "split")
        for item_id, split in rows:
            out.setdefault(split, []).append(item_id)
        return out
    items = filtered_items(item_filters or {})
    for pk, group in items.order_by("pk").values_list("pk", "chain__image__split_group").iterator(chunk_size=5000):
        out[split_for_group(group or "")].append(pk)
    return out


def unknown_filters(item_filters: dict) -> list[str]:
    return sorted(set(item_filters) - set(FILTER_KEYS))


def _evidence(item: QAItem, expected: dict) -> tuple | None:
    box = expected.get("evidence_box")
    if box:
        return tuple(box)
    boxes = sorted(item.evidence_boxes.all(), key=lambda b: b.pk)
    active = [b for b in boxes if b.status == "active"]
    return active[0].xyxy if active else None


def training_chains(item_ids: Iterable[int], *, prompt_template: str = "{prompt}",
                    with_variants: bool = False) -> tuple[list[ChainFacts], int]:
    """The chains of these items as recipe facts (clean prompts, expected answers, evidence boxes; with
    `with_variants`, their adversarial variants and the images they are shown with), and how many items
    were left out for having no clean variant. Prompts are wrapped in the model's prompt template, as in
    evaluation."""
    ids = list(item_ids)
    items = (QAItem.objects.filter(pk__in=ids).select_related("category", "stage", "chain__image")
             .prefetch_related("evidence_boxes").order_by("chain_id", "step", "pk"))
    variants: dict[int, list[Variant]] = defaultdict(list)
    query = Variant.objects.filter(item_id__in=ids)
    if not with_variants:
        query = query.filter(kind="clean")
    for variant in query.select_related("item__chain__image").order_by("pk"):
        variants[variant.item_id].append(variant)
    wrap = prompt_template.replace
    chains: dict[int, dict] = {}
    skipped = 0
    for item in items:
        clean = next((v for v in variants.get(item.pk, ()) if v.kind == "clean"), None)
        if clean is None:
            skipped += 1
            continue
        chain = chains.setdefault(item.chain_id, {"image": str(resolve(item.chain.image.file)), "steps": [],
                                                  "variants": []})
        expected = clean.expected_answer or {}
        chain["steps"].append(StepFacts(item_id=item.pk, step=item.step, stage=item.stage.order,
                                        prompt=wrap("{prompt}", clean.prompt), answer_type=item.category.answer_type,
                                        expected=expected, evidence_box=_evidence(item, expected)))
        for v in variants.get(item.pk, ()):
            if v.kind != "clean":
                chain["variants"].append(VariantFacts(
                    variant_id=v.pk, item_id=item.pk, kind=v.kind, prompt=wrap("{prompt}", v.prompt),
                    answer_type=item.category.answer_type, expected=v.expected_answer or {},
                    image=str(variant_image_path(v))))
    facts = [ChainFacts(chain_id=cid, image=c["image"], steps=tuple(c["steps"]), variants=tuple(c["variants"]))
             for cid, c in sorted(chains.items())]
    return facts, skipped


# --- the job pages and API ---------------------------------------------------------------------------------------


def job_list_by_status(*, status: str = "") -> QuerySet[FineTuneJob]:
    """The list page's and API's rows: every job, or those in one status (an unknown status: every job)."""
    rows = job_list()
    return rows.filter(status=status) if status in FineTuneJob.Status.values else rows


def base_model_choices() -> QuerySet[ModelEndpoint]:
    """Models a job can start from: active local transformers models that are not themselves fine-tuned."""
    return (ModelEndpoint.objects.filter(is_active=True, backend="transformers")
            .exclude(parameters__has_key="adapter").order_by("name"))


def release_choices() -> QuerySet[Release]:
    """Releases a job can train on (the newest first); job_create refuses one without train items."""
    return release_rows().order_by("-created_at", "-id")


def job_progress(*, job: FineTuneJob) -> dict:
    """What the job page polls: the status and the live progress (step, losses and their curve, speed,
    ETA, peak memory), with the budget as `steps` before the worker has reported anything."""
    progress = {"step": 0, "steps": job.steps, "history": [], **(job.progress or {})}
    steps = progress.get("steps") or job.steps
    return {"id": job.pk, "status": job.status, "active": job.is_active, "error": job.error,
            "percent": round(100 * min(progress.get("step", 0), steps) / steps, 1) if steps else 0.0,
            "progress": progress}
