"""Generating adversarial variants for QA items, in batches with bulk writes, and rendering
visual variants on demand (cached by recipe hash)."""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import tempfile
from collections import defaultdict, deque
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from hashlib import sha256
from itertools import islice
from pathlib import Path

from django.db import connection, connections, transaction
from django.utils import timezone
from PIL import Image as PILImage

from annotation.chains.types import ItemFacts, StepSpec
from annotation.models import Image, QAItem, TaskCategory, Variant
from annotation.services.bulkwrite import (
    NULL_BYTES,
    copy_escape,
    copy_escape_json,
    copy_supported,
    copy_text,
    encode_json_bytes,
    reserve_ids,
)
from annotation.services.chains import chunked, image_facts
from annotation.storage import resolve, storage_root
from annotation.variants import generate_variants, recipe_hash, render_recipe
from annotation.variants.premise import PremiseBalance, blocked_organ, catalogue_vocabulary, check_vocabulary
from audit.services import audit_record
from common.collector import collector_paused
from common.db import ids_in, plain_values


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


ITEM_FIELDS = ("pk", "chain_id", "chain__image_id", "step", "stage__code", "category_id", "category__code",
               "category__answer_type", "question", "options", "gold_answer")


ITEM_JSON = ("options", "gold_answer")


def boxed_categories() -> frozenset[int]:
    """Ids of the task categories whose rule asks for the answer together with the lesion's box, read once
    per generation (a rule is some kilobytes of JSON: decoding it for every item cost more than the item)."""
    return frozenset(pk for pk, rule in TaskCategory.objects.values_list("pk", "rule")
                     if (rule or {}).get("answer_with_box"))


def _item_rows(item_ids: list[int]) -> list[dict]:
    """The current versions among `item_ids`, as the value rows `_item_facts` reads (no model instances)."""
    rows = plain_values(QAItem.objects.filter(ids_in("pk", item_ids), is_current=True).order_by("pk"), ITEM_FIELDS,
                        json_fields=ITEM_JSON)
    return [dict(zip(ITEM_FIELDS, row)) for row in rows]


def _item_facts(items: list[dict], pools, boxed: frozenset[int], swap_limit: int = 8) -> list[ItemFacts]:
    image_ids = sorted({it["chain__image_id"] for it in items})
    facts = image_facts(image_ids)
    chain_ids = {it["chain_id"] for it in items}
    earlier = defaultdict(list)
    steps = plain_values(
        QAItem.objects.filter(ids_in("chain_id", chain_ids), is_current=True).order_by("chain_id", "step"),
        ("chain_id", "step", "stage__code", "category__code", "category__answer_type", "question", "options",
         "gold_answer"), json_fields=("options", "gold_answer"))
    for chain_id, step, stage, category, answer_type, question, options, gold in steps:
        earlier[chain_id].append(StepSpec(step=step, stage=stage, category=category, answer_type=answer_type,
                                          question=question, options=options, gold=gold))
    evidence = defaultdict(list)
    Through = QAItem.evidence_boxes.through
    links = plain_values(Through.objects.filter(ids_in("qaitem_id", [it["pk"] for it in items])),
                         ("qaitem_id", "groundingbox_id"))
    for item_id, box_id in links:
        evidence[item_id].append(box_id)
    out = []
    for it in items:
        f = facts[it["chain__image_id"]]
        by_id = {b.id: b for b in f.boxes}
        swaps = tuple(islice((pk for pk, group in pools.get((f.modality, f.body_region), ())
                              if group != f.split_group), swap_limit))
        out.append(ItemFacts(
            item_id=it["pk"], stage=it["stage__code"], category=it["category__code"],
            answer_type=it["category__answer_type"], question=it["question"], options=it["options"],
            gold=it["gold_answer"], image=f, evidence=tuple(by_id[b] for b in evidence[it["pk"]] if b in by_id),
            earlier_steps=tuple(s for s in earlier[it["chain_id"]] if s.step < it["step"]),
            swap_image_ids=swaps,
            answer_with_box=it["category_id"] in boxed,
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


AHEAD = 3      # batches a generation child may have read and generated before the parent writes them


def variants_generate(
    *, items: Iterable[int], actor, seed: int = 0, kinds: Collection[str] | None = None,
    batch_size: int = 500, progress: Callable[[int], None] | None = None, processes: bool | None = None,
) -> VariantSummary:
    """Variants for the given item ids (current versions; an id given twice counts once). Items that
    already have variants for this seed are skipped, so runs resume.

    Pipelined: while one batch is written (a COPY on PostgreSQL: the database's time), the next batches'
    variants are generated, in item order, so the premise balance and the output are those of a one-thread
    run. With `processes` (default: on PostgreSQL, for more than one batch, outside a transaction and a
    daemon process) one forked child process reads each batch's items (its own connection) and generates
    them, up to `AHEAD` batches ahead, and hands back each variant's COPY text but its two ids; this process
    only writes. Otherwise a helper thread generates one batch ahead while this thread reads and writes.
    Either way every write is on this thread's connection, one transaction per batch."""
    items = list(_unique(items))
    copy = copy_supported()
    if processes is None:
        processes = (copy and len(items) > batch_size and not connection.in_atomic_block
                     and not multiprocessing.current_process().daemon)
    if processes and connection.in_atomic_block:
        raise ValueError("variants_generate(processes=True) cannot run inside a transaction: the generation "
                         "process reads with its own connection")
    pools = _swap_pools()
    vocabulary, by_category = premise_vocabularies()
    for v in (vocabulary, *by_category.values()):
        check_vocabulary(v)
    generate = partial(_generate_batch, seed=seed, kinds=kinds, balance=premise_balance(seed=seed),
                       vocabulary=vocabulary, by_category=by_category, copy=copy)
    prepare = partial(_prepare_batch, seed=seed, pools=pools, boxed=boxed_categories())
    summary = VariantSummary()
    with _generator_pool(prepare, generate, processes) as (submit, ahead):
        pending: deque = deque()
        batches = _batches(items, batch_size)
        while True:
            pending.extend((submit(batch), len(batch)) for batch in islice(batches, ahead + 1 - len(pending)))
            if not pending:
                return summary
            future, size = pending.popleft()
            skipped, generated = future.result()
            summary.items += size
            summary.skipped_existing += skipped
            summary.variants += _write_variants(generated, seed=seed, actor=actor) if generated else 0
            if progress:
                progress(size)


RAMP = (8, 4, 2)     # the first batches (and the last) are these fractions of batch_size, when that is large


def _batches(items: list[int], size: int) -> Iterator[list[int]]:
    """`items` in batches of `size`, except that, when `size` is at least 256 and there is more than one
    batch, the first batches are 1/8, 1/4 and 1/2 of it and the last is split in halves down to about 1/8:
    the first write starts after a small batch is generated, not a full one, and the generator is not left
    idle while the last full batch is written. Batching never changes what is generated."""
    floor = size // RAMP[0]
    if floor < 32 or len(items) <= size:
        yield from chunked(items, size)
        return
    start = 0
    for fraction in RAMP:
        step = size // fraction
        if len(items) - start < 2 * step:
            break
        yield items[start:start + step]
        start += step
    rest = len(items) - start
    end = start + (rest - 1) // size * size if rest else start     # the last (partial or full) batch from here
    yield from chunked(items[start:end], size)
    last = items[end:]
    while len(last) > 2 * floor:
        half = len(last) // 2
        yield last[:half]
        last = last[half:]
    if last:
        yield last


def _prepare_batch(batch: list[int], *, seed: int, pools, boxed: frozenset[int], generate=None):
    """(items skipped as done, their facts or, given `generate`, the generated batch) for a batch of ids."""
    stored = Variant.objects.filter(ids_in("item_id", batch), seed=seed).order_by().distinct()
    done = {i for i, in plain_values(stored, ("item_id",))}
    facts = _item_facts(_item_rows([i for i in batch if i not in done]), pools, boxed)
    return len(done), (generate(facts) if generate and facts else facts)


_CHILD: dict = {}      # the generation child's batch function (inherited by fork, never pickled)


def _child_start(prepare) -> None:
    _CHILD["prepare"] = prepare


def _child_prepare(batch: list[int]):
    return _CHILD["prepare"](batch)


def _child_close() -> None:
    connections.close_all()


@contextmanager
def _generator_pool(prepare, generate, processes: bool):
    """(submit a batch of ids -> future of (skipped, generated), batches to keep ahead). One worker either
    way, so batches are generated in order and the premise balance sees every item once. The process is
    forked with no open connection (closed here first, reopened on next use), so it opens its own."""
    if processes:
        connections.close_all()
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_child_start, initargs=(partial(prepare, generate=generate),)) as pool:
            try:
                yield partial(pool.submit, _child_prepare), AHEAD
            finally:
                with suppress(BrokenProcessPool):    # a child that died: its error is the one raised
                    pool.submit(_child_close)
    else:
        with ThreadPoolExecutor(max_workers=1) as pool:
            def submit(batch):
                skipped, facts = prepare(batch)          # this thread's connection: the caller's transaction
                return pool.submit(lambda: (skipped, generate(facts) if facts else []))
            yield submit, 1


def _unique(values: Iterable[int]) -> Iterator[int]:
    seen = set()
    for v in values:
        if v not in seen:
            seen.add(v)
            yield v


def _generate_batch(facts: list[ItemFacts], *, seed, kinds, balance, vocabulary, by_category,
                    copy: bool) -> list[tuple]:
    """Per item: with `copy`, (item id, the indexes of its clean variants, each variant's COPY text from
    `item_id` on: `copy_lines` adds the ids); else (item id, specs). The cyclic garbage collector pauses
    meanwhile: a batch allocates some hundred thousand small objects that all stay alive until written, so
    its collections found nothing and took half the time (full passes over every object of the process)."""
    with collector_paused():
        now = timezone.now().isoformat().encode()
        out = []
        for f in facts:
            specs = generate_variants(f, seed=seed, kinds=kinds, premise_balance=balance,
                                      vocabulary=by_category.get(f.category, vocabulary), vocabulary_checked=True)
            if copy:
                item = b"%d" % f.item_id
                shared = _shared_options(f.options)
                out.append((f.item_id, tuple(k for k, s in enumerate(specs) if s.parent_kind is None),
                            [_copy_tail(item, spec, now, shared) for spec in specs]))
            else:
                out.append((f.item_id, specs))
        return out


VARIANT_COLUMNS = ("id", "parent_id", "item_id", "kind", "params", "seed", "prompt", "options", "expected_answer",
                   "image_recipe", "content_hash", "created_at")


_KIND_TEXT: dict[str, tuple[bytes, bytes]] = {}      # a variant kind -> (its JSON, its COPY text); a few kinds


def _kind_text(kind: str) -> tuple[bytes, bytes]:
    text = _KIND_TEXT.get(kind)
    if text is None:
        text = _KIND_TEXT[kind] = (encode_json_bytes(kind), copy_escape(kind).encode())
    return text


def _shared_options(options) -> tuple[list, bytes] | None:
    """(an item's options, their JSON) for the variants that show them unchanged (most do), when every option is
    a string: then list equality means the same JSON (1 == 1.0 == True would not)."""
    if isinstance(options, list) and all(type(o) is str for o in options):
        return options, encode_json_bytes(options)
    return None


def _encoded(spec, shared: tuple[list, bytes] | None = None) -> tuple[bytes, bytes, bytes, bytes | None, str]:
    """(params, options, expected answer, image recipe or None) as compact key-sorted JSON text (ASCII
    bytes), and the content hash, computed from those same bytes: what `_variant_hash` hashes, each value
    encoded once. `shared`: `_shared_options` of the item, reused when the variant shows the same options."""
    params = encode_json_bytes(spec.params)
    options = shared[1] if shared is not None and spec.options == shared[0] else encode_json_bytes(spec.options)
    expected, recipe = encode_json_bytes(spec.expected_answer), encode_json_bytes(spec.image_recipe)
    payload = (b'{"expected":%b,"kind":%b,"options":%b,"params":%b,"prompt":%b,"recipe":%b,"seed":%d}'
               % (expected, _kind_text(spec.kind)[0], options, params, encode_json_bytes(spec.prompt), recipe,
                  int(spec.seed)))
    return params, options, expected, None if spec.image_recipe is None else recipe, sha256(payload).hexdigest()


def _copy_tail(item: bytes, spec, now: bytes, shared: tuple[list, bytes] | None = None) -> bytes:
    """One variant's COPY text from `item_id` to `created_at` (VARIANT_COLUMNS[2:]), UTF-8 bytes. The JSON
    columns need only their backslashes doubled (`copy_escape_json`); the kind and prompt are plain text."""
    params, options, expected, recipe, digest = _encoded(spec, shared)
    return b"%b\t%b\t%b\t%d\t%b\t%b\t%b\t%b\t%b\t%b" % (
        item, _kind_text(spec.kind)[1], copy_escape_json(params), int(spec.seed),
        copy_escape(spec.prompt).encode(), copy_escape_json(options), copy_escape_json(expected),
        NULL_BYTES if recipe is None else copy_escape_json(recipe), digest.encode(), now)


def copy_lines(generated, ids: list[int]) -> tuple[bytes, int | None]:
    """COPY text (bytes) of a generated batch, ids taken in order; every variant but the clean one points at
    its item's clean variant. Returns (text, the first clean variant's id)."""
    lines, offset, first = [], 0, None
    for _, roots, tails in generated:
        clean = ids[offset + roots[0]] if roots else None
        first = first or clean
        parent = NULL_BYTES if clean is None else b"%d" % clean
        for k, tail in enumerate(tails):
            lines.append(b"%d\t%b\t%b\n" % (ids[offset + k], NULL_BYTES if k in roots else parent, tail))
        offset += len(tails)
    return b"".join(lines), first


@transaction.atomic
def _write_variants(generated, *, seed: int, actor) -> int:
    """Store one batch (`_generate_batch`'s; clean variants are their items' parents) and its audit event.
    PostgreSQL: ids reserved in one query, then one COPY of the text made in generation; elsewhere two
    bulk_creates."""
    total = sum(len(item[-1]) for item in generated)
    if not total:
        return 0
    if copy_supported():
        text, first_clean = copy_lines(generated, reserve_ids(Variant, total))
        copy_text(Variant, VARIANT_COLUMNS, text)
    else:
        first_clean = _bulk_create_variants(generated)
    audit_record(actor=actor, action="annotation.variant.generate_batch", object_type="annotation.variant",
                 object_id=first_clean or "", after={
                     "seed": seed, "items": len(generated), "variants": total,
                     "item_ids": [generated[0][0], generated[-1][0]]},
                 objects=[("annotation.qaitem", item[0]) for item in generated])
    return total


def _bulk_create_variants(generated) -> int | str:
    clean_rows, rest = [], []
    for item_id, item_specs in generated:
        for spec in item_specs:
            digest = _encoded(spec)[4]
            row = Variant(item_id=item_id, kind=spec.kind, params=spec.params, seed=spec.seed, prompt=spec.prompt,
                          options=spec.options, expected_answer=spec.expected_answer, image_recipe=spec.image_recipe,
                          content_hash=digest)
            (clean_rows if spec.parent_kind is None else rest).append((item_id, row))
    clean = Variant.objects.bulk_create([r for _, r in clean_rows], batch_size=2000)
    parent_of = {item_id: row.pk for (item_id, _), row in zip(clean_rows, clean)}
    for item_id, row in rest:
        row.parent_id = parent_of.get(item_id)
    Variant.objects.bulk_create([r for _, r in rest], batch_size=2000)
    return clean[0].pk if clean else ""


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
