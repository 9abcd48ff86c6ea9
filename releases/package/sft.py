"""`sft/{split}.jsonl` and `sft/{split}.answer_only.jsonl`: chains as chat conversations for supervised
fine-tuning.

Splits: train, and val beside it (`SFT_SPLITS`) so a fine-tuning run can measure its loss on held-out
patients while it trains; test never, so a model tuned on these files can still be benchmarked on the
test split. The split is the release's patient-level one.

One record per chain, from its clean variants only (perturbations are for evaluation), steps in
reading order (`step`, then the row id where a step has more than one item). Records in chain order.
A record::

    {"id": <chain id>, "split": "train", "n_steps": 5, "image": "images/<sha>.png",
     "rows": ["<row id of step 1>", ...],
     "messages": [{"role": "user", "content": [{"type": "image", "image": "images/<sha>.png"},
                                               {"type": "text", "text": "<step 1 question>"}]},
                  {"role": "assistant", "content": [{"type": "text", "text": "<step 1 answer>"}]},
                  {"role": "user", "content": [{"type": "text", "text": "<step 2 question>"}]}, ...]}

Messages follow the OpenAI / Hugging Face chat layout (content as a list of typed parts, the image part
as `{"type": "image", "image": <path inside the release>}`, as Hugging Face's multimodal chat templates
take it). The image part opens the first user turn, and any later turn whose step shows another image.
A user turn is the step's question, its options lettered A, B, ... in the order stored, and an
instruction saying what to answer. Boxes are [x0, y0, x1, y1] in pixels of the image, numbers written as
integers where they are whole.

The stepwise file (`{split}.jsonl`): every assistant turn is the answer grounded in the step's evidence
boxes: "B. liver — evidence: lesion [10, 8, 30, 28]" (the box's label, then the box; several boxes joined
by "; "; "— evidence: none" where the step has none). Multi-choice: "A, C. x; z — evidence: ...". Box
answers: "[x0, y0, x1, y1] — evidence: ...". Short text: the text, then the evidence.

The answer-only file (`{split}.answer_only.jsonl`), for comparison: the same records, the same user
turns one per step, except that the instruction asks for the answer alone, and every assistant turn is
the answer alone ("B. liver"; a box answer is still its box, as that box is the answer): no evidence
boxes, nothing else between the answers.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from releases.package.snapshot import Box, Row, Snapshot
from releases.package.vlmevalkit import gold_value

SFT_SPLITS = ("train", "val")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
EVIDENCE = " — evidence: "
INSTRUCTIONS = {
    "single_choice": "Answer with the letter and text of the correct option",
    "yes_no": "Answer with the letter and text of the correct option",
    "multi_choice": "Answer with the letters of all correct options, then their texts",
    "box": "Answer with the bounding box as [x0, y0, x1, y1] in pixel coordinates of the image ({w}x{h})",
    "short_text": "Answer with a short phrase",
}
GROUNDED = (", then the evidence: the boxes that support it, each as its label and [x0, y0, x1, y1] in pixel "
            "coordinates of the image ({w}x{h}), or none.")
GROUNDED_BOX = ", then the evidence: the boxes that support it, each as its label and a box, or none."


def _num(v) -> int | float:
    v = float(v)
    return int(v) if v.is_integer() else v


def box_text(coords) -> str:
    return "[" + ", ".join(str(_num(c)) for c in coords) + "]"


def evidence_text(boxes: list[Box]) -> str:
    if not boxes:
        return "none"
    return "; ".join(f"{b.label} {box_text([b.x0, b.y0, b.x1, b.y1])}".strip() for b in boxes)


def _letter(row: Row, option) -> str:
    if option not in row.options:
        raise ValueError(f"row {row.id}: the gold {option!r} is not among its options {row.options!r}")
    return LETTERS[list(row.options).index(option)]


def answer_text(row: Row) -> str:
    """The step's answer alone, as the assistant writes it."""
    gold = gold_value(row)
    if row.answer_type in ("single_choice", "yes_no"):
        return f"{_letter(row, gold)}. {gold}"
    if row.answer_type == "multi_choice":
        wanted = list(gold) if isinstance(gold, (list, tuple)) else [gold]
        golds = [o for o in row.options if o in wanted]
        if not golds or len(golds) != len(wanted):
            raise ValueError(f"row {row.id}: the gold {gold!r} is not a subset of its options {row.options!r}")
        return ", ".join(_letter(row, o) for o in golds) + ". " + "; ".join(str(o) for o in golds)
    if row.answer_type == "box":
        if isinstance(gold, Box):
            return box_text([gold.x0, gold.y0, gold.x1, gold.y1])
        if isinstance(gold, dict):
            return box_text([gold[k] for k in ("x0", "y0", "x1", "y1")])
        return box_text(list(gold)[:4])
    return str(gold)


def question_text(row: Row, *, grounded: bool) -> str:
    lines = [row.question]
    if row.answer_type in ("single_choice", "yes_no", "multi_choice"):
        lines.extend(f"{LETTERS[i]}. {o}" for i, o in enumerate(row.options))
    size = {"w": row.width, "h": row.height}
    grounding = (GROUNDED_BOX if row.answer_type == "box" else GROUNDED.format(**size)) if grounded else "."
    lines.append(INSTRUCTIONS[row.answer_type].format(**size) + grounding)
    return "\n".join(lines)


def chain_record(chain: list[Row], *, grounded: bool) -> dict:
    """One chain (its clean rows, in step order) as a chat record."""
    messages, shown = [], None
    for r in chain:
        content = []
        if r.image != shown:
            content.append({"type": "image", "image": r.image})
            shown = r.image
        content.append({"type": "text", "text": question_text(r, grounded=grounded)})
        messages.append({"role": "user", "content": content})
        answer = answer_text(r) + (EVIDENCE + evidence_text(r.evidence_boxes) if grounded else "")
        messages.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
    return {"id": chain[0].chain_id, "split": chain[0].split, "n_steps": len(chain), "image": chain[0].image,
            "rows": [r.id for r in chain], "messages": messages}


def chains_in(snapshot: Snapshot, split: str) -> Iterator[list[Row]]:
    """The split's chains (clean rows only), in chain order, each in step order. Streams: the rows come in
    snapshot order (split, chain_id, step, ...), so a chain's rows are adjacent and one chain is held at a time."""
    chain: list[Row] = []
    for r in snapshot.clean_rows_in(split):
        if chain and r.chain_id != chain[0].chain_id:
            yield sorted(chain, key=lambda x: (x.step, x.id))
            chain = []
        chain.append(r)
    if chain:
        yield sorted(chain, key=lambda x: (x.step, x.id))


def _dump(record: dict) -> str:
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_sft(snapshot: Snapshot, out: Path) -> None:
    """Write `sft/{split}.jsonl` and `sft/{split}.answer_only.jsonl` for each split of SFT_SPLITS the
    release has (see the module docstring)."""
    folder = Path(out) / "sft"
    for split in SFT_SPLITS:
        if not snapshot.count_in(split):
            continue
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / f"{split}.jsonl").open("w", encoding="utf-8", newline="\n") as grounded, \
                (folder / f"{split}.answer_only.jsonl").open("w", encoding="utf-8", newline="\n") as answer_only:
            for chain in chains_in(snapshot, split):
                grounded.write(_dump(chain_record(chain, grounded=True)))
                answer_only.write(_dump(chain_record(chain, grounded=False)))
