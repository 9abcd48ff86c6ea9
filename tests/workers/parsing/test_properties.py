"""Hypothesis property tests: parse_answer never raises, respects its invariants and round-trips."""
from __future__ import annotations

import os
import string

from hypothesis import HealthCheck, given, settings, strategies as st

from workers.parsing import METHODS, OUTCOMES, parse_answer

TYPES = ("single_choice", "yes_no", "multi_choice", "box", "short_text")
LETTERS = string.ascii_uppercase
# Derandomised so CI is reproducible; set PARSING_HYPOTHESIS_EXAMPLES=5000 (and optionally
# PARSING_HYPOTHESIS_RANDOM=1) for a deeper local search.
SETTINGS = settings(max_examples=int(os.environ.get("PARSING_HYPOTHESIS_EXAMPLES", "100")), deadline=None,
                    database=None, derandomize=not os.environ.get("PARSING_HYPOTHESIS_RANDOM"),
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

WORD = st.from_regex(r"[a-z]{2,10}", fullmatch=True)
OPTION_TEXT = st.lists(WORD, min_size=1, max_size=3).map(" ".join)


def _distinct(texts: list[str]) -> bool:
    return len({t.lower() for t in texts}) == len(texts)


OPTIONS = st.lists(OPTION_TEXT, min_size=2, max_size=8).filter(_distinct)
ANY_OPTIONS = st.one_of(OPTIONS, st.just(["yes", "no"]), st.just(["no", "yes"]), st.just([]),
                        st.lists(st.text(max_size=12), max_size=6))
SIZES = st.one_of(st.none(), st.tuples(st.integers(-5, 5000), st.integers(-5, 5000)), st.just((None, None)))
JUNK = st.one_of(
    st.text(max_size=300),
    st.text(alphabet="AB()[]{}<>.,:;-/ \n\tabcxyz0123456789|_*`'\"", max_size=200),
    st.lists(st.sampled_from(["Answer:", "The answer is", "(B)", "A.", "option C", "yes", "no", "not sure", "none",
                              "[1, 2, 3, 4]", "<|box_start|>(1,2),(3,4)<|box_end|>", "<think>", "</think>",
                              "0.5", "\n", " or ", ", ", "**", "actually", "```", "\\boxed{", "}", "x0=1"]),
             max_size=30).map(" ".join),
)


def _check_invariants(result, answer_type: str, options) -> None:
    assert result.outcome in OUTCOMES
    assert result.method in METHODS
    assert isinstance(result.detail, str) and "internal parser error" not in result.detail
    if result.outcome != "answered":
        assert result.value is None
        return
    count = len(options) if options else 26
    in_range = LETTERS[: min(count, 26)]
    if answer_type in ("single_choice", "yes_no"):
        assert isinstance(result.value, str) and len(result.value) == 1 and result.value in in_range
    elif answer_type == "multi_choice":
        assert result.value == sorted(set(result.value))
        assert all(v in in_range for v in result.value)
    elif answer_type == "box":
        x0, y0, x1, y1 = result.value
        assert all(isinstance(v, float) for v in result.value)
        assert x0 < x1 and y0 < y1
    else:
        assert isinstance(result.value, str) and result.value.strip() == result.value and result.value


@SETTINGS
@given(text=JUNK, answer_type=st.sampled_from(TYPES), options=ANY_OPTIONS, size=SIZES,
       box_format=st.sampled_from(("auto", "pixel", "unit", "norm1000")))
def test_never_raises_and_keeps_invariants(text, answer_type, options, size, box_format):
    result = parse_answer(text, answer_type=answer_type, options=options, image_size=size, box_format=box_format)
    _check_invariants(result, answer_type, options)
    assert result.as_dict()["outcome"] == result.outcome


@SETTINGS
@given(text=JUNK, answer_type=st.sampled_from(TYPES), options=ANY_OPTIONS, size=SIZES)
def test_deterministic(text, answer_type, options, size):
    first = parse_answer(text, answer_type=answer_type, options=options, image_size=size)
    parse_answer("unrelated (C) [1, 2, 3, 4]", answer_type=answer_type, options=options, image_size=size)
    assert parse_answer(text, answer_type=answer_type, options=options, image_size=size) == first


PUNCT = string.whitespace + string.punctuation + "–—…“”‘’«»¿¡·•"


@SETTINGS
@given(text=st.text(alphabet=PUNCT, max_size=60), answer_type=st.sampled_from(TYPES), options=ANY_OPTIONS)
def test_whitespace_and_punctuation_are_never_answers(text, answer_type, options):
    result = parse_answer(text, answer_type=answer_type, options=options, image_size=(512, 512))
    assert result.outcome != "answered"


@st.composite
def letter_cases(draw):
    options = draw(OPTIONS)
    i = draw(st.integers(0, len(options) - 1))
    return options, i, LETTERS[i]


@SETTINGS
@given(case=letter_cases(), template=st.sampled_from(["{L}", "({L})", "Answer: {L}", "{L}. {T}", "[{L}]", "{L})",
                                                      "The correct answer is ({L}).", "**Answer:** {L}",
                                                      "<think>maybe A</think>{L}", "Final answer: {L}. {T}"]))
def test_letter_formats_parse_to_their_letter(case, template):
    options, i, letter = case
    text = template.format(L=letter, T=options[i])
    for answer_type in ("single_choice", "yes_no"):
        result = parse_answer(text, answer_type=answer_type, options=options)
        assert (result.outcome, result.value) == ("answered", letter), (text, options, result)
    multi = parse_answer(text, answer_type="multi_choice", options=options)
    assert (multi.outcome, multi.value) == ("answered", [letter]), (text, options, multi)


@SETTINGS
@given(case=letter_cases())
def test_option_text_alone_parses_to_its_letter(case):
    options, i, letter = case
    result = parse_answer(options[i].upper() + ".", answer_type="single_choice", options=options)
    assert (result.outcome, result.value) == ("answered", letter), (options, result)


@SETTINGS
@given(options=OPTIONS, extra=st.integers(0, 10), template=st.sampled_from(["{L}", "({L})", "Answer: {L}"]))
def test_letters_beyond_the_options_are_out_of_range(options, extra, template):
    letter = LETTERS[min(len(options) + extra, 25)]
    result = parse_answer(template.format(L=letter), answer_type="single_choice", options=options)
    assert (result.outcome, result.method) == ("unparseable", "letter_out_of_range")


@SETTINGS
@given(options=OPTIONS, picks=st.sets(st.integers(0, 7), min_size=1),
       sep=st.sampled_from([", ", ",", " and ", "; ", " "]))
def test_letter_lists_parse_sorted(options, picks, sep):
    chosen = sorted(p for p in picks if p < len(options))
    if not chosen:
        chosen = [0]
    text = sep.join(LETTERS[p] for p in reversed(chosen))
    result = parse_answer(text, answer_type="multi_choice", options=options)
    assert (result.outcome, result.value) == ("answered", [LETTERS[p] for p in chosen]), (text, result)


@st.composite
def boxes(draw, max_side: int = 4096):
    w = draw(st.integers(16, max_side))
    h = draw(st.integers(16, max_side))
    x0 = draw(st.integers(0, w - 8))
    y0 = draw(st.integers(0, h - 8))
    x1 = draw(st.integers(max(x0 + 4, 2), w))
    y1 = draw(st.integers(max(y0 + 4, 2), h))
    return (w, h), (float(x0), float(y0), float(x1), float(y1))


def _close(value, box, tol):
    return all(abs(a - b) <= tol for a, b in zip(value, box, strict=True))


@SETTINGS
@given(case=boxes(), fmt=st.sampled_from(["pixel", "auto"]), reverse=st.booleans())
def test_pixel_boxes_round_trip(case, fmt, reverse):
    size, (x0, y0, x1, y1) = case
    text = f"[{x1:g}, {y1:g}, {x0:g}, {y0:g}]" if reverse else f"The box is [{x0:g}, {y0:g}, {x1:g}, {y1:g}]."
    result = parse_answer(text, answer_type="box", image_size=size, box_format=fmt)
    assert result.method == "box_pixel" and _close(result.value, (x0, y0, x1, y1), 1e-6), (text, result)


@SETTINGS
@given(case=boxes(), fmt=st.sampled_from(["unit", "auto"]))
def test_unit_boxes_round_trip(case, fmt):
    (w, h), box = case
    text = f"[{box[0] / w:.6f}, {box[1] / h:.6f}, {box[2] / w:.6f}, {box[3] / h:.6f}]"
    result = parse_answer(text, answer_type="box", image_size=(w, h), box_format=fmt)
    assert result.method == "box_unit" and _close(result.value, box, 0.01), (text, result)


@SETTINGS
@given(case=boxes(max_side=2000), style=st.sampled_from(["plain", "qwen", "json"]))
def test_1000_boxes_round_trip(case, style):
    (w, h), box = case
    k = [round(box[0] / w * 1000), round(box[1] / h * 1000), round(box[2] / w * 1000), round(box[3] / h * 1000)]
    if style == "qwen":
        text, fmt = f"<|box_start|>({k[0]},{k[1]}),({k[2]},{k[3]})<|box_end|>", "auto"
    elif style == "json":
        text, fmt = f'{{"bbox_2d": [{k[0]}, {k[1]}, {k[2]}, {k[3]}]}}', "norm1000"
    else:
        text, fmt = f"[{k[0]}, {k[1]}, {k[2]}, {k[3]}]", "norm1000"
    result = parse_answer(text, answer_type="box", image_size=(w, h), box_format=fmt)
    assert result.outcome == "answered" and _close(result.value, box, 1.0), (text, result)


ABSTENTIONS = ["Not sure", "I'm not sure", "unsure", "uncertain", "cannot determine", "can't tell",
               "unable to determine", "I don't know", "insufficient information", "cannot be determined"]


@SETTINGS
@given(phrase=st.sampled_from(ABSTENTIONS), upper=st.booleans(),
       end=st.sampled_from(["", ".", "!", " from the image."]),
       options=st.sampled_from([["yes", "no"], ["no", "yes"]]), answer_type=st.sampled_from(TYPES))
def test_abstentions_are_never_answers(phrase, upper, end, options, answer_type):
    text = (phrase.upper() if upper else phrase) + end
    result = parse_answer(text, answer_type=answer_type, options=options, image_size=(512, 512))
    assert (result.outcome, result.method) == ("abstained", "abstain_phrase"), (text, result)


@SETTINGS
@given(text=JUNK, prompt=st.one_of(st.none(), JUNK), answer_type=st.sampled_from(TYPES), options=OPTIONS,
       rejecting=st.one_of(st.none(), st.integers(0, 7)), data=st.data())
def test_never_raises_with_a_prompt_and_a_rejecting_option(text, prompt, answer_type, options, rejecting, data):
    letter = LETTERS[rejecting % len(options)] if rejecting is not None else None
    result = parse_answer(text, answer_type=answer_type, options=options, prompt=prompt, rejecting=letter)
    _check_invariants(result, answer_type, options)
    # echoing the response's own prompt around it never makes it raise either
    if prompt:
        echoed = data.draw(st.sampled_from([f"{prompt}\n{text}", f"{text}\n{prompt}", f"{prompt} {text}"]))
        _check_invariants(parse_answer(echoed, answer_type=answer_type, options=options, prompt=prompt,
                                       rejecting=letter), answer_type, options)
