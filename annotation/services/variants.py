"""Generating adversarial variants for QA items, in batches with bulk writes, and rendering
visual variants on demand (cached by recipe hash)."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from PIL import Image as PILImage

from annotation.chains.types import ItemFacts, StepSpec
from annotation.models import Image, QAItem, Variant
from annotation.services.chains import chunked, image_facts
from annotation.storage import resolve, storage_root
from annotation.variants import generate_variants, recipe_hash, render_recipe
from annotation.variants.premise import PremiseBalance, blocked_organ, catalogue_vocabulary
from audit.services import audit_record


@dataclass
class VariantSummary:
    items: int = 0
    variants: int = 0
    skipped_existing: int = 0


def _variant_hash(spec) -> str:
    payload = {"kind": spec.kind, "params": spec.params, "seed": spec.seed, "prompt": spec.prompt,
               "options": spec.options, "expected": spec.expected_answer, "recipe": spec.image_recipe}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def _swap_pools() -> dict[tuple[str, str], list[tuple[int, str]]]:
    """Images by (modality, body region), for 'another patient's image of the same organ'."""
    pools = defaultdict(list)
    rows = Image.objects.order_by("pk").values_list("pk", "modality", "body_region", "split_group")
    for pk, modality, region, group in rows:
        if modality and region:
            pools[(modality, region)].append((pk, group))
    return pools


def _item_facts(items: list[QAItem], pools, swap_limit: int = 8) -> list[ItemFacts]:
    image_ids = sorted({it.chain.image_id for it in items})
    facts = image_facts(image_ids)
    chain_ids = {it.chain_id for it in items}
    earlier = defaultdict(list)
    for row in (QAItem.objects.filter(chain_id__in=chain_ids, is_current=True)
                .order_by("chain_id", "step").values("chain_id", "step", "stage__code", "category__code",
                                                      "category__answer_type", "question", "options", "gold_answer")):
        earlier[row["chain_id"]].append(StepSpec(
            step=row["step"], stage=row["stage__code"], category=row["category__code"],
            answer_type=row["category__answer_type"], question=row["question"], options=row["options"],
            gold=row["gold_answer"]))
    evidence = defaultdict(list)
    Through = QAItem.evidence_boxes.through
    links = Through.objects.filter(qaitem_id__in=[it.pk for it in items]).values_list("qaitem_id", "groundingbox_id")
    for item_id, box_id in links:
        evidence[item_id].append(box_id)
    out = []
    for it in items:
        f = facts[it.chain.image_id]
        by_id = {b.id: b for b in f.boxes}
        swaps = tuple(pk for pk, group in pools.get((f.modality, f.body_region), ())
                      if group != f.split_group)[:swap_limit]
        out.append(ItemFacts(
            item_id=it.pk, stage=it.stage.code, category=it.category.code, answer_type=it.category.answer_type,
            question=it.question, options=it.options, gold=it.gold_answer, image=f,
            evidence=tuple(by_id[b] for b in evidence[it.pk] if b in by_id),
            earlier_steps=tuple(s for s in earlier[it.chain_id] if s.step < it.step),
            swap_image_ids=swaps,
            answer_with_box=bool((it.category.rule or {}).get("answer_with_box")),
        ))
    return out


PREMISE_PSEUDOCOUNT = 10.0     # weight of the prior (in items) when the premise vocabulary is estimated


def _blend(counts: dict, prior: dict, weight: float) -> dict:
    """{key: [(label, organ, w)]}: observed counts plus ``weight`` items' worth of the prior."""
    out = {}
    for key in set(prior) | set(counts):
        w = defaultdict(float, counts.get(key, {}))
        rows = prior.get(key, [])
        total = sum(x for _, _, x in rows)
        for label, organ, x in rows:
            w[(label, organ)] += weight * x / total if total else 0.0
        out[key] = [(label, organ, x) for (label, organ), x in sorted(w.items()) if x > 0]
    return out


def premise_vocabularies() -> tuple[dict, dict]:
    """The (label, organ) pairs premises may name, per (modality, body region), weighted as the
    lesions that S3/S4 items really are about (their index lesions), for all categories together and
    per category (the balance of answers makes the lesion mix differ by category). Each estimate
    leans on a prior worth ``PREMISE_PSEUDOCOUNT`` items: the phantom catalogue for the overall one,
    the overall one for each category. A false premise drawn from it names what a true premise of
    that category would, so the named lesion alone cannot tell them apart. Returns (overall, by category)."""
    overall: dict = defaultdict(lambda: defaultdict(float))
    per_category: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(float)))
    Through = QAItem.evidence_boxes.through
    rows = (Through.objects.filter(qaitem__is_current=True, qaitem__stage__code__in=("S3", "S4"),
                                   groundingbox__finding__kind="lesion")
            .values_list("qaitem__category__code", "qaitem__chain__image__modality",
                         "qaitem__chain__image__body_region", "groundingbox__label",
                         "groundingbox__finding__attributes"))
    for category, modality, region, label, attributes in rows.iterator(chunk_size=5000):
        organ = (attributes or {}).get("organ")
        if label and organ and not blocked_organ(organ):
            overall[(modality, region)][(label, organ)] += 1.0
            per_category[category][(modality, region)][(label, organ)] += 1.0
    base = _blend(overall, catalogue_vocabulary(), PREMISE_PSEUDOCOUNT)
    return base, {c: _blend(v, base, PREMISE_PSEUDOCOUNT) for c, v in per_category.items()}


def premise_balance(*, seed: int) -> PremiseBalance:
    """A PremiseBalance that already counts the false-premise variants of this seed (a resumed
    generation keeps the named pairs of the whole set balanced)."""
    balance = PremiseBalance()
    rows = (Variant.objects.filter(kind="false_premise", seed=seed).order_by("id")
            .values_list("item__category__code", "params"))
    for category, params in rows.iterator(chunk_size=5000):
        if params.get("true_label") and params.get("label"):
            balance.record(category, (params["true_label"], params["true_organ"]), (params["label"], params["organ"]))
    return balance


def variants_generate(
    *, items: Iterable[int], actor, seed: int = 0, kinds: Collection[str] | None = None,
    batch_size: int = 500, progress: Callable[[int], None] | None = None,
) -> VariantSummary:
    """Variants for the given item ids (current versions). Items that already have variants for
    this seed are skipped, so runs resume."""
    pools = _swap_pools()
    vocabulary, by_category = premise_vocabularies()
    balance = premise_balance(seed=seed)
    summary = VariantSummary()
    for batch in chunked(items, batch_size):
        done = set(Variant.objects.filter(item_id__in=batch, seed=seed).values_list("item_id", flat=True).distinct())
        todo = list(QAItem.objects.filter(pk__in=[i for i in batch if i not in done], is_current=True)
                    .select_related("chain", "stage", "category").order_by("pk"))
        summary.items += len(batch)
        summary.skipped_existing += len(done)
        if todo:
            specs = [(f.item_id, generate_variants(f, seed=seed, kinds=kinds, premise_balance=balance,
                                                   vocabulary=by_category.get(f.category, vocabulary)))
                     for f in _item_facts(todo, pools)]
            summary.variants += _write_variants(specs, seed=seed, actor=actor)
        if progress:
            progress(len(batch))
    return summary


@transaction.atomic
def _write_variants(specs, *, seed: int, actor) -> int:
    clean_rows, rest = [], []
    for item_id, item_specs in specs:
        for spec in item_specs:
            row = Variant(item_id=item_id, kind=spec.kind, params=spec.params, seed=spec.seed, prompt=spec.prompt,
                          options=spec.options, expected_answer=spec.expected_answer, image_recipe=spec.image_recipe,
                          content_hash=_variant_hash(spec))
            (clean_rows if spec.parent_kind is None else rest).append((item_id, row))
    clean = Variant.objects.bulk_create([r for _, r in clean_rows], batch_size=2000)
    parent_of = {item_id: row.pk for (item_id, _), row in zip(clean_rows, clean)}
    for item_id, row in rest:
        row.parent_id = parent_of.get(item_id)
    Variant.objects.bulk_create([r for _, r in rest], batch_size=2000)
    total = len(clean_rows) + len(rest)
    if total:
        audit_record(actor=actor, action="annotation.variant.generate_batch", object_type="annotation.variant",
                     object_id=clean[0].pk if clean else "", after={
                         "seed": seed, "items": len(specs), "variants": total,
                         "item_ids": [specs[0][0], specs[-1][0]]},
                     objects=[("annotation.qaitem", item_id) for item_id, _ in specs])
    return total


def variant_image_path(variant: Variant) -> Path:
    """The image a model sees for this variant: the item's own PNG, or the rendered recipe
    (rendered once, cached under variants/ by recipe hash)."""
    if not variant.image_recipe:
        return resolve(variant.item.chain.image.file)
    digest = recipe_hash(variant.image_recipe)
    path = storage_root() / "variants" / digest[:2] / f"{digest}.png"
    if path.exists():
        return path
    image = render_recipe(variant.image_recipe, load_image=_load_image)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".png")
    try:
        with os.fdopen(fd, "wb") as fh:
            image.save(fh, format="PNG")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _load_image(image_id: int) -> PILImage.Image:
    image = Image.objects.only("file").get(pk=image_id)
    with PILImage.open(resolve(image.file)) as im:
        return im.convert("RGB")
