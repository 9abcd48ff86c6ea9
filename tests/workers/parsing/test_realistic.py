"""Long-form outputs in the styles real VLMs produce (chatty, reasoning, refusing), every answer type."""
from __future__ import annotations

import pytest

from workers.parsing import parse_answer

O4 = ["Hypodense", "Hyperdense", "Isodense", "Mixed density"]
YN = ["yes", "no"]
DX = ["Normal", "Benign cyst", "Hemangioma", "Metastasis"]
FIND = ["Hypodense lesion", "Calcification", "Mass effect", "Perilesional edema"]
ABSTAIN = "ABSTAIN"


def case(id_, text, answer_type, expected, method, options=O4):
    return pytest.param(text, answer_type, options, expected, method, id=id_)


REALISTIC = [
    case("chatty-therefore", "Based on the CT image, the lesion in the right hepatic lobe appears darker than the "
         "surrounding liver parenchyma. Therefore, the answer is A. Hypodense.", "single_choice", "A", "answer_phrase"),
    case("reasoning-model", "<think>\nThe lesion is dark relative to liver, so hypodense. Options: A hypodense, B "
         "hyperdense. So A.\n</think>\n\nA", "single_choice", "A", "letter_only"),
    case("bold-block", "The correct answer is:\n\n**B. Hyperdense**\n\nThe lesion shows higher attenuation than the "
         "liver.", "single_choice", "B", "answer_phrase"),
    case("descriptive", "Looking at the image, I can see a well-defined lesion. It appears hypodense compared with "
         "the adjacent parenchyma, suggesting a cystic nature.", "single_choice", None, "no_match"),
    case("diagnosis-text", "The lesion demonstrates peripheral nodular enhancement, which is characteristic of a "
         "hemangioma.", "single_choice", None, "no_match", DX),
    case("diagnosis-negated", "The lesion is not a simple benign cyst; it shows features of metastasis.",
         "single_choice", None, "no_match", DX),
    case("two-mentions", "The lesions shown are hypodense (A) with surrounding edema; mixed density (D) is less "
         "likely.", "single_choice", "A", "letter_mention"),             # (D) is ruled out
    case("two-mentions-both", "The lesions shown are hypodense (A) with surrounding edema; mixed density (D) is "
         "also possible.", "single_choice", None, "ambiguous"),
    case("two-answer-lines", "A\n\nB", "single_choice", None, "ambiguous"),
    case("letter-after-prose", "Looking at the attenuation relative to the spleen...\n\nC", "single_choice", "C",
         "letter_mention"),
    case("latex-final", "Final Answer: The final answer is $\\boxed{B}$", "single_choice", "B", "answer_phrase"),
    case("latex-display", "**Final Answer**\n\\[ \\boxed{D} \\]", "single_choice", "D", "answer_phrase"),
    case("shouting", "ANSWER: B", "single_choice", "B", "answer_phrase"),
    case("answer-then-reasoning", "Answer: (A)\n\nReasoning: The lesion is darker than the liver.", "single_choice",
         "A", "answer_phrase"),
    case("letter-then-reasoning", "B.\n\nThe lesion is hyperdense.", "single_choice", "B", "letter_prefix"),
    case("echo-question-then-answer", "Question: What is the density of the lesion?\nA. Hypodense\nB. Hyperdense\n"
         "C. Isodense\nD. Mixed density\nAnswer: C", "single_choice", "C", "answer_phrase"),
    case("echo-question-no-answer", "What is the density?\nA. Hypodense\nB. Hyperdense", "single_choice", None,
         "ambiguous"),
    case("self-correction", "A. Hypodense. Hmm, on closer inspection, actually B.", "single_choice", None,
         "ambiguous"),
    case("self-correction-final", "A? Looking again it is brighter. Final answer: B", "single_choice", "B",
         "answer_phrase"),
    case("refusal-ai", "As an AI, I am not able to provide medical diagnoses.", "single_choice", ABSTAIN,
         "abstain_phrase"),
    case("refusal-sorry", "I'm sorry, I can't assist with that.", "single_choice", ABSTAIN, "abstain_phrase"),
    case("refusal-image", "I cannot view the image, so I can't answer.", "single_choice", ABSTAIN, "abstain_phrase"),
    case("yes-finding", "Yes, there is a focal hypodense lesion in segment VII of the liver.", "yes_no", "A",
         "yes_no_word", YN),
    case("no-finding", "No focal lesion is identified in the liver.", "yes_no", "B", "yes_no_word", YN),
    case("phrase-yes", "There appears to be a lesion. Answer: yes", "yes_no", "A", "answer_phrase_text", YN),
    case("definitive-refusal", "Based on the image provided, I cannot make a definitive diagnosis. Please consult a "
         "radiologist.", "yes_no", ABSTAIN, "abstain_phrase", YN),
    case("prose-no-word", "There is a lesion in the liver.", "yes_no", None, "no_match", YN),
    case("reasoning-yes", "<think>I see a round dark area... is that a lesion? Probably yes.</think>\nYes.", "yes_no",
         "A", "yes_no_word", YN),
    case("answer-tag-no", "<think>no lesion</think>\n<answer>No</answer>", "yes_no", "B", "answer_phrase_text", YN),
    case("multi-letters-explained", "A, C\n\nThe lesion is hypodense and exerts mass effect.", "multi_choice",
         ["A", "C"], "letter_list", FIND),
    case("multi-phrase", "The findings include a hypodense lesion with edema. The correct options are A and D.",
         "multi_choice", ["A", "D"], "answer_phrase", FIND),
    case("multi-texts", "Hypodense lesion, perilesional edema", "multi_choice", ["A", "D"], "option_text", FIND),
    case("multi-bullets", "Selected findings:\n- A. Hypodense lesion\n- C. Mass effect\nAnswer: A, C",
         "multi_choice", ["A", "C"], "answer_phrase", FIND),
    case("multi-none", "None of the above findings are present.", "multi_choice", [], "none_selected", FIND),
    case("multi-refusal", "I am unable to determine the findings from this image.", "multi_choice", ABSTAIN,
         "abstain_phrase", FIND),
    case("qwen-grounding", "<|object_ref_start|>the lesion<|object_ref_end|><|box_start|>(450,300),(600,520)"
         "<|box_end|>", "box", [230.4, 153.6, 307.2, 266.24], "box_qwen"),
    case("qwen25-json", '```json\n[\n\t{"bbox_2d": [120, 80, 260, 200], "label": "liver lesion"}\n]\n```', "box",
         [120, 80, 260, 200], "box_json"),
    case("llava-unit", "The lesion is located at [0.23, 0.16, 0.51, 0.39].", "box",
         [117.76, 81.92, 261.12, 199.68], "box_unit"),
    case("chatty-box", "Sure! The bounding box of the hypodense lesion is [120, 80, 260, 200] in pixel "
         "coordinates.", "box", [120, 80, 260, 200], "box_pixel"),
    case("reasoning-box", "<think>Maybe [100, 100, 200, 200]? No, larger.</think>Answer: [90, 90, 250, 240]", "box",
         [90, 90, 250, 240], "box_pixel"),
    case("box-refusal", "I'm sorry, but I cannot determine the location of the lesion.", "box", ABSTAIN,
         "abstain_phrase"),
    case("text-sentence", "The lesion is located in the left lobe of the liver.", "short_text",
         "the lesion is located in the left lobe of the liver", "free_text"),
    case("text-phrase", "Looking at the scan, the answer is: hepatic cyst.", "short_text", "hepatic cyst",
         "answer_phrase_text"),
    case("text-think", "<think>cyst or abscess?</think>Abscess", "short_text", "abscess", "free_text"),
]


@pytest.mark.parametrize(("text", "answer_type", "options", "expected", "method"), REALISTIC)
def test_realistic(text, answer_type, options, expected, method):
    result = parse_answer(text, answer_type=answer_type, options=options, image_size=(512, 512))
    if expected == ABSTAIN:
        assert (result.outcome, result.value, result.method) == ("abstained", None, method), result
    elif expected is None:
        assert (result.outcome, result.value, result.method) == ("unparseable", None, method), result
    elif answer_type == "box":
        assert (result.outcome, result.method) == ("answered", method), result
        assert result.value == pytest.approx(expected, abs=1e-6)
    else:
        assert (result.outcome, result.value, result.method) == ("answered", expected, method), result
