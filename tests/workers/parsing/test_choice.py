"""Table-driven tests: single_choice and yes_no answers (letters, phrases, option texts, traps)."""
from __future__ import annotations

import pytest

from workers.parsing import parse_answer

O4 = ["Hypodense", "Hyperdense", "Isodense", "Mixed density"]
YN = ["yes", "no"]
NY = ["no", "yes"]
ORGANS = ["Liver", "Spleen", "Left kidney", "Right kidney", "Pancreas"]
DX = ["Benign", "Malignant", "Cannot be determined"]
MASS = ["Mass", "Mass effect", "Calcification"]
ABSTAIN = "ABSTAIN"


def case(id_: str, text: str | None, expected: str | None, method: str, options=O4):
    return pytest.param(text, options, expected, method, id=id_)


def check(text, options, expected, method, answer_type):
    result = parse_answer(text, answer_type=answer_type, options=options, image_size=(512, 512))
    if expected == ABSTAIN:
        assert (result.outcome, result.value, result.method) == ("abstained", None, method), result
    elif expected is None:
        assert (result.outcome, result.value, result.method) == ("unparseable", None, method), result
    else:
        assert (result.outcome, result.value, result.method) == ("answered", expected, method), result
    assert result.detail


SINGLE = [
    # -- the whole response is a letter
    case("bare-A", "A", "A", "letter_only"),
    case("bare-D", "D", "D", "letter_only"),
    case("paren", "(B)", "B", "letter_only"),
    case("bracket", "[C]", "C", "letter_only"),
    case("brace", "{C}", "C", "letter_only"),
    case("angle", "<B>", "B", "letter_only"),
    case("dot", "D.", "D", "letter_only"),
    case("close-paren", "A)", "A", "letter_only"),
    case("paren-dot", "(B).", "B", "letter_only"),
    case("colon", "B:", "B", "letter_only"),
    case("lower-a", "a", "A", "letter_only"),
    case("lower-b-dot", "b.", "B", "letter_only"),
    case("lower-paren", "(c)", "C", "letter_only"),
    case("spaces", "   B   ", "B", "letter_only"),
    case("newlines", "\n\nC\n", "C", "letter_only"),
    case("quoted", '"B"', "B", "letter_only"),
    case("single-quoted", "'D'", "D", "letter_only"),
    case("curly-quoted", "“A”", "A", "letter_only"),
    case("backticks", "`B`", "B", "letter_only"),
    case("bold", "**B**", "B", "letter_only"),
    case("bold-paren", "**(C)**", "C", "letter_only"),
    case("italic", "*A*", "A", "letter_only"),
    case("underscore", "_B_", "B", "letter_only"),
    case("code-fence", "```\nB\n```", "B", "letter_only"),
    case("heading", "### C", "C", "letter_only"),
    case("json-list", '["B"]', "B", "json"),
    case("fullwidth", "Ｂ", "B", "letter_only"),
    case("think-then-letter", "<think>A or B? The rim suggests C.</think>\nB", "B", "letter_only"),
    case("think-upper", "<THINK>maybe A</THINK> D", "D", "letter_only"),
    case("orphan-think-close", "Let me look. Probably A.</think>\n\nC", "C", "letter_only"),
    case("repeated-same", "B, B", "B", "letter_only"),
    # -- explicit answer phrases (the last one wins)
    case("answer-colon", "Answer: B", "B", "answer_phrase"),
    case("answer-lower", "answer: c", "C", "answer_phrase"),
    case("answer-is", "The answer is C.", "C", "answer_phrase"),
    case("correct-answer-paren", "The correct answer is (B).", "B", "answer_phrase"),
    case("final-answer-paren", "Final answer: (D)", "D", "answer_phrase"),
    case("bold-answer", "**Answer:** A", "A", "answer_phrase"),
    case("bold-answer-text", "**Answer:** (C) Isodense", "C", "answer_phrase"),
    case("answer-dash", "Answer - B", "B", "answer_phrase"),
    case("answer-next-line", "Answer:\n\nD", "D", "answer_phrase"),
    case("answer-because", "The answer is B because the lesion is brighter than liver.", "B", "answer_phrase"),
    case("answer-with-text", "Answer: A. Hypodense", "A", "answer_phrase"),
    case("answer-option-text", "The answer is hyperdense.", "B", "answer_phrase_text"),
    case("answer-text-first", "Answer: Mixed density, with a calcified rim", "D", "answer_phrase_text"),
    case("answer-i-think", "The answer is, I think, C.", "C", "answer_phrase"),
    case("answer-it-is", "Answer: it is B", "B", "answer_phrase"),
    case("answer-probably", "My answer: probably (A)", "A", "answer_phrase"),
    case("last-phrase-wins", "Answer: A\nOn reflection, the final answer is C.", "C", "answer_phrase"),
    case("last-phrase-wins-2", "The answer is B. Wait, no. Final answer: D", "D", "answer_phrase"),
    case("phrase-over-abstain", "I'm not sure, but the answer is B", "B", "answer_phrase"),
    case("phrase-over-mentions", "It could be hypodense or isodense. Final answer: C", "C", "answer_phrase"),
    case("phrase-after-think", "<think>The answer is A? no...</think>The answer is B.", "B", "answer_phrase"),
    case("answer-tag", "<think>dark lesion</think><answer>A</answer>", "A", "answer_phrase"),
    case("answer-tag-text", "<answer> (D) Mixed density </answer>", "D", "answer_phrase"),
    case("boxed", "Final Answer: $\\boxed{C}$", "C", "answer_phrase"),
    case("boxed-text", "\\boxed{\\text{B}}", "B", "answer_phrase"),
    case("correct-option-is", "The correct option is D.", "D", "answer_phrase"),
    case("best-choice", "Best choice: B", "B", "answer_phrase"),
    case("i-choose", "I choose C.", "C", "answer_phrase"),
    case("i-would-go-with", "I would go with (A).", "A", "answer_phrase"),
    case("answer-to-question", "The answer to the question is B.", "B", "answer_phrase"),
    case("response-colon", "Response: A", "A", "answer_phrase"),
    case("ignored-phrase", "The answer is based on density. (B)", "B", "letter_mention"),
    case("answer-then-explanation", "Answer: B\nExplanation: the lesion is brighter than the liver.", "B",
         "answer_phrase"),
    case("phrase-or", "Answer: A or B", None, "ambiguous"),
    case("phrase-and", "The answer is A and C.", None, "ambiguous"),
    case("phrase-revised", "Answer: B. Actually, C.", None, "ambiguous"),
    case("phrase-text-conflict", "Answer: A. Hyperdense", None, "ambiguous"),
    case("phrase-out-of-range", "The answer is F.", None, "letter_out_of_range"),
    case("phrase-abstain", "Final answer: I don't know", ABSTAIN, "abstain_phrase"),
    case("phrase-cannot", "The answer cannot be determined from this image.", ABSTAIN, "abstain_phrase"),
    case("phrase-a-lesion", "The answer is a lesion in the liver.", None, "no_match"),
    # -- the whole response is an option text
    case("text-exact", "Hypodense", "A", "option_text"),
    case("text-lower", "hyperdense", "B", "option_text"),
    case("text-period", "Isodense.", "C", "option_text"),
    case("text-upper", "MIXED DENSITY", "D", "option_text"),
    case("text-spaces", "  mixed   density ", "D", "option_text"),
    case("text-quoted", '"Hypodense"', "A", "option_text"),
    case("text-bold", "**Isodense**", "C", "option_text"),
    case("text-longer-option", "Mass effect", "B", "option_text", MASS),
    case("text-abstain-option", "Cannot be determined", "C", "option_text", DX),
    case("text-organ", "Left kidney.", "C", "option_text", ORGANS),
    # -- the response opens with a marked letter
    case("prefix-dot", "A. Hypodense", "A", "letter_prefix"),
    case("prefix-paren", "(A) hypodense", "A", "letter_prefix"),
    case("prefix-close", "C) Isodense", "C", "letter_prefix"),
    case("prefix-bracket", "[D] Mixed density", "D", "letter_prefix"),
    case("prefix-option", "Option C", "C", "letter_prefix"),
    case("prefix-option-lower", "option b", "B", "letter_prefix"),
    case("prefix-option-paren", "Option (D): mixed density", "D", "letter_prefix"),
    case("prefix-choice", "Choice B.", "B", "letter_prefix"),
    case("prefix-is-correct", "B is correct.", "B", "letter_prefix"),
    case("prefix-is-the-answer", "D is the answer because of the calcified rim.", "D", "letter_prefix"),
    case("prefix-first-line", "B\nThe lesion is brighter than the surrounding parenchyma.", "B", "letter_prefix"),
    case("prefix-explained", "A. The lesion is darker than the liver parenchyma.", "A", "letter_prefix"),
    case("prefix-colon-text", "B: Hyperdense", "B", "letter_prefix"),
    case("prefix-dash-text", "C - Isodense", "C", "letter_prefix"),
    case("prefix-space-text", "D Mixed density", "D", "letter_prefix"),
    case("prefix-consistent-claim", "A. Hypodense.\nOption A fits the low attenuation.", "A", "letter_prefix"),
    case("prefix-negated-other", "A. Hypodense, not hyperdense.", "A", "letter_prefix"),
    case("prefix-text-conflict", "A. Hyperdense", None, "ambiguous"),
    case("prefix-actually", "A. Hypodense... actually C", None, "ambiguous"),
    case("prefix-or", "B. or maybe (C)", None, "ambiguous"),
    case("prefix-explains-other", "A. It looks dark. Option B would look brighter.", "A", "letter_prefix"),
    case("prefix-explains-paren", "A. Hypodense.\n(B) is wrong because the lesion is dark.", "A", "letter_prefix"),
    case("prefix-claims-other", "A. Hypodense. On second thought, C is correct.", None, "ambiguous"),
    case("prefix-echo-inline", "(A) Hypodense (B) Hyperdense (C) Isodense", None, "ambiguous"),
    case("prefix-wait", "B. Wait, D.", None, "ambiguous"),
    case("prefix-instead", "C) Isodense - or rather (D).", None, "ambiguous"),
    case("options-echo", "A. Hypodense\nB. Hyperdense\nC. Isodense\nD. Mixed density", None, "ambiguous"),
    case("prefix-out-of-range", "E. None of these", None, "letter_out_of_range"),
    case("prefix-over-abstain", "B. Hyperdense, though I'm not sure.", "B", "letter_prefix"),
    # -- letters inside sentences
    case("mention-paren", "The lesion appears hypodense (A).", "A", "letter_mention"),
    case("mention-option", "Based on the attenuation, option C fits best.", "C", "letter_mention"),
    case("mention-is-correct", "I think B is correct.", "B", "letter_mention"),
    case("mention-bracket", "My pick would be [D] here.", "D", "letter_mention"),
    case("mention-line-start", "Looking at the image:\nC. the lesion matches the liver", "C", "letter_mention"),
    case("mention-two", "Either (A) or (B).", None, "ambiguous"),
    case("mention-text-conflict", "The lesion appears hypodense (B).", None, "ambiguous"),
    case("mention-out-of-range", "I would say (F).", None, "letter_out_of_range"),
    case("unmarked-letter", "I think B.", None, "no_match"),
    case("lower-in-sentence", "it is a.", None, "no_match"),
    # -- option texts inside sentences are never the answer (only the whole answer or an answer phrase's
    #    content is read as option text)
    case("sentence-text", "It is hypodense.", None, "no_match"),
    case("sentence-text-2", "The lesion appears hyperdense relative to the liver.", None, "no_match"),
    case("sentence-organ", "The lesion is located in the right kidney.", None, "no_match", ORGANS),
    case("sentence-longest", "There is a clear mass effect on the ventricle.", None, "no_match", MASS),
    case("sentence-negated-one", "There is no hyperdense component; the lesion is hypodense.", None, "no_match"),
    case("sentence-two-texts", "It is hypodense or hyperdense.", None, "no_match"),
    case("sentence-three-organs", "Liver, spleen and pancreas are normal.", None, "no_match", ORGANS),
    case("sentence-only-negated", "It is not hypodense.", None, "no_match"),
    case("sentence-without", "A lesion without calcification.", None, "no_match", MASS),
    case("a-lesion-is-present", "A lesion is present", None, "no_match"),
    case("a-lesion-text", "A lesion with hypodense appearance", None, "no_match"),
    case("i-at-start", "I cannot be sure it is hyperdense", ABSTAIN, "abstain_phrase"),
    case("abstain-option-mention", "The nature cannot be determined from a single image.", None, "no_match", DX),
    # -- abstentions
    case("not-sure", "Not sure", ABSTAIN, "abstain_phrase"),
    case("unsure", "Unsure.", ABSTAIN, "abstain_phrase"),
    case("uncertain", "uncertain", ABSTAIN, "abstain_phrase"),
    case("unknown", "Unknown.", ABSTAIN, "abstain_phrase"),
    case("n-a", "N/A", ABSTAIN, "abstain_phrase"),
    case("dont-know", "I don't know.", ABSTAIN, "abstain_phrase"),
    case("cannot-determine", "I cannot determine the density from this image.", ABSTAIN, "abstain_phrase"),
    case("cant-tell", "Can't tell from this slice.", ABSTAIN, "abstain_phrase"),
    case("unable", "I am unable to determine this.", ABSTAIN, "abstain_phrase"),
    case("insufficient", "Insufficient information to answer.", ABSTAIN, "abstain_phrase"),
    case("refusal", "I'm sorry, but I can't help with interpreting medical images.", ABSTAIN, "abstain_phrase"),
    case("hard-to-say", "Hard to say without contrast.", ABSTAIN, "abstain_phrase"),
    case("abstain-beats-text", "It might be hypodense, but I'm not sure.", ABSTAIN, "abstain_phrase"),
    case("abstain-beats-mention", "Possibly (B), but I am uncertain.", ABSTAIN, "abstain_phrase"),
    # -- unparseable
    case("empty", "", None, "empty"),
    case("none-text", None, None, "empty"),
    case("whitespace", "  \n\t ", None, "empty"),
    case("punctuation", "...", None, "empty"),
    case("only-think", "<think>It is A.</think>", None, "empty"),
    case("unclosed-think", "<think>It is A and I will answer", None, "empty"),
    case("out-of-range", "E", None, "letter_out_of_range"),
    case("out-of-range-lower", "z", None, "letter_out_of_range"),
    case("two-letters", "A or B", None, "ambiguous"),
    case("two-letters-comma", "B, C", None, "ambiguous"),
    case("two-letters-slash", "A/D", None, "ambiguous"),
    case("gibberish", "The image shows a cross-section.", None, "no_match"),
    case("none-of-above", "None of the above", None, "no_match"),
    case("numbers", "42", None, "no_match"),
    case("no-fuzzy", "Hypodens", None, "no_match"),
    case("no-fuzzy-2", "hyper-dense", None, "no_match"),
]


@pytest.mark.parametrize(("text", "options", "expected", "method"), SINGLE)
def test_single_choice(text, options, expected, method):
    check(text, options, expected, method, "single_choice")


YES_NO = [
    case("yes", "Yes", "A", "yes_no_word", YN),
    case("yes-lower-dot", "yes.", "A", "yes_no_word", YN),
    case("no", "No", "B", "yes_no_word", YN),
    case("no-reversed-options", "No", "A", "yes_no_word", NY),
    case("yes-reversed-options", "YES", "B", "yes_no_word", NY),
    case("no-sentence", "No, there is no lesion", "B", "yes_no_word", YN),
    case("yes-dash", "Yes - a mass is seen", "A", "yes_no_word", YN),
    case("yes-comma", "Yes, there is a focal hypodense lesion in segment IV.", "A", "yes_no_word", YN),
    case("no-period-sentence", "No. The liver is normal.", "B", "yes_no_word", YN),
    case("yes-exclaim", "Yes!", "A", "yes_no_word", YN),
    case("nope", "Nope", "B", "yes_no_word", YN),
    case("yeah", "Yeah, it is there.", "A", "yes_no_word", YN),
    case("bold-yes", "**Yes**", "A", "yes_no_word", YN),
    case("think-no", "<think>Is there a lesion? I see none.</think>No", "B", "yes_no_word", YN),
    case("letter-A", "A", "A", "letter_only", YN),
    case("letter-B-paren", "(B)", "B", "letter_only", NY),
    case("letter-prefix-yes", "A. yes", "A", "letter_prefix", YN),
    case("letter-prefix-no", "B. No", "B", "letter_prefix", YN),
    case("answer-yes", "Answer: Yes", "A", "answer_phrase_text", YN),
    case("answer-yes-reversed", "Answer: Yes", "B", "answer_phrase_text", NY),
    case("answer-is-no", "The answer is no.", "B", "answer_phrase_text", YN),
    case("answer-letter", "The answer is (B).", "B", "answer_phrase", YN),
    case("answer-nope", "Final answer: nope", "B", "answer_phrase_text", YN),
    case("answer-no-sentence", "Answer: No, there is no lesion.", "B", "answer_phrase_text", YN),
    case("answer-after-unsure", "I'm not sure, but the answer is yes", "A", "answer_phrase_text", YN),
    # traps: never read as "no"
    case("not-sure", "Not sure", ABSTAIN, "abstain_phrase", YN),
    case("im-not-sure", "I'm not sure", ABSTAIN, "abstain_phrase", YN),
    case("unsure", "unsure", ABSTAIN, "abstain_phrase", YN),
    case("uncertain", "Uncertain.", ABSTAIN, "abstain_phrase", YN),
    case("cannot-determine", "cannot determine", ABSTAIN, "abstain_phrase", YN),
    case("cant-tell", "Can't tell.", ABSTAIN, "abstain_phrase", YN),
    case("unable-to-determine", "Unable to determine from this image.", ABSTAIN, "abstain_phrase", YN),
    case("dont-know", "I don't know", ABSTAIN, "abstain_phrase", YN),
    case("insufficient", "Insufficient information.", ABSTAIN, "abstain_phrase", YN),
    case("cannot-be-determined", "This cannot be determined.", ABSTAIN, "abstain_phrase", YN),
    case("no-idea", "No idea.", ABSTAIN, "abstain_phrase", YN),
    case("no-way-to-tell", "No way to tell on a non-contrast scan.", ABSTAIN, "abstain_phrase", YN),
    case("no-cannot-determine", "No, I cannot determine this from the image.", ABSTAIN, "abstain_phrase", YN),
    case("yes-but-unsure", "Yes, but I'm not sure.", ABSTAIN, "abstain_phrase", YN),
    case("not", "Not", None, "no_match", YN),
    case("none", "None", None, "no_match", YN),
    case("nothing", "Nothing", None, "no_match", YN),
    case("noted", "Noted.", None, "no_match", YN),
    case("nodule", "Nodule in the left lobe.", None, "no_match", YN),
    case("not-visible", "Not visible.", None, "no_match", YN),
    case("answer-none", "The answer is none", None, "no_match", YN),
    case("no-in-sentence", "There is no focal lesion.", None, "no_match", YN),
    case("negative", "Negative", None, "no_match", YN),
    case("yes-slash-no", "Yes/No", None, "ambiguous", YN),
    case("yes-or-no", "yes or no", None, "ambiguous", YN),
    case("letter-text-conflict", "A. no", None, "ambiguous", YN),
    case("phrase-text-conflict", "Answer: A. no", None, "ambiguous", YN),
    case("letter-C", "C", None, "letter_out_of_range", YN),
    case("answer-C", "Answer: (C)", None, "letter_out_of_range", YN),
    case("yes-without-yes-option", "Yes", None, "no_match", ["present", "absent"]),
    case("text-option", "Present.", "A", "option_text", ["present", "absent"]),
]


@pytest.mark.parametrize(("text", "options", "expected", "method"), YES_NO)
def test_yes_no(text, options, expected, method):
    check(text, options, expected, method, "yes_no")


def test_single_choice_with_yes_no_options_reads_yes_no_words():
    result = parse_answer("No, nothing focal.", answer_type="single_choice", options=YN)
    assert (result.outcome, result.value, result.method) == ("answered", "B", "yes_no_word")


def test_no_options_accepts_any_letter_but_no_texts():
    assert parse_answer("Q", answer_type="single_choice").value == "Q"
    assert parse_answer("Hypodense", answer_type="single_choice").outcome == "unparseable"
