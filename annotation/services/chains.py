"""Generating stepwise chains for images, in batches with bulk writes.

Rows -> `ImageFacts` (two queries per batch) -> `annotation.chains.generate_chain` (pure,
deterministic from image + seed) -> `validate_step` -> writes of Chain, QAItem and evidence links
(COPY with reserved ids on PostgreSQL, bulk_create elsewhere) -> one audit event per batch. Images
that already have a chain for this seed are skipped, so a run can be resumed or repeated.
"""
from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from django.db import transaction
from django.utils import timezone

from annotation.chains import ChainPolicy, generate_chain, parse_category, validate_step
from annotation.chains.balance import Balancer, balance_key
from annotation.chains.types import BoxFact, CategoryDef, ImageFacts
from annotation.models import Chain, Finding, GroundingBox, Image, QAItem, Stage, TaskCategory
from annotation.services.bulkwrite import copy_rows, copy_supported, encode_json, reserve_ids
from annotation.services.qa import qa_content_hash
from audit.services import audit_record
from common.db import ids_in, plain_values

logger = logging.getLogger(__name__)


@dataclass
class GenerateSummary:
    images: int = 0
    chains: int = 0
    items: int = 0
    skipped_existing: int = 0
    skipped_no_steps: int = 0
    invalid_steps: int = 0
    violations: list[str] = field(default_factory=list)  # first few, for the operator


def chunked(values: Iterable, size: int) -> Iterator[list]:
    it = iter(values)
    while batch := list(islice(it, size)):
        yield batch


def category_definitions(*, active_only: bool = True) -> dict[str, tuple[CategoryDef, TaskCategory]]:
    """Every task category, validated once (a broken definition raises with its code named)."""
    qs = TaskCategory.objects.select_related("stage")
    if active_only:
        qs = qs.filter(is_active=True)
    out = {}
    for row in qs:
        out[row.code] = (parse_category(category_payload(row)), row)
    return out


def category_payload(row: TaskCategory) -> dict:
    return {
        "code": row.code, "name": row.name, "stage": row.stage.code, "answer_type": row.answer_type,
        "templates": [row.prompt_template, *row.alt_templates], "rule": row.rule,
    }


#: an accepted pre-annotation this close (IoU) to a box of the same label is that box again, not a new one
DUPLICATE_IOU = 0.9


def _iou(a: tuple, b: tuple) -> float:
    w, h = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    inter = max(w, 0) * max(h, 0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def image_facts(image_ids: list[int]) -> dict[int, ImageFacts]:
    """Facts for the generators: image fields plus every active box with its finding. A box a reader
    accepted unchanged from a Label Studio pre-annotation (`provenance="accepted"`) that repeats another
    active box of the same label (IoU >= `DUPLICATE_IOU`) is that box again: it adds no finding, no count
    and no evidence (docs/labelstudio.md, "Pre-annotations and provenance")."""
    boxes: dict[int, list[BoxFact]] = {i: [] for i in image_ids}
    rows = plain_values(
        GroundingBox.objects.filter(ids_in("image_id", image_ids), status=Finding.Status.ACTIVE,
                                    finding__status=Finding.Status.ACTIVE).order_by("image_id", "id"),
        ("id", "finding_id", "image_id", "x0", "y0", "x1", "y1", "label", "finding__kind", "finding__attributes",
         "provenance"), json_fields=("finding__attributes",))
    own = {}   # (image, label) -> the rectangles of boxes that are not accepted pre-annotations
    for _, _, image_id, x0, y0, x1, y1, label, *_, provenance in rows:
        if provenance != "accepted":
            own.setdefault((image_id, label), []).append((x0, y0, x1, y1))
    for box_id, finding_id, image_id, x0, y0, x1, y1, label, kind, attributes, provenance in rows:
        xyxy = (x0, y0, x1, y1)
        if provenance == "accepted" and any(_iou(xyxy, o) >= DUPLICATE_IOU for o in own.get((image_id, label), ())):
            continue
        boxes[image_id].append(BoxFact(id=box_id, finding_id=finding_id, kind=kind, label=label,
                                       xyxy=xyxy, attributes=attributes or {}))
    facts = {}
    for pk, width, height, modality, region, metadata, center, window, group in plain_values(
        Image.objects.filter(ids_in("pk", image_ids)),
        ("id", "width", "height", "modality", "body_region", "metadata", "window_center", "window_width",
         "split_group"), json_fields=("metadata",)
    ):
        metadata = metadata or {}
        facts[pk] = ImageFacts(
            image_id=pk, width=width, height=height, modality=modality, body_region=region,
            plane=metadata.get("plane") or metadata.get("axis_name") or "", window_center=center,
            window_width=window, split_group=group, boxes=tuple(boxes.get(pk, ())),
            attributes={k: metadata[k] for k in IMAGE_FACT_KEYS if metadata.get(k) not in (None, "")},
        )
    return facts


IMAGE_FACT_KEYS = ("image_quality", "contrast_phase")   # Image.metadata keys the rules may ask about


def seeded_balancer(*, seed: int) -> Balancer:
    """A Balancer that already counts the current items of this seed's chains (a resumed or extended
    generation keeps balancing the whole set, not just the new batch)."""
    balancer = Balancer()
    rows = (QAItem.objects.filter(is_current=True, chain__seed=seed).order_by("id")
            .values_list("category__code", "category__answer_type", "question", "options", "gold_answer",
                         "chain__image__split_group"))
    for code, answer_type, question, options, gold, group in rows.iterator(chunk_size=5000):
        balancer.observe(balance_key(code, group or ""), answer_type, question, options or [], gold)
    return balancer


def chains_generate(
    *, image_ids: Iterable[int], actor, seed: int = 0, policy: ChainPolicy | None = None,
    batch_size: int = 500, progress: Callable[[int], None] | None = None,
) -> GenerateSummary:
    policy = policy or ChainPolicy()
    definitions = category_definitions()
    defs = [d for d, _ in definitions.values()]
    category_ids = {code: row.pk for code, (_, row) in definitions.items()}
    stage_ids = dict(Stage.objects.values_list("code", "id"))
    user = actor if getattr(actor, "is_authenticated", False) else None
    summary = GenerateSummary()
    balancer = seeded_balancer(seed=seed)

    for batch in chunked(image_ids, batch_size):
        existing = set(Chain.objects.filter(image_id__in=batch, seed=seed).values_list("image_id", flat=True))
        todo = [i for i in batch if i not in existing]
        summary.images += len(batch)
        summary.skipped_existing += len(existing)
        facts = image_facts(todo)
        planned = []  # (image_id, [(spec, box_ids)])
        for image_id in todo:
            if image_id not in facts:
                continue
            f = facts[image_id]
            steps = []
            for spec in generate_chain(f, defs, seed=seed, policy=policy, balancer=balancer):
                problems = validate_step(spec, f, definitions[spec.category][0])
                if problems:
                    summary.invalid_steps += 1
                    if len(summary.violations) < 20:
                        summary.violations.append(
                            f"image {image_id} step {spec.step} ({spec.category}): {'; '.join(problems)}")
                    continue
                steps.append(spec)
            if steps:
                planned.append((image_id, steps))
            else:
                summary.skipped_no_steps += 1
        if planned:
            _write_batch(planned, seed=seed, user=user, actor=actor, category_ids=category_ids, stage_ids=stage_ids,
                         summary=summary)
        if progress:
            progress(len(batch))
    return summary


CHAIN_COLUMNS = ("id", "image_id", "seed", "created_by_id", "created_at")
ITEM_COLUMNS = ("id", "item_key", "version", "is_current", "previous_id", "chain_id", "step", "stage_id", "category_id",
                "question", "options", "gold_answer", "status", "content_hash", "change_reason", "image_necessary",
                "created_by_id", "created_at")
EVIDENCE_COLUMNS = ("qaitem_id", "groundingbox_id")


@transaction.atomic
def _write_batch(planned, *, seed, user, actor, category_ids, stage_ids, summary: GenerateSummary) -> None:
    """Chains, their items and evidence links, and one audit event. PostgreSQL: chain and item ids
    reserved in one query each, then one COPY per table; elsewhere bulk_create."""
    rows = []   # (image_id, spec, content hash)
    for image_id, steps in planned:
        rows.extend((image_id, spec, qa_content_hash(
            category_code=spec.category, stage_code=spec.stage, question=spec.question, options=spec.options,
            gold_answer=spec.gold, box_ids=spec.evidence_box_ids)) for spec in steps)
    if copy_supported():
        chain_ids, n_items = _copy_batch(planned, rows, seed=seed, user=user, category_ids=category_ids,
                                         stage_ids=stage_ids)
    else:
        chain_ids, n_items = _bulk_create_batch(planned, rows, seed=seed, user=user, category_ids=category_ids,
                                                stage_ids=stage_ids)
    summary.chains += len(chain_ids)
    summary.items += n_items
    audit_record(actor=actor, action="annotation.chain.generate_batch", object_type="annotation.chain",
                 object_id=chain_ids[0], after={
                     "seed": seed, "chains": len(chain_ids), "items": n_items,
                     "chain_ids": [chain_ids[0], chain_ids[-1]], "image_ids": [planned[0][0], planned[-1][0]],
                 }, objects=[*(("annotation.chain", c) for c in chain_ids),
                             *(("annotation.image", image_id) for image_id, _ in planned)])


def _copy_batch(planned, rows, *, seed, user, category_ids, stage_ids) -> tuple[list[int], int]:
    now, user_id = timezone.now(), user.pk if user else None
    chain_ids, item_ids = reserve_ids(Chain, len(planned)), reserve_ids(QAItem, len(rows))
    chain_of = dict(zip((image_id for image_id, _ in planned), chain_ids))
    copy_rows(Chain, CHAIN_COLUMNS, ((c, image_id, seed, user_id, now) for c, (image_id, _) in zip(chain_ids, planned)))
    copy_rows(QAItem, ITEM_COLUMNS, (
        (pk, uuid.uuid4(), 1, True, None, chain_of[image_id], spec.step, stage_ids[spec.stage],
         category_ids[spec.category], spec.question, encode_json(spec.options), encode_json(spec.gold),
         QAItem.Status.DRAFT.value, digest, "", None, user_id, now)
        for pk, (image_id, spec, digest) in zip(item_ids, rows)))
    copy_rows(QAItem.evidence_boxes.through, EVIDENCE_COLUMNS,
              ((pk, box_id) for pk, (_, spec, _) in zip(item_ids, rows) for box_id in spec.evidence_box_ids))
    return chain_ids, len(rows)


def _bulk_create_batch(planned, rows, *, seed, user, category_ids, stage_ids) -> tuple[list[int], int]:
    chains = Chain.objects.bulk_create([Chain(image_id=image_id, seed=seed, created_by=user)
                                        for image_id, _ in planned])
    chain_of = {c.image_id: c for c in chains}
    items = QAItem.objects.bulk_create([QAItem(
        chain=chain_of[image_id], step=spec.step, stage_id=stage_ids[spec.stage],
        category_id=category_ids[spec.category], question=spec.question, options=spec.options,
        gold_answer=spec.gold, status=QAItem.Status.DRAFT, content_hash=digest, created_by=user,
    ) for image_id, spec, digest in rows], batch_size=2000)
    Through = QAItem.evidence_boxes.through
    Through.objects.bulk_create(
        [Through(qaitem_id=item.pk, groundingbox_id=box_id)
         for item, (_, spec, _) in zip(items, rows) for box_id in spec.evidence_box_ids],
        batch_size=5000,
    )
    return [c.pk for c in chains], len(items)
