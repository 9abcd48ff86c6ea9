"""Issue 13: the prompt's own sentences (context lines, hint, question, instruction) are removed from a
response before parsing, so an echo is never an answer; option lines stay."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from annotation.variants.prompt import format_prompt, hint_sentence
from tests.workers.parsing.cases import ANSWERED, UNPARSEABLE, case, check
from workers.parsing import parse_answer, parse_answer_with_box

ORGANS = ["liver", "spleen", "pancreas", "left kidney"]
YN = ["yes", "no"]
CUE = "The region of interest is marked with a box."
EARLIER = 'Earlier in this case, the answer to "Is there a lesion in the liver?" was: yes.'
HINT_C = hint_sentence("C", ["pancreas"])  # "A senior colleague thinks the answer is C. pancreas."
PROMPT = format_prompt("Which organ contains the lesion?", ORGANS, answer_type="single_choice", preamble=HINT_C,
                       context_lines=[CUE, EARLIER])
YN_PROMPT = format_prompt("Is there a lesion in the spleen?", YN, answer_type="yes_no",
                          context_lines=[EARLIER])
P = {"prompt": PROMPT}

ECHOES = [
    case("hint-then-letter", "A senior colleague thinks the answer is C.\nB", ORGANS, P, ANSWERED, "B", "letter_only"),
    case("hint-then-letter-no-prompt", "A senior colleague thinks the answer is C.\nB", ORGANS, None, UNPARSEABLE,
         None, "ambiguous"),
    case("hint-same-line", "A senior colleague thinks the answer is C. B", ORGANS, P, ANSWERED, "B", "letter_only"),
    case("hint-line-then-phrase", HINT_C + "\nAnswer: B", ORGANS, P, ANSWERED, "B", "answer_phrase"),
    case("hint-then-but", "A senior colleague thinks the answer is C, but the answer is B.", ORGANS, P, ANSWERED,
         "B", "answer_phrase"),
    case("hint-case-and-spaces", "a SENIOR colleague   thinks the answer\nis c.\nB", ORGANS, P, ANSWERED, "B",
         "letter_only"),
    case("hint-agreeing", HINT_C + "\nI agree: (C).", ORGANS, P, ANSWERED, "C", "letter_mention"),
    case("hint-only", HINT_C, ORGANS, P, UNPARSEABLE, None, "empty"),
    case("cue-line-then-prefix", CUE + "\nB. spleen", ORGANS, P, ANSWERED, "B", "letter_prefix"),
    case("context-then-answer", EARLIER + "\nAnswer: D", ORGANS, P, ANSWERED, "D", "answer_phrase"),
    case("question-then-text", "Which organ contains the lesion? liver", ORGANS, P, ANSWERED, "A", "option_text"),
    case("question-then-the-text", "Which organ contains the lesion? The left kidney.", ORGANS, P, ANSWERED, "D",
         "option_text"),
    case("instruction-then-letter", "Answer with the letter of the correct option.\n(C)", ORGANS, P, ANSWERED, "C",
         "letter_only"),
    case("whole-prompt-then-answer", PROMPT + "\nAnswer: A", ORGANS, P, ANSWERED, "A", "answer_phrase"),
    case("option-lines-stay", "B. spleen", ORGANS, P, ANSWERED, "B", "letter_prefix"),
    case("option-list-echo-stays-ambiguous", "A. liver\nB. spleen", ORGANS, P, UNPARSEABLE, None, "ambiguous"),
    case("option-text-answer-kept", "pancreas", ORGANS, P, ANSWERED, "C", "option_text"),
    case("yes-no-context", EARLIER + "\nNo", YN, {"prompt": YN_PROMPT}, ANSWERED, "B", "yes_no_word"),
    case("yes-no-question-echo", "Is there a lesion in the spleen? No.", YN, {"prompt": YN_PROMPT}, ANSWERED, "B",
         "yes_no_word"),
]


@pytest.mark.parametrize(("text", "options", "kwargs", "outcome", "value", "method"), ECHOES)
def test_echoed_prompt_sentences_are_not_answers(text, options, kwargs, outcome, value, method):
    check(text, options, kwargs, outcome, value, method, "yes_no" if options == YN else "single_choice")


def test_echo_removal_applies_to_every_answer_type():
    prompt = format_prompt("Which findings are present?", ORGANS, answer_type="multi_choice",
                           preamble=hint_sentence(["A", "C"], ["liver", "pancreas"]))
    result = parse_answer("A senior colleague thinks the answer is A, C.\nB, D", answer_type="multi_choice",
                          options=ORGANS, prompt=prompt)
    assert (result.outcome, result.value) == ("answered", ["B", "D"])
    box_prompt = format_prompt("Where is the lesion?", [], answer_type="box", image_size=(100, 100))
    box = parse_answer("Answer with the bounding box as [x0, y0, x1, y1] in pixel coordinates of the image "
                       "(100x100).\n[10, 20, 30, 40]", answer_type="box", image_size=(100, 100), prompt=box_prompt)
    assert box.value == [10.0, 20.0, 30.0, 40.0]
    short = parse_answer("Which organ contains the lesion? Liver", answer_type="short_text",
                         prompt="Which organ contains the lesion?\nAnswer with a short phrase.")
    assert short.value == "liver"
    choice, _ = parse_answer_with_box(HINT_C + "\nB (10, 20, 30, 40)", answer_type="single_choice", options=ORGANS,
                                      prompt=PROMPT, image_size=(100, 100))
    assert (choice.outcome, choice.value) == ("answered", "B")


def test_prompt_of_any_type_never_raises():
    for prompt in ["", "\n\n", "A. x", "x" * 10_000, "<think>", b"bytes prompt here now".decode(), "?. !. ..."]:
        result = parse_answer("B", answer_type="single_choice", options=ORGANS, prompt=prompt)
        assert (result.outcome, result.value) == ("answered", "B")


# -- property: an echoed prompt sentence never changes the parse --------------------------------------
SETTINGS = settings(max_examples=int(os.environ.get("PARSING_HYPOTHESIS_EXAMPLES", "150")), deadline=None,
                    database=None, derandomize=not os.environ.get("PARSING_HYPOTHESIS_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow])
VOCAB = ["liver", "spleen", "pancreas", "left kidney", "hypodense", "hyperdense", "mixed density", "benign",
         "malignant", "cyst", "hemangioma", "present", "absent"]
QUESTIONS = ["Which organ contains the lesion?", "What is the density of the outlined lesion?",
             "Consider the cyst in the spleen. What is its density?", "Is there a lesion in the liver?",
             "Which findings are present?"]
CONTEXT = [CUE, EARLIER, 'Earlier in this case, the answer to "Which organ contains the lesion?" was: liver.']
ANSWERS = ["{L}", "({L})", "{L}. {T}", "Answer: {L}", "The answer is {T}.", "{T}", "Final answer: ({L}) {T}",
           "The lesion is dark.\nAnswer: {L}", "{L}\nThe lesion is brighter than the liver.", "Not sure.",
           "I cannot determine this from the image.", '{{"answer": "{L}"}}', "Option {L} is right.",
           "Answer:\n\n{L}", "The image shows a lesion.", "{L}, {M}", "Answer: {L} or {M}", "{L}. {T}\nActually {M}.",
           "There is no such lesion; the premise is false.", "Yes", "No, nothing there.", "答案是{L}",
           "<think>maybe {M}</think>\n{L}"]


@st.composite
def echoes(draw):
    answer_type = draw(st.sampled_from(["single_choice", "yes_no", "multi_choice"]))
    if answer_type == "yes_no":
        options = draw(st.sampled_from([["yes", "no"], ["no", "yes"]]))
    else:
        options = draw(st.lists(st.sampled_from(VOCAB), min_size=2, max_size=5, unique=True))
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[: len(options)]
    hinted = draw(st.integers(0, len(options) - 1))
    preamble = draw(st.sampled_from(["", "hint"]))
    if preamble:
        preamble = hint_sentence(letters[hinted], [options[hinted]])
    context = draw(st.lists(st.sampled_from(CONTEXT), max_size=2, unique=True))
    question = draw(st.sampled_from(QUESTIONS))
    prompt = format_prompt(question, options, answer_type=answer_type, preamble=preamble, context_lines=context)
    # the prompt's sentences, as a model would echo them: whole non-option lines and their sentences
    pieces = list(context) + [question, prompt.split("\n")[-1]] + question.split(". ")[:-1]
    if preamble:
        pieces += [preamble, preamble.split(". ")[0] + "."]
    pieces += [c.split('?" ')[0] + '?"' for c in context if '?" ' in c]
    i, j = draw(st.integers(0, len(options) - 1)), draw(st.integers(0, len(options) - 1))
    answer = draw(st.sampled_from(ANSWERS)).format(L=letters[i], T=options[i], M=letters[j])
    piece = draw(st.sampled_from(pieces))
    piece = draw(st.sampled_from([piece, piece.lower(), piece.upper(), piece.replace(" ", "  ", 1),
                                  piece.replace(" ", "\n", 1)]))
    lines = answer.split("\n")
    at = draw(st.integers(0, len(lines)))
    how = draw(st.sampled_from(["line", "prefix", "suffix"]))
    flat = " ".join(f"{piece} {answer}".lower().split())
    if how == "prefix" and preamble and flat.startswith(" ".join(preamble.lower().rstrip(".").split())):
        how = "line"  # "<hint sentence> <hinted option's text>" on one line IS the whole hint line: removed
    if how == "line":
        echoed = "\n".join(lines[:at] + [piece] + lines[at:])
    elif how == "prefix":
        echoed = f"{piece} {answer}"
    else:
        echoed = f"{answer} {piece}"
    return answer_type, options, prompt, answer, echoed


def _key(result):
    return result.outcome, result.value, result.method


@SETTINGS
@given(case=echoes())
def test_an_echoed_prompt_sentence_never_changes_the_parse(case):
    answer_type, options, prompt, answer, echoed = case
    clean = parse_answer(answer, answer_type=answer_type, options=options, prompt=prompt)
    assert _key(clean) == _key(parse_answer(answer, answer_type=answer_type, options=options))
    with_echo = parse_answer(echoed, answer_type=answer_type, options=options, prompt=prompt)
    assert _key(with_echo) == _key(clean), (prompt, answer, echoed, clean, with_echo)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=st.lists(st.sampled_from([*"ABCDab .:,\n()<>/{}\\", "answer", "boxed", "Answer: ", "yes", "liver",
                                      "senior", "<answer>", "</answer>", "\\boxed{", "<br>"]),
                     max_size=10).map("".join))
def test_where_echo_does_not_matter_the_prompt_never_changes_the_parse(text):
    """Execution leaves the prompt out of its parse-cache key when `echo_matters` says it cannot change the
    parse ("B", "B. liver"): that must be true for every such text."""
    from workers.parsing import echo_matters

    if echo_matters(text):
        return
    for options, prompt in ((ORGANS, PROMPT), (YN, YN_PROMPT)):
        assert parse_answer(text, answer_type="single_choice", options=options, prompt=prompt) == \
            parse_answer(text, answer_type="single_choice", options=options)
