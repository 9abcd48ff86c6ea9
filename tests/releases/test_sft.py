"""sft/{split}.jsonl (stepwise, grounded in the evidence boxes) and sft/{split}.answer_only.jsonl: one chat
record per chain of the train (and val) split, steps in order, the right answers, deterministic bytes."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from releases.package.sft import EVIDENCE, SFT_SPLITS, answer_text, write_sft
from releases.package.snapshot import Box, Snapshot
from tests.releases.factories import make_snapshot

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _read(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") and "\r" not in text
    records = [json.loads(line) for line in text.splitlines()]
    for line, record in zip(text.splitlines(), records):        # canonical: sorted keys, compact, UTF-8
        assert line == json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return records


def _chains(snapshot: Snapshot, split: str) -> dict[int, list]:
    chains: dict[int, list] = {}
    for r in snapshot.rows:
        if r.split == split and r.variant_kind == "clean":
            chains.setdefault(r.chain_id, []).append(r)
    return {c: sorted(rows, key=lambda r: r.step) for c, rows in sorted(chains.items())}


def _text(message: dict) -> str:
    return "".join(p["text"] for p in message["content"] if p["type"] == "text")


def _box(coords) -> str:
    return "[" + ", ".join(str(int(c)) if float(c).is_integer() else str(c) for c in coords) + "]"


@pytest.fixture
def snapshot(tmp_path) -> Snapshot:
    return make_snapshot(tmp_path / "src")


@pytest.fixture
def out(snapshot, tmp_path) -> Path:
    write_sft(snapshot, tmp_path / "out")
    return tmp_path / "out" / "sft"


def test_files_for_train_and_val_only(out):
    assert SFT_SPLITS == ("train", "val")
    assert sorted(p.name for p in out.iterdir()) == ["train.answer_only.jsonl", "train.jsonl",
                                                     "val.answer_only.jsonl", "val.jsonl"]


@pytest.mark.parametrize("split", SFT_SPLITS)
def test_one_record_per_chain_with_its_steps_in_order(snapshot, out, split):
    chains = _chains(snapshot, split)
    records = _read(out / f"{split}.jsonl")
    assert [r["id"] for r in records] == list(chains) and chains
    for record in records:
        rows = chains[record["id"]]
        assert record["split"] == split and record["n_steps"] == len(rows) == 5
        assert record["rows"] == [r.id for r in rows]                       # clean variants, step order
        messages = record["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"] * len(rows)
        for row, user in zip(rows, messages[::2]):
            assert _text(user).split("\n")[0] == row.question
            shown = [line for line in _text(user).split("\n") if re.match(r"[A-Z]\. ", line)]
            assert shown == [f"{LETTERS[i]}. {o}" for i, o in enumerate(row.options)]


def test_the_image_opens_the_first_user_turn(snapshot, out):
    for record in _read(out / "train.jsonl"):
        first = record["messages"][0]["content"]
        assert first[0] == {"type": "image", "image": record["image"]} and first[1]["type"] == "text"
        assert record["image"] in snapshot.images and record["image"].startswith("images/")
        later = [p for m in record["messages"][1:] for p in m["content"] if p["type"] == "image"]
        assert later == []                                                 # one image per chain here


def test_each_assistant_turn_is_the_answer_and_its_evidence_boxes(snapshot, out):
    for record in _read(out / "train.jsonl"):
        rows = _chains(snapshot, "train")[record["id"]]
        for row, reply in zip(rows, record["messages"][1::2]):
            answer, evidence = _text(reply).split(EVIDENCE)
            if row.answer_type in ("single_choice", "yes_no"):
                letter, text = answer.split(". ", 1)
                assert row.options[LETTERS.index(letter)] == text == row.answer
            else:
                assert row.answer_type == "box" and answer == _box(row.answer)
            boxes = [f"{b.label} {_box([b.x0, b.y0, b.x1, b.y1])}" for b in row.evidence_boxes]
            assert evidence == ("; ".join(boxes) if boxes else "none")
            assert "[x0, y0, x1, y1]" in _text(record["messages"][2 * rows.index(row)])


def test_answer_only_has_the_same_questions_and_answers_without_boxes(snapshot, out):
    for split in SFT_SPLITS:
        grounded, plain = _read(out / f"{split}.jsonl"), _read(out / f"{split}.answer_only.jsonl")
        assert [r["id"] for r in plain] == [r["id"] for r in grounded]
        for g, p in zip(grounded, plain):
            assert {k: v for k, v in g.items() if k != "messages"} == {k: v for k, v in p.items() if k != "messages"}
            rows = _chains(snapshot, split)[p["id"]]
            for row, gu, pu, ga, pa in zip(rows, g["messages"][::2], p["messages"][::2], g["messages"][1::2],
                                           p["messages"][1::2]):
                assert _text(gu).split("\n")[:-1] == _text(pu).split("\n")[:-1]     # same question and options
                assert [x for x in gu["content"] if x["type"] == "image"] == \
                    [x for x in pu["content"] if x["type"] == "image"]
                assert _text(pa) == _text(ga).split(EVIDENCE)[0] == answer_text(row)
                assert "evidence" not in _text(pa) and "evidence" not in _text(pu)
                if row.answer_type != "box":
                    assert "[" not in _text(pa)


def test_answer_text_for_every_answer_type(snapshot):
    row = snapshot.rows[0]
    multi = dataclasses.replace(row, answer_type="multi_choice", answer=["liver", "lung"])
    assert answer_text(multi) == "A, D. liver; lung"
    assert answer_text(dataclasses.replace(row, answer_type="short_text", options=[], answer="ring enhancing")) \
        == "ring enhancing"
    assert answer_text(dataclasses.replace(row, answer_type="box", options=[], answer=[1.5, 2.0, 10.0, 12.25])) \
        == "[1.5, 2, 10, 12.25]"
    assert answer_text(dataclasses.replace(row, answer_type="box", options=[], answer=Box(1, 2, 3, 4, "x"))) \
        == "[1, 2, 3, 4]"
    # a variant's whole expected-answer record, as annotation stores it, is read for its value
    assert answer_text(dataclasses.replace(row, answer={"value": "lung", "letter": "D"})) == "D. lung"
    with pytest.raises(ValueError, match="not among"):
        answer_text(dataclasses.replace(row, answer="heart"))


def test_perturbed_variants_and_the_test_split_stay_out(snapshot, out):
    ids = {i for split in SFT_SPLITS for r in _read(out / f"{split}.jsonl") for i in r["rows"]}
    kinds = {r.variant_kind for r in snapshot.rows if r.id in ids}
    assert kinds == {"clean"} and not {r.id for r in snapshot.rows_in("test")} & ids


def test_no_file_for_a_split_the_release_lacks(snapshot, tmp_path):
    only_test = dataclasses.replace(snapshot, rows=snapshot.rows_in("test"))
    write_sft(only_test, tmp_path / "out")
    assert not (tmp_path / "out" / "sft").exists()


def test_deterministic_bytes(tmp_path):
    write_sft(make_snapshot(tmp_path / "one"), tmp_path / "a")
    write_sft(make_snapshot(tmp_path / "two"), tmp_path / "b")
    names = sorted(p.name for p in (tmp_path / "a" / "sft").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b" / "sft").iterdir())
    for name in names:
        assert (tmp_path / "a" / "sft" / name).read_bytes() == (tmp_path / "b" / "sft" / name).read_bytes()
