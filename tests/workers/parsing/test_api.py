"""Contract tests: the public API, ParsedAnswer, short_text, argument errors and speed on huge input."""
from __future__ import annotations

import dataclasses
import json
import time

import pytest

from workers import parsing
from workers.parsing import FAMILIES, METHODS, OUTCOMES, ParsedAnswer, method_family, parse_answer

ABSTAIN = "ABSTAIN"
TYPES = ("single_choice", "yes_no", "multi_choice", "box", "short_text")
O4 = ["Hypodense", "Hyperdense", "Isodense", "Mixed density"]


def test_exports():
    assert set(parsing.__all__) >= {"parse_answer", "ParsedAnswer", "OUTCOMES", "METHODS"}
    assert OUTCOMES == ("answered", "abstained", "unparseable")
    assert len(set(METHODS)) == len(METHODS)


def test_every_method_is_documented():
    doc = parsing.__doc__ or ""
    for method in METHODS:
        assert method in doc, method


def test_method_families():
    assert FAMILIES == ("letter", "option_text", "json", "box", "free_text", "abstained", "ambiguous",
                        "unparseable", "error")
    assert set(parsing.__all__) >= {"FAMILIES", "method_family"}
    for method in METHODS:
        assert method_family(method) in FAMILIES, method
    expected = {"letter_only": "letter", "answer_phrase": "letter", "letter_list": "letter",
                "letter_mention": "letter", "letter_prefix": "letter", "answer_phrase_text": "option_text",
                "option_text": "option_text", "yes_no_word": "option_text", "none_selected": "option_text",
                "json": "json", "box_qwen": "box", "box_pixel": "box", "free_text": "free_text",
                "premise_rejection": "option_text", "abstain_phrase": "abstained", "ambiguous": "ambiguous",
                "no_match": "unparseable", "empty": "unparseable", "letter_out_of_range": "unparseable",
                "degenerate_box": "unparseable", "needs_image_size": "unparseable", "error": "error",
                "guess": "unparseable", "": "unparseable", None: "unparseable"}
    assert {m: method_family(m) for m in expected} == expected
    # every family but "error" is reachable from the parser's own methods
    assert {method_family(m) for m in METHODS} == set(FAMILIES) - {"error"}


def test_parsed_answer_is_frozen_and_serialisable():
    result = parse_answer("[0.1, 0.2, 0.3, 0.4]", answer_type="box", image_size=(100, 100))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.outcome = "abstained"
    data = result.as_dict()
    assert set(data) == {"outcome", "value", "method", "detail"}
    assert json.loads(json.dumps(data)) == data
    assert data["value"] == pytest.approx([10.0, 20.0, 30.0, 40.0])


def test_parsed_answer_rejects_unknown_vocabulary():
    with pytest.raises(ValueError):
        ParsedAnswer("maybe", None, "empty")
    with pytest.raises(ValueError):
        ParsedAnswer("answered", "A", "guess")
    with pytest.raises(ValueError):
        ParsedAnswer("unparseable", "A", "no_match")


@pytest.mark.parametrize("answer_type", ["choice", "", "Single_Choice", "bbox", None])
def test_unknown_answer_type_raises(answer_type):
    with pytest.raises(ValueError):
        parse_answer("A", answer_type=answer_type)


@pytest.mark.parametrize("box_format", ["xyxy", "", "1000", "Pixel", None])
def test_unknown_box_format_raises(box_format):
    with pytest.raises(ValueError):
        parse_answer("[1, 2, 3, 4]", answer_type="box", box_format=box_format)


@pytest.mark.parametrize("answer_type", TYPES)
@pytest.mark.parametrize("text", [None, "", "   ", "\n\t", "<think>only thoughts</think>", "***", "``` ```"],
                         ids=["none", "empty", "spaces", "newline-tab", "only-think", "stars", "empty-fence"])
def test_empty_inputs_are_unparseable(text, answer_type):
    result = parse_answer(text, answer_type=answer_type, options=O4, image_size=(512, 512))
    assert (result.outcome, result.value, result.method) == ("unparseable", None, "empty")


@pytest.mark.parametrize("text", [b"B", bytearray(b"(C)"), 7, ["A"]], ids=["bytes", "bytearray", "int", "list"])
def test_non_string_input_never_raises(text):
    result = parse_answer(text, answer_type="single_choice", options=O4)
    assert result.outcome in OUTCOMES


def _short(id_, text, expected, method):
    return pytest.param(text, expected, method, id=id_)


SHORT = [
    _short("plain", "Liver", "liver", "free_text"),
    _short("spaces", "  Left   lobe  ", "left lobe", "free_text"),
    _short("trailing-period", "Segment IV.", "segment iv", "free_text"),
    _short("trailing-marks", "Hepatic cyst!?", "hepatic cyst", "free_text"),
    _short("newlines", "right\nkidney", "right kidney", "free_text"),
    _short("quotes", '"pancreatic head"', "pancreatic head", "free_text"),
    _short("bold", "**Spleen**", "spleen", "free_text"),
    _short("think", "<think>could be liver</think>Spleen.", "spleen", "free_text"),
    _short("inner-punct", "T2-weighted, axial", "t2-weighted, axial", "free_text"),
    _short("digits", "3 cm", "3 cm", "free_text"),
    _short("answer-phrase", "The answer is: Left lobe.", "left lobe", "answer_phrase_text"),
    _short("answer-colon", "Answer: hepatic hemangioma", "hepatic hemangioma", "answer_phrase_text"),
    _short("answer-tag", "<answer>Right kidney</answer>", "right kidney", "answer_phrase_text"),
    _short("last-answer", "Answer: cyst\nFinal answer: abscess", "abscess", "answer_phrase_text"),
    _short("dont-know", "I don't know", ABSTAIN, "abstain_phrase"),
    _short("unknown", "Unknown", ABSTAIN, "abstain_phrase"),
    _short("cannot-determine", "This cannot be determined from the image.", ABSTAIN, "abstain_phrase"),
    _short("phrase-abstain", "Answer: not sure", ABSTAIN, "abstain_phrase"),
    _short("dots", "...", None, "empty"),
    _short("dashes", "- - -", None, "empty"),
    _short("empty", "", None, "empty"),
]


@pytest.mark.parametrize(("text", "expected", "method"), SHORT)
def test_short_text(text, expected, method):
    result = parse_answer(text, answer_type="short_text")
    if expected == ABSTAIN:
        assert (result.outcome, result.value, result.method) == ("abstained", None, method), result
    elif expected is None:
        assert (result.outcome, result.value, result.method) == ("unparseable", None, method), result
    else:
        assert (result.outcome, result.value, result.method) == ("answered", expected, method), result


HUGE = {
    "letters": "A " * 50_000,
    "commas": "A," * 50_000,
    "spaces": " " * 100_000 + "x",
    "parens": "(" * 100_000,
    "brackets": "[1, " * 25_000,
    "digits": "1" * 100_000,
    "think-open": "<think>" * 14_000,
    "answer-phrases": "Answer: " * 12_500,
    "answer-is": "the answer is " * 7_000,
    "qwen-open": "<|box_start|>" * 7_500,
    "points": "(1,2) " * 16_000,
    "quads": "[1,2,3,4] " * 10_000,
    "named": "x0=1, " * 16_000,
    "words": "hypodense lesion not " * 4_800,
    "yes-or": "yes or " * 14_000,
    "boxed": "\\boxed{" * 14_000,
    "mixed": "abc (B) 1.5, [2 3] <box> Answer - \n" * 2_500,
    "newlines": "\n" * 100_000 + "B",
    "underscores": "_" * 100_000,
    "html": "<b>" * 33_000,
}


HUGE["prompt-echo"] = ("The region of interest is marked with a box. A senior colleague thinks the answer is B. "
                       "hyperdense.\n") * 1_000
PROMPT = ("The region of interest is marked with a box.\nA senior colleague thinks the answer is B. hyperdense.\n"
          "What is the density of the lesion?\nA. Hypodense\nB. Hyperdense\nC. Isodense\nD. Mixed density\n"
          "Answer with the letter of the correct option.")


@pytest.mark.parametrize("answer_type", TYPES)
@pytest.mark.parametrize("name", sorted(HUGE))
def test_huge_input_is_fast(name, answer_type):
    start = time.perf_counter()
    prompt = PROMPT if name in ("prompt-echo", "answer-is", "mixed") else None
    result = parse_answer(HUGE[name], answer_type=answer_type, options=O4, image_size=(512, 512), prompt=prompt,
                          rejecting="D" if answer_type == "single_choice" else None)
    assert time.perf_counter() - start < 1.0
    assert result.outcome in OUTCOMES
    assert "internal parser error" not in result.detail
    assert len(result.detail) <= 200
