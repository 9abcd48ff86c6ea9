"""Joint answer + box items (`ItemFacts.answer_with_box`): every variant asks for the option letter
and the lesion's box, and carries the box a grounded answer must hit (pure Python: no database)."""
from __future__ import annotations

import pytest

from annotation.chains.types import BoxFact, ImageFacts, ItemFacts
from annotation.variants import generate_variants
from annotation.variants.prompt import JOINT_INSTRUCTION, format_prompt

NODULE = BoxFact(id=11, finding_id=1, kind="lesion", label="nodule", xyxy=(60.0, 50.0, 90.0, 80.0),
                 attributes={"organ": "liver"})
CYST = BoxFact(id=12, finding_id=5, kind="lesion", label="cyst", xyxy=(30.0, 100.0, 44.0, 114.0),
               attributes={"organ": "liver"})
LIVER = BoxFact(id=21, finding_id=2, kind="anatomy", label="liver", xyxy=(20.0, 30.0, 120.0, 130.0),
                attributes={"organ": "liver"})
SPLEEN = BoxFact(id=22, finding_id=3, kind="anatomy", label="spleen", xyxy=(160.0, 40.0, 220.0, 120.0),
                 attributes={"organ": "spleen"})
IMAGE = ImageFacts(image_id=7, width=320, height=256, modality="CT", body_region="ABDOMEN",
                   boxes=(NODULE, CYST, LIVER, SPLEEN))
JOINT_TEXT = ("Answer with the letter of the correct option and the box around the lesion as (x0, y0, x1, y1) "
              "in pixel coordinates of the image (320x256).")
INDEX_BOX = [60.0, 50.0, 90.0, 80.0]


def joint_item(**kw) -> ItemFacts:
    base = dict(item_id=400, stage="S3", category="margin", answer_type="single_choice",
                question="How would you describe the margin of the largest lesion?",
                options=["well-defined", "ill-defined", "spiculated"], gold="well-defined", image=IMAGE,
                evidence=(NODULE, LIVER), swap_image_ids=(8, 9), answer_with_box=True)
    base.update(kw)
    return ItemFacts(**base)


def test_format_prompt_asks_for_the_letter_and_the_box():
    text = format_prompt("Q?", ["a", "b"], answer_type="single_choice", image_size=(320, 256), with_box=True)
    assert text == "Q?\nA. a\nB. b\n" + JOINT_TEXT
    assert JOINT_INSTRUCTION.format(w=320, h=256) == JOINT_TEXT
    prompt = format_prompt("Yes?", ["yes", "no"], answer_type="yes_no", image_size=(320, 256), with_box=True)
    assert prompt.endswith(JOINT_TEXT)
    # without with_box the instruction is unchanged
    assert format_prompt("Q?", ["a", "b"], answer_type="single_choice").endswith(
        "Answer with the letter of the correct option.")
    with pytest.raises(ValueError, match="image_size"):
        format_prompt("Q?", ["a", "b"], answer_type="single_choice", with_box=True)
    for answer_type in ("multi_choice", "box", "short_text"):
        with pytest.raises(ValueError, match="single_choice or yes_no"):
            format_prompt("Q?", ["a", "b"], answer_type=answer_type, image_size=(320, 256), with_box=True)


def test_every_variant_of_a_joint_item_asks_for_the_box_and_carries_the_evidence_box():
    specs = generate_variants(joint_item(), seed=0)
    kinds = {s.kind for s in specs}
    assert {"clean", "misleading_hint", "false_premise", "true_premise", "option_permutation", "correct_visual_cue",
            "wrong_visual_cue", "box_dose_response", "image_ablation"} <= kinds
    for s in specs:
        assert s.prompt.endswith(JOINT_TEXT), s.kind
        assert s.expected_answer["answer_with_box"] is True
        if s.kind == "false_premise":
            assert s.expected_answer["evidence_box"] is None        # the named lesion does not exist
        else:
            assert s.expected_answer["evidence_box"] == INDEX_BOX, s.kind
    clean = specs[0]
    assert clean.expected_answer == {"value": "well-defined", "letter": "A", "answer_with_box": True,
                                     "evidence_box": INDEX_BOX}


def test_visual_and_ablation_variants_keep_the_true_lesion_box():
    specs = generate_variants(joint_item(), seed=0)
    for s in specs:
        if s.kind in ("wrong_visual_cue", "box_dose_response"):
            drawn = s.image_recipe["draw"][0]["box"]
            if s.params.get("cue") != "mislabeled":
                assert drawn != [int(v) for v in INDEX_BOX]          # the cue moved ...
            assert s.expected_answer["evidence_box"] == INDEX_BOX   # ... the box to find did not
    ablations = {s.params["ablation"]: s for s in specs if s.kind == "image_ablation"}
    assert set(ablations) == {"blank", "noise", "swap"}
    assert all(s.expected_answer["evidence_box"] == INDEX_BOX for s in ablations.values())


def test_true_and_false_premise_prompts_end_the_same_way():
    specs = generate_variants(joint_item(), seed=3, kinds=["false_premise", "true_premise"])
    false, true = specs[1], specs[2]
    assert false.prompt.splitlines()[-1] == true.prompt.splitlines()[-1] == JOINT_TEXT
    assert true.expected_answer["evidence_box"] == INDEX_BOX and true.expected_answer["rejects_premise"] is False


def test_a_yes_no_joint_item_is_supported():
    item = joint_item(category="report-verification", stage="S4", answer_type="yes_no",
                      question='Is this report statement correct: "The largest lesion has a well-defined margin"?',
                      options=["yes", "no"], gold="yes")
    specs = generate_variants(item, seed=0)
    assert all(s.prompt.endswith(JOINT_TEXT) for s in specs)
    assert {s.expected_answer["evidence_box"].__repr__() for s in specs} == {repr(INDEX_BOX)}


def test_items_without_the_flag_are_unchanged():
    specs = generate_variants(joint_item(answer_with_box=False), seed=0)
    assert all("evidence_box" not in s.expected_answer and "answer_with_box" not in s.expected_answer for s in specs)
    assert specs[0].prompt.endswith("Answer with the letter of the correct option.")


def test_a_joint_item_needs_a_lesion_and_a_choice_answer():
    with pytest.raises(ValueError, match="needs a lesion"):
        generate_variants(joint_item(evidence=(LIVER,)), seed=0)
    with pytest.raises(ValueError, match="single_choice or yes_no"):
        generate_variants(joint_item(answer_type="multi_choice", gold=["well-defined"]), seed=0)
