"""Single-choice and yes/no answers: one option letter (see the package docstring for the rules)."""
from __future__ import annotations

import re

from .letters import (
    LETTER_ALONE,
    YES_NO,
    Choices,
    Claim,
    blank,
    find_claims,
    find_mentions,
    index_of,
    letter_of,
    phrase_or_abstention,
    scan_letters,
    tail_ok,
)
from .normalise import QUOTES, find_abstention
from .types import ParsedAnswer, abstained, answered, clip, unparseable

_PREFIX = re.compile(
    r"(?i:option|choice)\b[ \t]*[:#]?[ \t]*[\(\[]?[ \t]*(?P<o>[A-Za-z])[ \t]*[\)\]]?(?![\w'\-])"
    r"|[\(\[][ \t]*(?P<p>[A-Z])[ \t]*[\)\]]"
    r"|(?P<d>[A-Z])[.)](?=\s|$)"
    r"|(?P<c>[A-Z])[ \t]+(?i:is|would\s+be|seems\s+to\s+be|appears\s+to\s+be)[ \t]+(?i:the[ \t]+)?"
    r"(?i:correct|right|best|most\s+likely|answer)\b"
)
_LETTER_THEN_TEXT = re.compile(r"(?P<t>[A-Z])(?:[ \t]*[:\-][ \t]*|[ \t]+)")
_YES_NO_WORD = re.compile(r"(yes|yeah|yep|yup|no|nope|nah)(?![\w'\-])", re.IGNORECASE)
_YES_NO_BOTH = re.compile(r"[ \t]*(?:/|,|or\b|and\b)[ \t]*(yes|no)(?![\w'\-])", re.IGNORECASE)
_YES_WORDS = frozenset({"yes", "yeah", "yep", "yup"})
_LEAD_PUNCT = " \t.:;,)]}-"
_QUOTED_LETTER = re.compile(r"\[[ \t]*['\"]([A-Za-z])['\"][ \t]*\]|['\"]([A-Za-z])['\"]")


def letter_answer(letters: tuple[str, ...], saw_or: bool, after: str, choices: Choices, method: str,
                  shown: str) -> ParsedAnswer:
    """One letter from a letter run: several distinct letters are ambiguous; the letter must be in
    range; the text right after it must not be a different option's text nor revise the letter."""
    distinct = sorted(set(letters))
    if len(distinct) > 1:
        joiner = " or " if saw_or else ", "
        return unparseable("ambiguous", f"several letters claimed: {joiner.join(distinct)} in {clip(shown)!r}")
    letter = distinct[0]
    if not choices.in_range(letter):
        return unparseable("letter_out_of_range", f"letter {letter} but only {choices.count} options")
    line = after.split("\n", 1)[0]
    other = choices.prefix(line.lstrip(_LEAD_PUNCT))
    if other is not None and other != index_of(letter):
        return unparseable("ambiguous", f"letter {letter} but the text {clip(line.strip(_LEAD_PUNCT))!r} "
                                        f"is option {letter_of(other)}")
    revised = sorted({c.letter for c in find_claims(line) if c.letter != letter and _conflicts(c, line, choices)})
    if revised:
        return unparseable("ambiguous", f"letter {letter} revised to {', '.join(revised)}")
    return answered(letter, method, f"{clip(shown)!r}")


def _yes_no(text: str, choices: Choices) -> ParsedAnswer | None:
    """A leading yes/no word ("Yes", "No, there is no lesion", "Nope") mapped to its option letter."""
    m = _YES_NO_WORD.match(text)
    if m is None:
        return None
    word = "yes" if m.group(1).lower() in _YES_WORDS else "no"
    idx = choices.index(word)
    if idx is None:
        return None
    both = _YES_NO_BOTH.match(text, m.end())
    if both and both.group(1).lower() != word:
        return unparseable("ambiguous", f"both yes and no in {clip(text[:both.end()])!r}")
    return answered(letter_of(idx), "yes_no_word", f"{m.group(1)!r} -> option {letter_of(idx)} ({word})")


def _content(content: str, choices: Choices) -> ParsedAnswer | None:
    """What an answer phrase's content says; None when it names nothing (the phrase is then ignored)."""
    c = content.strip(QUOTES)
    if not c:
        return None
    alone = LETTER_ALONE.fullmatch(c)
    if alone:
        return letter_answer((alone.group(1).upper(),), False, "", choices, "answer_phrase", c)
    run = scan_letters(c)
    if run.letters and tail_ok(c[run.end:], run.letters, choices):
        return letter_answer(run.letters, run.saw_or, c[run.end:], choices, "answer_phrase", c)
    idx = choices.prefix(c)
    if idx is not None:
        return answered(letter_of(idx), "answer_phrase", f"option text {clip(c)!r}")
    found = _yes_no(c, choices)
    if found is not None and found.outcome == "answered":
        return answered(found.value, "answer_phrase", found.detail)
    if found is not None:
        return found
    phrase = find_abstention(c)
    if phrase:
        return abstained(f"abstention {phrase!r} in the answer phrase")
    return None


def _conflicts(claim: Claim, clean: str, choices: Choices) -> bool:
    """Whether a letter claimed after an opening letter contradicts it: a revision ("actually C",
    "or (C)"), "C is correct", another "C." line, or a marked letter followed by its own option text
    (an echoed option list). Explanations such as "option C would look brighter" do not count."""
    if claim.kind in ("revision", "claim", "line"):
        return True
    idx = choices.prefix(clean[claim.end:].lstrip(_LEAD_PUNCT))
    return idx is not None and letter_of(idx) == claim.letter


def _leading(clean: str, blanked: str, choices: Choices) -> ParsedAnswer | None:
    """A letter that opens the response: "B. text", "(B) text", "Option B", "B is correct", a first line
    that is only a letter, or "B: text" / "B text" where the text is option B's."""
    first_line = clean.split("\n", 1)[0].strip(QUOTES)
    alone = LETTER_ALONE.fullmatch(first_line)
    if alone:
        letter, end = alone.group(1).upper(), len(clean.split("\n", 1)[0])
    else:
        m = _PREFIX.match(clean)
        if m is not None:
            letter, end = m.group(m.lastgroup).upper(), m.end()
        else:
            m = _LETTER_THEN_TEXT.match(clean)
            idx = choices.prefix(clean[m.end():]) if m else None
            if m is None or idx is None or letter_of(idx) != m.group("t"):
                return None
            letter, end = m.group("t"), m.end()
    result = letter_answer((letter,), False, clean[end:], choices, "letter_prefix", clean[:end])
    if result.outcome != "answered":
        return result
    claims = find_claims(blanked, end)
    others = sorted({c.letter for c in claims if c.letter != letter and _conflicts(c, clean, choices)})
    if others:
        return unparseable("ambiguous", f"opens with {letter} but also claims {', '.join(others)}")
    return result


def parse_single(clean: str, choices: Choices) -> ParsedAnswer:
    """Parse a cleaned single_choice / yes_no response to one option letter."""
    first = phrase_or_abstention(clean, choices, _content)
    if first is not None:
        return first
    alone = LETTER_ALONE.fullmatch(clean) or _QUOTED_LETTER.fullmatch(clean)
    if alone:
        letter = next(g for g in alone.groups() if g).upper()
        return letter_answer((letter,), False, "", choices, "letter_only", clean)
    run = scan_letters(clean, any_case=True)
    if run.letters and not clean[run.end:].strip(" .!\n") and len(run.letters) > 1:
        return letter_answer(run.letters, run.saw_or, "", choices, "letter_only", clean)
    idx = choices.exact(clean)
    if idx is not None:
        method = "yes_no_word" if choices.texts[idx] in YES_NO else "option_text"
        return answered(letter_of(idx), method, f"the whole answer is option {letter_of(idx)}'s text")
    mentions = find_mentions(clean, choices)
    blanked = blank(clean, mentions)
    found = _leading(clean, blanked, choices)
    if found is not None:
        return found
    phrase = find_abstention(blanked)
    if phrase:
        return abstained(f"abstention phrase {phrase!r}")
    found = _yes_no(clean, choices)
    if found is not None:
        return found
    return _in_sentences(clean, blanked, mentions, choices)


def _in_sentences(clean: str, blanked: str, mentions: list, choices: Choices) -> ParsedAnswer:
    """Marked letters ("(B)", "option B") or option texts inside running text."""
    live = sorted({m.index for m in mentions if not m.negated})
    claims = find_claims(blanked)
    if claims:
        letters = tuple(c.letter for c in claims)
        shown = blanked[claims[0].start:claims[0].end]
        result = letter_answer(letters, False, "", choices, "letter_mention", shown)
        if result.outcome == "answered" and live and index_of(result.value) not in live:
            texts = ", ".join(letter_of(i) for i in live)
            return unparseable("ambiguous", f"letter {result.value} but the text names option(s) {texts}")
        return result
    if len(live) == 1:
        m = next(m for m in mentions if m.index == live[0] and not m.negated)
        return answered(letter_of(live[0]), "option_text", f"option text {clean[m.start:m.end]!r}")
    if len(live) > 1:
        return unparseable("ambiguous", f"texts of options {', '.join(letter_of(i) for i in live)} all appear")
    if mentions:
        return unparseable("no_match", "option text appears only negated")
    return unparseable("no_match", f"no option letter, option text or yes/no word in {clip(clean)!r}")
