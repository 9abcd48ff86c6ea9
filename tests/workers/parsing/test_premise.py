"""Issue 13: with ``rejecting`` (false_premise / true_premise variants), a prose rejection of the premise
reads as the rejecting option (method "premise_rejection"); without it nothing changes."""
from __future__ import annotations

import pytest

from tests.workers.parsing.cases import ABSTAINED, ANSWERED, UNPARSEABLE, case, check
from workers.parsing import parse_answer, parse_answer_with_box

# a false-premise item: "What is the density of the cyst in the spleen?" (there is no cyst in the spleen)
DENS = ["Hypodense", "Hyperdense", "Isodense", "No such lesion is present"]
ORG = ["liver", "spleen", "pancreas", "the premise is false"]
R = {"rejecting": "D"}

PREMISE = [
    case("premise-false-with-organ", "There is no cyst in the spleen; the premise is false.", ORG, R, ANSWERED, "D",
         "premise_rejection"),
    case("premise-false-without-rejecting", "There is no cyst in the spleen; the premise is false.", ORG, None,
         UNPARSEABLE, None, "no_match"),
    case("no-such-lesion", "No such lesion is present", DENS, R, ANSWERED, "D", "option_text"),  # the option itself
    case("no-such-lesion-seen", "No such lesion is seen in this image.", DENS, R, ANSWERED, "D", "premise_rejection"),
    case("premise-incorrect", "The premise is incorrect", DENS, R, ANSWERED, "D", "premise_rejection"),
    case("there-is-no-x-in-y", "There is no cyst in the spleen.", DENS, R, ANSWERED, "D", "premise_rejection"),
    case("there-is-no-x-in-y-organ-option", "There is no cyst in the spleen.", ORG, R, ANSWERED, "D",
         "premise_rejection"),
    case("do-not-see-any", "I do not see any cyst", DENS, R, ANSWERED, "D", "premise_rejection"),
    case("dont-see-a", "I don't see a cyst in the spleen, so I cannot grade its density.", DENS, R, ANSWERED, "D",
         "premise_rejection"),
    case("premise-does-not-hold", "The question's premise does not hold.", DENS, R, ANSWERED, "D",
         "premise_rejection"),
    case("false-premise-words", "This question rests on a false premise.", DENS, R, ANSWERED, "D",
         "premise_rejection"),
    case("no-cyst-is-seen", "No cyst is seen in the spleen.", DENS, R, ANSWERED, "D", "premise_rejection"),
    case("spleen-does-not-contain", "The spleen does not contain a cyst.", ORG, R, ANSWERED, "D", "premise_rejection"),
    case("phrase-rejection", "Answer: there is no cyst in the spleen", ORG, R, ANSWERED, "D", "premise_rejection"),
    case("letter-rejecting", "Answer: D", DENS, R, ANSWERED, "D", "answer_phrase"),
    case("letter-other", "Answer: A", DENS, R, ANSWERED, "A", "answer_phrase"),
    case("strong-against-letter", "The premise is incorrect. Answer: A", DENS, R, UNPARSEABLE, None, "ambiguous"),
    case("weak-against-letter", "There is no calcification. Answer: A", DENS, R, ANSWERED, "A", "answer_phrase"),
    case("strong-with-rejecting-letter", "The premise is false, so D.\nAnswer: D", DENS, R, ANSWERED, "D",
         "answer_phrase"),
    case("abstain-then-reject", "I cannot determine the density, as there is no cyst in the spleen.", DENS, R,
         ANSWERED, "D", "premise_rejection"),
    case("abstain-no-rejection", "I cannot determine the density.", DENS, R, ABSTAINED, None, "abstain_phrase"),
    case("cannot-see-image", "I can't see any image.", DENS, R, ABSTAINED, None, "abstain_phrase"),
    case("no-doubt-not-rejection", "There is no doubt about it.", DENS, R, UNPARSEABLE, None, "no_match"),
    case("not-false", "The premise is not false; it is hypodense.", DENS, R, UNPARSEABLE, None, "no_match"),
    case("true-premise-control", "The cyst in the spleen is hypodense.", DENS, R, UNPARSEABLE, None, "no_match"),
    case("true-premise-answer", "Answer: Hypodense", DENS, R, ANSWERED, "A", "answer_phrase_text"),
    case("rejection-names-two-options", "There is no cyst in the spleen or the liver.", ORG, R, ANSWERED, "D",
         "premise_rejection"),
    case("yes-no-rejecting", "There is no such lesion.", ["yes", "no", "false premise"], {"rejecting": "C"},
         ANSWERED, "C", "premise_rejection"),
]


@pytest.mark.parametrize(("text", "options", "kwargs", "outcome", "value", "method"), PREMISE)
def test_prose_rejection_reads_as_the_rejecting_option(text, options, kwargs, outcome, value, method):
    check(text, options, kwargs, outcome, value, method)


def test_rejecting_is_validated_and_lowercase_is_accepted():
    result = parse_answer("The premise is false.", answer_type="single_choice", options=DENS, rejecting="d")
    assert (result.value, result.method) == ("D", "premise_rejection")
    for bad in ("E", "AB", "", 3, "?"):
        with pytest.raises(ValueError):
            parse_answer("x", answer_type="single_choice", options=DENS, rejecting=bad)


def test_rejecting_is_ignored_for_other_answer_types():
    result = parse_answer("The premise is false.", answer_type="multi_choice", options=DENS, rejecting="D")
    assert result.method == "no_match"


def test_joint_parse_reads_the_rejection_too():
    choice, box = parse_answer_with_box("No such lesion exists, so there is no box.", answer_type="single_choice",
                                        options=DENS, rejecting="D", image_size=(100, 100))
    assert (choice.value, choice.method) == ("D", "premise_rejection")
    assert box.outcome == "unparseable"
