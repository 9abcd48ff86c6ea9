"""vlmevalkit/{name}.tsv read the way VLMEvalKit reads it (pandas, then ImageBaseDataset's image references),
its answers checked, its images decoded, and its rotation groups scored the way CircularEval scores them."""
from __future__ import annotations

import base64
import dataclasses
import io
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image as PILImage

from releases.package.snapshot import Snapshot
from releases.package.vlmevalkit import CHOICE_TYPES, OFFSET, split_prompt, write_vlmevalkit
from tests.releases.factories import make_snapshot

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _write(snapshot: Snapshot, out: Path) -> Path:
    write_vlmevalkit(snapshot, out)
    return out / "vlmevalkit" / f"{snapshot.name}.tsv"


def _load_like_vlmevalkit(path: Path) -> pd.DataFrame:
    """vlmeval.smp.load (pd.read_csv(sep="\\t")), then ImageBaseDataset.__init__'s image handling: an
    image cell of at most 64 characters is another row's index whose cell holds the base64."""
    data = pd.read_csv(path, sep="\t")
    data["index"] = [str(x) for x in data["index"]]
    data["image"] = [str(x) for x in data["image"]]
    image_map = dict(zip(data["index"], data["image"]))
    for k in image_map:
        if len(image_map[k]) <= 64:
            idx = image_map[k]
            assert idx in image_map and len(image_map[idx]) > 64
            image_map[k] = image_map[idx]
    data["image"] = [image_map[k] for k in data["index"]]
    assert all(x.isdigit() for x in data["index"])
    data["index"] = [int(x) for x in data["index"]]
    return data


def _options(line) -> dict:
    """ImageMCQDataset.build_prompt's options: the letter columns that are not NaN."""
    return {c: line[c] for c in LETTERS if c in line and not pd.isna(line[c])}


def _gold(row):
    return row.answer["value"] if isinstance(row.answer, dict) else row.answer


@pytest.fixture
def snapshot(tmp_path) -> Snapshot:
    return make_snapshot(tmp_path / "src")


@pytest.fixture
def table(snapshot, tmp_path) -> pd.DataFrame:
    return _load_like_vlmevalkit(_write(snapshot, tmp_path / "out"))


def test_columns_and_one_row_per_choice_row(snapshot, table):
    choice = [r for r in snapshot.rows if r.answer_type in CHOICE_TYPES]
    assert len(table) == len(choice) > 0
    assert list(table.columns) == ["index", "image", "question", "hint", "A", "B", "C", "D", "answer", "category",
                                   "l2-category", "split", "g_index", "variant_kind", "id"]
    assert list(table["id"]) == [r.id for r in choice]                      # snapshot order
    assert table["index"].is_unique
    assert all(isinstance(i, int) for i in table["index"]) and table["g_index"].dtype.kind == "i"


def test_every_answer_letter_names_the_gold_option(snapshot, table):
    rows = {r.id: r for r in snapshot.rows}
    for _, line in table.iterrows():
        row = rows[line["id"]]
        options = _options(line)
        assert list(options.values()) == [str(o) for o in row.options]     # the options as shown, in order
        assert line["answer"] in options and options[line["answer"]] == _gold(row)
        assert line["category"] == f"{row.stage} {row.stage_name}"
        assert line["l2-category"] == row.category_name and line["split"] == row.split


def test_images_decode_to_the_rows_own_png(snapshot, table):
    rows = {r.id: r for r in snapshot.rows}
    for _, line in table.iterrows():
        row = rows[line["id"]]
        raw = base64.b64decode(line["image"], validate=True)
        assert raw == snapshot.images[row.image].source.read_bytes()   # the variant's own image (visual kinds)
        with PILImage.open(io.BytesIO(raw)) as im:
            assert im.format == "PNG" and im.size == (row.width, row.height)
    visual = table[table["variant_kind"] == "wrong_visual_cue"]
    clean = table[table["variant_kind"] == "clean"]
    assert not set(visual["image"]) & set(clean["image"])


def test_each_image_is_written_once_and_referenced_after(snapshot, tmp_path):
    raw = pd.read_csv(_write(snapshot, tmp_path / "out"), sep="\t")
    carried = [x for x in raw["image"].astype(str) if len(x) > 64]
    assert len(carried) == len(set(carried)) == len({r.image for r in snapshot.rows if r.answer_type in CHOICE_TYPES})
    seen = set()
    for index, image in zip(raw["index"], raw["image"].astype(str)):
        if len(image) <= 64:
            assert int(image) in seen                  # a reference always points back to a row already read
        seen.add(index)


def test_rotations_share_the_clean_rows_group(snapshot, table):
    by_variant = {r.variant_id: r for r in snapshot.rows}
    index_of = dict(zip(table["id"], table["index"]))
    for _, line in table.iterrows():
        if line["variant_kind"] == "option_permutation":
            parent = by_variant[[r for r in snapshot.rows if r.id == line["id"]][0].parent_variant_id]
            g = index_of[parent.id]
            assert parent.variant_kind == "clean" and line["g_index"] == g
            assert line["index"] == g + OFFSET and int(line["index"] % 1e6) == g
        else:
            assert line["index"] == line["g_index"] < OFFSET                  # rotation 0: its own group
    groups = table.groupby("g_index")
    assert all(len(set(g["question"])) == 1 for _, g in groups)


def _rotated(snapshot: Snapshot, *, drop_clean: bool = False) -> Snapshot:
    """Every circular rotation (params {"rotation": k}, as annotation's generator writes them) of the first
    item, in place of its one reversed permutation; optionally without the clean row."""
    rows, out = snapshot.rows, []
    clean = rows[0]
    assert clean.variant_kind == "clean" and clean.answer_type == "single_choice"
    for r in rows:
        if r.item_id == clean.item_id and r.variant_kind == "option_permutation":
            for k in (3, 1, 2):                               # snapshot order need not be rotation order
                shown = clean.options[k:] + clean.options[:k]
                out.append(dataclasses.replace(
                    r, id=f"{r.id}-{k}", variant_id=r.variant_id * 100 + k, options=shown,
                    variant_params={"rotation": k}, answer_letters=[LETTERS[shown.index(clean.answer)]]))
        elif not (drop_clean and r is clean):
            out.append(r)
    return dataclasses.replace(snapshot, rows=out)


def test_rotation_k_is_the_generators_rotation(snapshot, tmp_path):
    table = _load_like_vlmevalkit(_write(_rotated(snapshot), tmp_path / "out"))
    group = table[table["g_index"] == table["index"].iloc[0]].sort_values("index")
    assert list(group["index"]) == [1, 1 + OFFSET, 1 + 2 * OFFSET, 1 + 3 * OFFSET]
    assert list(group["variant_kind"]) == ["clean"] + ["option_permutation"] * 3
    assert len(set(group["answer"])) == 4                           # the gold sits under every letter once


def test_a_group_without_its_clean_row_is_kept(snapshot, tmp_path):
    table = _load_like_vlmevalkit(_write(_rotated(snapshot, drop_clean=True), tmp_path / "out"))
    perms = table[table["id"].str.startswith(snapshot.rows[0].id.rsplit(":", 1)[0] + ":")
                  & (table["variant_kind"] == "option_permutation")]
    first = perms.iloc[0]                                   # rotation 3, first in snapshot order: the main row
    assert first["id"].endswith("-3") and first["index"] == first["g_index"]
    g = first["g_index"]
    assert set(perms["g_index"]) == {g} and list(perms["index"]) == [g, g + OFFSET, g + 2 * OFFSET]


def _circular_eval(table: pd.DataFrame, prediction: dict) -> dict:
    """VLMEvalKit's mcq_circular_eval, exact matching: g_index = index % 1e6, main rows index == g_index,
    a group is a hit when every one of its rows is answered with its own letter."""
    g_index = [int(x % 1e6) for x in table["index"]]
    assert g_index == list(table["g_index"])
    hits = {}
    for idx in [i for i, g in zip(table["index"], g_index) if i == g]:
        group = table[[g == idx for g in g_index]]
        hits[idx] = all(prediction[i] == a for i, a in zip(group["index"], group["answer"]))
    return hits


def test_circular_evaluation_scores_a_group_only_when_every_rotation_is_right(table):
    perfect = dict(zip(table["index"], table["answer"]))
    hits = _circular_eval(table, perfect)
    assert all(hits.values()) and len(hits) == (table["index"] < OFFSET).sum()
    # a model that always answers the clean row's letter fails every group that has a rotation
    stuck = {i: perfect[g] for i, g in zip(table["index"], table["g_index"])}
    hits = _circular_eval(table, stuck)
    rotated = set(table.loc[table["index"] >= OFFSET, "g_index"])
    assert {g for g, hit in hits.items() if not hit} == rotated


def test_hint_is_the_cue_before_the_question(snapshot, table):
    for _, line in table.iterrows():
        if line["variant_kind"] == "misleading_hint":
            assert line["hint"].startswith("A colleague thinks the answer is ")
            assert line["question"] not in line["hint"]
        else:
            assert pd.isna(line["hint"])                       # empty cell: VLMEvalKit prints no "Hint:"


def test_split_prompt_reads_annotations_prompt_layout(snapshot):
    row = snapshot.rows[0]
    prompt = "\n".join(["Earlier in this case, the answer to \"Q\" was: spleen.",
                        "A senior colleague thinks the answer is C. kidney.", row.question,
                        *[f"{LETTERS[i]}. {o}" for i, o in enumerate(row.options)],
                        "Answer with the letter of the correct option."])
    hint, question = split_prompt(dataclasses.replace(row, prompt=prompt))
    assert question == row.question
    assert hint == ("Earlier in this case, the answer to \"Q\" was: spleen. "
                    "A senior colleague thinks the answer is C. kidney.")
    rewritten = "\n".join(["Consider the cyst in the liver.", "What is the margin of the cyst in the liver?",
                           *[f"{LETTERS[i]}. {o}" for i, o in enumerate(row.options)], "Answer with the letter."])
    assert split_prompt(dataclasses.replace(row, prompt=rewritten)) == (
        "Consider the cyst in the liver.", "What is the margin of the cyst in the liver?")
    clean = "\n".join([row.question, *[f"{LETTERS[i]}. {o}" for i, o in enumerate(row.options)], "Answer."])
    assert split_prompt(dataclasses.replace(row, prompt=clean)) == ("", row.question)


def test_only_single_choice_and_yes_no_rows(snapshot, tmp_path):
    first = snapshot.rows[0]
    multi = dataclasses.replace(first, id="multi", variant_id=-1, answer_type="multi_choice",
                                answer=["liver", "lung"], answer_letters=["A", "D"])
    table = _load_like_vlmevalkit(_write(dataclasses.replace(snapshot, rows=[*snapshot.rows, multi]),
                                         tmp_path / "out"))
    types = {r.id: r.answer_type for r in snapshot.rows}
    assert "multi" not in set(table["id"]) and {types[i] for i in table["id"]} == {"single_choice", "yes_no"}


def test_the_offset_grows_past_the_number_of_groups(snapshot, tmp_path, monkeypatch):
    import releases.package.vlmevalkit as module

    monkeypatch.setattr(module, "OFFSET", 10)                 # 96 rows, 72 groups: offset 100, g_index authoritative
    table = _load_like_vlmevalkit(_write(snapshot, tmp_path / "out"))
    rotated = table[table["variant_kind"] == "option_permutation"]
    assert table["g_index"].max() == 72 and list(rotated["index"]) == list(rotated["g_index"] + 100)


def test_awkward_text_round_trips_and_matches_pandas_to_csv(snapshot, tmp_path):
    first = snapshot.rows[0]
    odd = dataclasses.replace(first, question='Is the "mass"\tnear the liver?\nLook closely.',
                              prompt='Is the "mass"\tnear the liver?\nLook closely.',
                              options=["liver, left lobe", 'a "quoted" one', "naïve — ü", "lung"],
                              answer='a "quoted" one', answer_letters=["B"])
    snap = dataclasses.replace(snapshot, rows=[odd, *snapshot.rows[1:]])
    path = _write(snap, tmp_path / "out")
    table = _load_like_vlmevalkit(path)
    line = table.iloc[0]
    assert line["question"] == odd.question and _options(line) == dict(zip("ABCD", odd.options))
    assert line["answer"] == "B"
    # byte for byte what VLMEvalKit-style pandas writing produces from the same cells
    frame = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    frame["index"] = frame["index"].astype(int)
    frame["g_index"] = frame["g_index"].astype(int)
    assert frame.to_csv(sep="\t", index=False, lineterminator="\n").encode() == path.read_bytes()


def test_text_that_pandas_reads_as_nan_is_refused(snapshot, tmp_path):
    first = snapshot.rows[0]
    bad = dataclasses.replace(first, options=["None", "spleen", "kidney", "lung"], answer="spleen",
                              answer_letters=["B"])
    with pytest.raises(ValueError, match="NaN"):
        _write(dataclasses.replace(snapshot, rows=[bad, *snapshot.rows[1:]]), tmp_path / "out")


def test_a_gold_outside_the_options_or_a_wrong_letter_is_refused(snapshot, tmp_path):
    first = snapshot.rows[0]
    with pytest.raises(ValueError, match="not among"):
        _write(dataclasses.replace(snapshot, rows=[dataclasses.replace(first, answer="heart")]), tmp_path / "a")
    with pytest.raises(ValueError, match="disagree"):
        _write(dataclasses.replace(snapshot, rows=[dataclasses.replace(first, answer_letters=["D"])]), tmp_path / "b")


def test_a_variants_whole_expected_answer_record_is_read_for_its_value(snapshot, tmp_path):
    rows = [dataclasses.replace(r, answer={"value": r.answer, "letter": (r.answer_letters or [None])[0]})
            for r in snapshot.rows]
    a = _write(snapshot, tmp_path / "a").read_bytes()
    assert _write(dataclasses.replace(snapshot, rows=rows), tmp_path / "b").read_bytes() == a


def test_deterministic_bytes(tmp_path):
    a = _write(make_snapshot(tmp_path / "one"), tmp_path / "a").read_bytes()
    b = _write(make_snapshot(tmp_path / "two"), tmp_path / "b").read_bytes()
    assert a == b and a.endswith(b"\n") and b"\r" not in a
