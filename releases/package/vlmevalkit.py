"""`vlmevalkit/{name}.tsv`: the release's choice questions as VLMEvalKit's multiple-choice TSV.

What VLMEvalKit expects, and what this writer matches (read in open-compass/VLMEvalKit, main at
e8e78f05, 2026-08-18; the paths below are in that repository):

- Reading: `vlmeval/smp/file.py` `load()` reads a `.tsv` with `pd.read_csv(path, sep="\\t")`. Its `dump()`
  writes `to_csv(sep="\\t", index=False, quoting=csv.QUOTE_ALL)`, its `parquet_to_tsv` pandas' default
  minimal quoting; both read back alike. We write with the `csv` module in the dialect of pandas'
  `to_csv(sep="\\t", index=False)` (tab, `"` only where needed, doubled quotes, "\\n"), row by row so
  memory stays bounded; the tests check the bytes equal pandas' own `to_csv` of the same cells.
- Columns (`vlmeval/dataset/image_mcq.py` `ImageMCQDataset.build_prompt`): `question`; the options in
  the upper-case letter columns `A`, `B`, ... (a cell left empty reads as NaN and is skipped, so rows
  with fewer options than the widest row leave their last letters empty); `hint`, printed as
  "Hint: ..." before "Question: ..." when not NaN (we write an empty cell, read as NaN, where there is
  none); `answer`, one letter; `category` / `l2-category` / `split`, by which
  `vlmeval/dataset/utils/multiple_choice.py` `report_acc` reports accuracy.
- Images (`vlmeval/dataset/image_base.py` `ImageBaseDataset.__init__`; `vlmeval/smp/vlm.py`
  `decode_base64_to_image`): `image` holds the plain base64 of the image file (here the PNG bytes of
  the row's own ImageFile, so a visual variant shows its rendered image), or, "for saving space",
  another row's `index` (a string of at most 64 characters) whose cell holds the base64. We use that:
  the first row (in file order) showing an image carries its base64, every later row showing the same
  image carries that row's index. One base64 per image keeps a release of ~1M variants the size of its
  images, not of its rows.
- CircularEval (`vlmeval/dataset/utils/multiple_choice.py` `mcq_circular_eval`): the group of a row is
  its `g_index` column, or `int(index % 1e6)` where there is none; the rows with `index == g_index`
  are the groups' main rows; a group is a hit only when every row in it is answered with its own letter
  (`prefetch_circular_group`, `eval_circular_group`). So a row that is not a rotation gets its own base
  index g (1, 2, ... in snapshot order, below 1e6), rotation k of it `index = g + k * 1_000_000`, and
  every row carries `g_index = g`; the clean row is rotation 0. An option_permutation variant belongs to
  its parent's group (`parent_variant_id`) and takes k from `variant_params["rotation"]` (the
  generator's circular shift, as in MMBench's circular copies) when every permutation of the group has
  a distinct one >= 1, else 1, 2, ... in snapshot order. A group holds what the snapshot has: missing
  rotations leave gaps in k, and where the parent itself is not in the release the group's first
  permutation is its main row (k = 0). With 1e6 groups or more the offset grows to the next power of ten
  and only the `g_index` column groups correctly.
  VLMEvalKit chooses circular evaluation by the dataset's name (`vlmeval/dataset/image_mcq.py`
  `ImageMCQDataset.evaluate_heuristic`: the name contains "mmbench", "ccbench", "circular" or "mmcr";
  some forks switch on the presence of `g_index` instead). A custom TSV is loaded as
  `$LMUData/<name>.tsv` (`vlmeval/dataset/__init__.py` `build_dataset` -> `CustomMCQDataset`), so copy
  this file there as e.g. `<name>_circular.tsv` to score it circularly; under its own name VLMEvalKit
  scores every row on its own (`mcq_vanilla_eval`), rotations included.
- Multi-answer questions: VLMEvalKit's MCQ evaluation matches one letter per row (`can_infer`,
  `eval_vanilla` against `GT`), so multi_choice rows are left out, with box and short_text rows. Kept:
  single_choice and yes_no rows, every variant kind.

Hint and question: a variant's prompt is laid out context lines, preamble, question, option lines,
instruction (annotation/variants/prompt.py). VLMEvalKit prints its own options and instruction, so
`question` is the item's question, and `hint` the prompt's text before it (an injected earlier answer,
a colleague's cue, "The region of interest is marked ..."), lines joined by a space. Where a kind
rewrites the question (premise, negation kinds), the question is the prompt's last line before the
option lines and the hint the lines before that.

Extra columns, which VLMEvalKit carries through untouched: `g_index` (above), `variant_kind` (to report
the clean and each perturbation separately) and `id` (the row's id in data/{split}.jsonl).

Refused with ValueError: an option or question text that pandas reads as NaN ("None", "NA", "null",
"", ...: VLMEvalKit would silently drop that option or question), a gold not among its options, a
gold letter that disagrees with `answer_letters`, an image missing from `snapshot.images`. Texts that
look like numbers ("01") read back as numbers; VLMEvalKit then shows them as pandas prints them.
"""
from __future__ import annotations

import base64
import csv
from collections.abc import Iterable, Iterator
from pathlib import Path

from releases.package.snapshot import Row, Snapshot

CHOICE_TYPES = ("single_choice", "yes_no")
ROTATION_KIND = "option_permutation"
OFFSET = 1_000_000
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# pandas.read_csv's default NA strings (documented under `na_values`): such a cell reads back as NaN.
PANDAS_NA = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                       "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})


def gold_value(row: Row):
    """The row's gold: `answer` itself, or its "value" where `answer` is a variant's whole expected-answer
    record ({"value": ..., "letter": ..., ...}, as annotation stores it)."""
    a = row.answer
    return a["value"] if isinstance(a, dict) and "value" in a else a


def choice_letter(row: Row) -> str:
    """The gold's letter among the row's options as shown, checked against `answer_letters`."""
    gold = gold_value(row)
    if gold not in row.options:
        raise ValueError(f"row {row.id}: the gold {gold!r} is not among its options {row.options!r}")
    index = list(row.options).index(gold)
    if index >= len(LETTERS):
        raise ValueError(f"row {row.id}: more than {len(LETTERS)} options")
    got = LETTERS[index]
    if row.answer_letters and list(row.answer_letters) != [got]:
        raise ValueError(f"row {row.id}: answer_letters {row.answer_letters!r} disagree with the gold's letter {got}")
    return got


def split_prompt(row: Row) -> tuple[str, str]:
    """(hint, question) from the variant's prompt; see the module docstring."""
    lines = row.prompt.split("\n")
    shown = [f"{LETTERS[i]}. {o}" for i, o in enumerate(row.options)]
    head = lines
    for i in range(len(lines) - len(shown) + 1):
        if shown and lines[i:i + len(shown)] == shown:
            head = lines[:i]
            break
    text = "\n".join(head)
    if row.question and row.question in text:
        before = text[:text.rfind(row.question)]
        return " ".join(s.strip() for s in before.split("\n") if s.strip()), row.question
    kept = [s.strip() for s in head if s.strip()]
    if not kept:
        return "", row.question
    return " ".join(kept[:-1]), kept[-1]


def _groups(rows: list[Row], number: int = 0, offset: int = OFFSET) -> dict[str, tuple[int, int]]:
    """Row id -> (TSV index g + k * offset, group index g), numbering groups from `number` + 1."""
    by_variant = {r.variant_id: r for r in rows}
    key_of = {}
    members: dict[int, list[Row]] = {}
    for r in rows:
        members.setdefault(group_key(r), []).append(r)
        key_of[r.id] = group_key(r)
    index = {}
    for g, (key, group) in enumerate(members.items(), start=number + 1):
        parent = by_variant.get(key)
        main = parent if parent is not None and key_of[parent.id] == key else group[0]
        index[main.id] = (g, g)
        perms = [r for r in group if r is not main]
        rotations = [r.variant_params.get("rotation") if isinstance(r.variant_params, dict) else None for r in perms]
        usable = all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in rotations) \
            and len(set(rotations)) == len(rotations)
        for n, r in enumerate(perms, start=1):
            index[r.id] = (g + (rotations[n - 1] if usable else n) * offset, g)
    return index


def group_key(r: Row) -> int:
    """The group a row belongs to: its parent's for a rotation, else its own."""
    return r.parent_variant_id if r.variant_kind == ROTATION_KIND and r.parent_variant_id is not None \
        else r.variant_id


def _items(rows: Iterable[Row]) -> Iterator[list[Row]]:
    """The choice rows, an item at a time (snapshot order keeps an item's variants adjacent)."""
    block: list[Row] = []
    for r in rows:
        if r.answer_type not in CHOICE_TYPES:
            continue
        if block and r.item_id != block[0].item_id:
            yield block
            block = []
        block.append(r)
    if block:
        yield block


def _check_text(row: Row, what: str, text: str) -> str:
    if text in PANDAS_NA:
        raise ValueError(f"row {row.id}: the {what} {text!r} reads back as NaN in pandas (VLMEvalKit would drop it); "
                         "rephrase it")
    return text


def write_vlmevalkit(snapshot: Snapshot, out: Path, *, rows: Iterable[Row] | None = None) -> None:
    """Write `vlmevalkit/{snapshot.name}.tsv` under `out` (see the module docstring). Streams the rows an item
    at a time: a rotation's group is its item's (a permutation re-orders its own item's options), so groups
    never span items; one that would (a rotation whose parent belongs to another item) is refused.
    `rows`: the snapshot's rows as another writer passes them on (data.jsonl_passing); every one is read."""
    summary = snapshot.summary
    width = max((summary.option_width.get(t, 0) for t in CHOICE_TYPES), default=0)
    if width > len(LETTERS):
        raise ValueError(f"more than {len(LETTERS)} options in a row")
    offset = OFFSET
    while summary.rotation_groups >= offset:
        offset *= 10
    letters = list(LETTERS[:width])
    folder = Path(out) / "vlmevalkit"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{snapshot.name}.tsv"
    carrier: dict[str, int] = {}
    seen_keys: set[int] = set()
    number = 0
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", quotechar='"', quoting=csv.QUOTE_MINIMAL, doublequote=True,
                            lineterminator="\n")
        writer.writerow(["index", "image", "question", "hint", *letters, "answer", "category", "l2-category",
                         "split", "g_index", "variant_kind", "id"])
        # the index and the base64 image never need quoting: they go straight to the file, and the csv module
        # (which would scan every character of a ~200 KB cell for quotes) formats only the short cells after them
        rest = _Cells()
        tail = csv.writer(rest, delimiter="\t", quotechar='"', quoting=csv.QUOTE_MINIMAL, doublequote=True,
                          lineterminator="\n")
        for block in _items(snapshot.rows if rows is None else rows):
            keys = {group_key(r) for r in block}
            spanning = keys & seen_keys
            if spanning:
                raise ValueError(f"variant {min(spanning)}'s rotations belong to more than one item")
            seen_keys |= keys
            index = _groups(block, number, offset)
            number += len(keys)
            for r in block:
                i, g = index[r.id]
                if r.image in carrier:
                    image = str(carrier[r.image])
                else:
                    if r.image not in snapshot.images:
                        raise ValueError(f"row {r.id}: its image {r.image} is not in the snapshot")
                    image = base64.b64encode(Path(snapshot.images[r.image].source).read_bytes()).decode("ascii")
                    carrier[r.image] = i
                hint, question = split_prompt(r)
                options = [_check_text(r, "option", str(o)) for o in r.options]
                tail.writerow([_check_text(r, "question", question), hint,
                               *options, *[""] * (width - len(options)), choice_letter(r),
                               f"{r.stage} {r.stage_name}", r.category_name, r.split,
                               g, r.variant_kind, r.id])
                f.write(f"{i}\t{image}\t{rest.take()}")


class _Cells:
    """What a csv.writer writes, kept until taken (one row at a time)."""

    def __init__(self):
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    def take(self) -> str:
        text, self.parts = "".join(self.parts), []
        return text

