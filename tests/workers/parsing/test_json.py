"""Issue 13: JSON answers as guided decoding produces them (method "json"); malformed JSON falls back."""
from __future__ import annotations

import pytest

from tests.workers.parsing.cases import ABSTAINED, ANSWERED, UNPARSEABLE, case, check
from workers.parsing import parse_answer, parse_answer_with_box

ORGANS = ["liver", "spleen", "pancreas", "left kidney"]
YN = ["yes", "no"]

SINGLE = [
    case("answer-letter", '{"answer": "B"}', ORGANS, None, ANSWERED, "B", "json"),
    case("answer-text", '{"answer": "liver"}', ORGANS, None, ANSWERED, "A", "json"),
    case("answer-letter-text", '{"answer": "B. spleen"}', ORGANS, None, ANSWERED, "B", "json"),
    case("answer-list-one", '{"answer": ["C"]}', ORGANS, None, ANSWERED, "C", "json"),
    case("answer-list-two", '{"answer": ["A", "C"]}', ORGANS, None, UNPARSEABLE, None, "ambiguous"),
    case("choice", '{"choice": "(C)"}', ORGANS, None, ANSWERED, "C", "json"),
    case("option", '{"option": "D"}', ORGANS, None, ANSWERED, "D", "json"),
    case("letter", '{"letter": "a"}', ORGANS, None, ANSWERED, "A", "json"),
    case("selected", '{"selected": "pancreas"}', ORGANS, None, ANSWERED, "C", "json"),
    case("final-answer", '{"reasoning": "dark lesion in the spleen", "final_answer": "B"}', ORGANS, None,
         ANSWERED, "B", "json"),
    case("key-case-and-space", '{"Final Answer": "B"}', ORGANS, None, ANSWERED, "B", "json"),
    case("nested", '{"response": {"answer": "D"}}', ORGANS, None, ANSWERED, "D", "json"),
    case("array-of-object", '[{"answer": "A"}]', ORGANS, None, ANSWERED, "A", "json"),
    case("bare-list-text", '["spleen"]', ORGANS, None, ANSWERED, "B", "json"),
    case("bare-list-letter", '["B"]', ORGANS, None, ANSWERED, "B", "json"),
    case("fenced", '```json\n{"answer": "C"}\n```', ORGANS, None, ANSWERED, "C", "json"),
    case("fenced-with-prose", 'Here is my answer:\n```json\n{"answer": "spleen"}\n```\nI chose it because the '
         "lesion is in the spleen.", ORGANS, None, ANSWERED, "B", "json"),
    case("trailing-prose", '{"answer": "D"} - the kidney is enlarged.', ORGANS, None, ANSWERED, "D", "json"),
    case("single-quotes", "{'answer': 'B'}", ORGANS, None, ANSWERED, "B", "json"),
    case("yes-no-word", '{"answer": "no"}', YN, None, ANSWERED, "B", "json"),
    case("yes-no-bool", '{"answer": true}', YN, None, ANSWERED, "A", "json"),
    case("negated", '{"answer": "not spleen"}', ORGANS, None, UNPARSEABLE, None, "no_match"),
    case("abstain", '{"answer": "cannot be determined"}', ORGANS, None, ABSTAINED, None, "abstain_phrase"),
    case("out-of-range", '{"answer": "F"}', ORGANS, None, UNPARSEABLE, None, "letter_out_of_range"),
    case("number-not-index", '{"answer": 2}', ORGANS, None, UNPARSEABLE, None, "no_match"),
    case("null", '{"answer": null}', ORGANS, None, UNPARSEABLE, None, "no_match"),
    case("names-nothing", '{"answer": "the lesion is dark"}', ORGANS, None, UNPARSEABLE, None, "no_match"),
    case("echoed-options-ignored", '{"options": ["liver", "spleen"]}\nAnswer: B', ORGANS, None, ANSWERED, "B",
         "answer_phrase"),
    case("no-answer-key-falls-back", '{"reason": "dark"}\nAnswer: C', ORGANS, None, ANSWERED, "C", "answer_phrase"),
    case("malformed-falls-back", '{"answer": "B"', ORGANS, None, UNPARSEABLE, None, "no_match"),
    case("malformed-then-phrase", '{"answer": B}\nAnswer: B', ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("box-json-is-not-a-choice", '[{"bbox_2d": [10, 20, 30, 40], "label": "lesion"}]', ORGANS, None,
         UNPARSEABLE, None, "no_match"),
    case("letter-in-brackets-not-json", "[C]", ORGANS, None, ANSWERED, "C", "letter_only"),
]

MULTI = [
    case("answers-letters", '{"answers": ["A", "C"]}', ORGANS, None, ANSWERED, ["A", "C"], "json"),
    case("answer-texts", '{"answer": ["liver", "pancreas"]}', ORGANS, None, ANSWERED, ["A", "C"], "json"),
    case("bare-texts", '["spleen", "liver"]', ORGANS, None, ANSWERED, ["A", "B"], "json"),
    case("bare-letters", '["A", "D"]', ORGANS, None, ANSWERED, ["A", "D"], "json"),
    case("object-holding-list", '{"findings": ["left kidney", "liver"]}', ORGANS, None, ANSWERED, ["A", "D"],
         "json"),
    case("answer-string", '{"answer": "B, D"}', ORGANS, None, ANSWERED, ["B", "D"], "json"),
    case("empty-under-key", '{"answers": []}', ORGANS, None, ANSWERED, [], "json"),
    case("unknown-item", '{"answers": ["liver", "heart"]}', ORGANS, None, UNPARSEABLE, None, "no_match"),
    case("unknown-items-without-key", '["heart", "lung"]', ORGANS, None, UNPARSEABLE, None, "no_match"),
    case("out-of-range", '{"answers": ["A", "G"]}', ORGANS, None, UNPARSEABLE, None, "letter_out_of_range"),
    case("fenced", '```json\n{"selected_options": ["B", "C"]}\n```', ORGANS, None, ANSWERED, ["B", "C"], "json"),
]


@pytest.mark.parametrize(("text", "options", "kwargs", "outcome", "value", "method"), SINGLE)
def test_json_single_choice(text, options, kwargs, outcome, value, method):
    check(text, options, kwargs, outcome, value, method, "yes_no" if options == YN else "single_choice")


@pytest.mark.parametrize(("text", "options", "kwargs", "outcome", "value", "method"), MULTI)
def test_json_multi_choice(text, options, kwargs, outcome, value, method):
    check(text, options, kwargs, outcome, value, method, "multi_choice")


def test_joint_answer_and_box_in_one_object():
    choice, box = parse_answer_with_box('{"answer": "B", "bbox_2d": [10, 20, 50, 60]}', answer_type="single_choice",
                                        options=ORGANS, image_size=(100, 100))
    assert (choice.outcome, choice.value, choice.method) == ("answered", "B", "json")
    assert (box.value, box.method) == ([10.0, 20.0, 50.0, 60.0], "box_json")


def test_short_text_json():
    result = parse_answer('{"answer": "Left lobe"}', answer_type="short_text")
    assert (result.value, result.method) == ("left lobe", "json")


@pytest.mark.parametrize("text", ["{" * 5000, "[" * 100_000, '{"answer": ' * 3000, "[1, " * 25_000,
                                  '{"a": [' + "1," * 20_000 + "]}", "{'answer': [" * 500,
                                  '{"answer": "' + "x" * 50_000])
def test_malformed_or_huge_json_never_raises(text):
    for answer_type in ("single_choice", "multi_choice", "short_text"):
        result = parse_answer(text, answer_type=answer_type, options=ORGANS)
        assert "internal parser error" not in result.detail
