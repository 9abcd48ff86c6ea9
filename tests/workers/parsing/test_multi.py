"""Table-driven tests: multi_choice answers (letter lists, option texts, none, traps)."""
from __future__ import annotations

import pytest

from workers.parsing import parse_answer

O5 = ["Hypodense", "Calcification", "Mass effect", "Edema", "Hemorrhage"]
NOTA = ["Fracture", "Effusion", "None of the above"]
ABSTAIN = "ABSTAIN"


def case(id_: str, text: str | None, expected, method: str, options=O5):
    return pytest.param(text, options, expected, method, id=id_)


MULTI = [
    # -- letters only
    case("single-letter", "B", ["B"], "letter_list"),
    case("comma-space", "A, C", ["A", "C"], "letter_list"),
    case("comma", "A,C", ["A", "C"], "letter_list"),
    case("and", "A and C", ["A", "C"], "letter_list"),
    case("ampersand", "B & E", ["B", "E"], "letter_list"),
    case("semicolon", "A; D", ["A", "D"], "letter_list"),
    case("parens-adjacent", "(A)(C)", ["A", "C"], "letter_list"),
    case("parens-spaced", "(B) (D) (E)", ["B", "D", "E"], "letter_list"),
    case("brackets", "[A], [C]", ["A", "C"], "letter_list"),
    case("space", "A C", ["A", "C"], "letter_list"),
    case("unsorted", "D, A, C", ["A", "C", "D"], "letter_list"),
    case("duplicates", "B, B, A", ["A", "B"], "letter_list"),
    case("lowercase", "a, c", ["A", "C"], "letter_list"),
    case("trailing-period", "A, C, D.", ["A", "C", "D"], "letter_list"),
    case("oxford-and", "A, B, and E", ["A", "B", "E"], "letter_list"),
    case("all-five", "A,B,C,D,E", ["A", "B", "C", "D", "E"], "letter_list"),
    case("concatenated", "ACD", ["A", "C", "D"], "letter_list"),
    case("json-list", '["A", "C"]', ["A", "C"], "json"),
    case("python-list", "['B', 'D']", ["B", "D"], "json"),
    case("bold", "**A, C**", ["A", "C"], "letter_list"),
    case("think", "<think>A? C? maybe E</think>A, C", ["A", "C"], "letter_list"),
    case("items-lines", "A. Hypodense\nC. Mass effect", ["A", "C"], "letter_list"),
    case("items-bullets", "- (B) Calcification\n- (D) Edema", ["B", "D"], "letter_list"),
    case("items-inline", "(A) hypodense, (C) mass effect", ["A", "C"], "letter_list"),
    case("first-line", "A, C\n\nExplanation: the lesion is hypodense with mass effect.", ["A", "C"], "letter_list"),
    case("first-line-single", "D\nPerilesional edema is visible.", ["D"], "letter_list"),
    case("option-word", "Option B", ["B"], "letter_list"),
    case("options-word", "Options A and E.", ["A", "E"], "letter_list"),
    case("are-correct", "A and C are correct.", ["A", "C"], "letter_list"),
    case("options-are-correct", "Options B, D are correct", ["B", "D"], "letter_list"),
    # -- answer phrases
    case("answer-colon", "Answer: B, D", ["B", "D"], "answer_phrase"),
    case("correct-options-are", "The correct options are A and C.", ["A", "C"], "answer_phrase"),
    case("answers-are", "The answers are (A), (B) and (E).", ["A", "B", "E"], "answer_phrase"),
    case("final-answer-texts", "Final answer: hypodense, edema", ["A", "D"], "answer_phrase_text"),
    case("answer-tag", "<think>...</think><answer>C, E</answer>", ["C", "E"], "answer_phrase"),
    case("last-phrase", "Answer: A, C\nAfter review, the final answer: B", ["B"], "answer_phrase"),
    case("phrase-after-explanation", "Hypodense and edema are seen.\nAnswer: A, D", ["A", "D"], "answer_phrase"),
    case("phrase-because", "Answer: A, C because both are visible.", ["A", "C"], "answer_phrase"),
    case("phrase-none", "Answer: none of the above", [], "none_selected"),
    case("phrase-out-of-range", "Answer: A, G", None, "letter_out_of_range"),
    case("phrase-or", "The answer is A or C.", None, "ambiguous"),
    case("phrase-abstain", "Answer: cannot be determined", ABSTAIN, "abstain_phrase"),
    # -- option texts
    case("texts-comma", "Hypodense, Edema", ["A", "D"], "option_text"),
    case("texts-and", "calcification and hemorrhage", ["B", "E"], "option_text"),
    case("texts-lines", "Mass effect\nEdema", ["C", "D"], "option_text"),
    case("texts-single", "Edema.", ["D"], "option_text"),
    case("texts-multiword", "mass effect, hypodense", ["A", "C"], "option_text"),
    case("texts-or", "Edema or hemorrhage", None, "ambiguous"),
    case("texts-with-other", "Hypodense, cyst", None, "no_match"),
    case("texts-fuzzy", "Calcifications", None, "no_match"),
    case("nota-as-option", "None of the above", ["C"], "option_text", NOTA),
    # -- none selected
    case("none", "None", [], "none_selected"),
    case("none-lower", "none.", [], "none_selected"),
    case("none-of-above", "None of the above", [], "none_selected"),
    case("none-of-options", "None of the options are correct.", [], "none_selected"),
    case("no-correct-option", "No correct option", [], "none_selected"),
    case("neither", "Neither", [], "none_selected"),
    # -- abstentions and failures
    case("not-sure", "I'm not sure", ABSTAIN, "abstain_phrase"),
    case("cannot-determine", "Cannot determine from this image.", ABSTAIN, "abstain_phrase"),
    case("n-a", "N/A", ABSTAIN, "abstain_phrase"),
    case("or", "A or C", None, "ambiguous"),
    case("out-of-range", "A, F", None, "letter_out_of_range"),
    case("out-of-range-single", "G", None, "letter_out_of_range"),
    case("discussion", "A. Hypodense - yes\nB. Calcification - no", None, "no_match"),
    case("sentence-mentions", "The image shows edema around a hypodense lesion.", None, "no_match"),
    case("a-lesion", "A lesion is present", None, "no_match"),
    case("concat-not-letters", "CT", None, "no_match"),
    case("empty", "", None, "empty"),
    case("none-input", None, None, "empty"),
    case("punct", ", ;", None, "empty"),
]


@pytest.mark.parametrize(("text", "options", "expected", "method"), MULTI)
def test_multi_choice(text, options, expected, method):
    result = parse_answer(text, answer_type="multi_choice", options=options)
    if expected == ABSTAIN:
        assert (result.outcome, result.value, result.method) == ("abstained", None, method), result
    elif expected is None:
        assert (result.outcome, result.value, result.method) == ("unparseable", None, method), result
    else:
        assert (result.outcome, result.value, result.method) == ("answered", expected, method), result
        assert result.value == sorted(set(result.value))
    assert result.detail
