"""Multi-choice answers: a sorted list of unique option letters (see the package docstring)."""
from __future__ import annotations

import re

from .letters import (
    LETTER_ALONE,
    LETTERS,
    Choices,
    index_of,
    item_letters,
    json_text,
    letter_of,
    option_alternation,
    phrase_or_abstention,
    scan_letters,
    tail_ok,
)
from .normalise import QUOTES, find_abstention
from .structured import find_json_answer
from .types import ParsedAnswer, abstained, answered, clip, unparseable

_NONE = re.compile(
    r"(?:none(?:[ \t]+of[ \t]+(?:the[ \t]+)?(?:above|listed|given|options|choices|answers|them|these|those))?"
    r"|no[ \t]+(?:correct[ \t]+|right[ \t]+|valid[ \t]+)?(?:options?|answers?|choices?)"
    r"|neither(?:[ \t]+of[ \t]+(?:them|these|those))?|nothing)"
    r"(?:[ \t]+(?:findings?|options?|choices?|answers?|statements?))?"
    r"(?:[ \t]+(?:is|are|was|were|applies|apply|applicable|correct|right|true|present|selected|of[ \t]+these))*"
    r"[ \t]*[.!]?",
    re.IGNORECASE,
)
_ITEM_SPLIT = re.compile(r"\n|;|,|&|(?<![A-Za-z])and(?![A-Za-z])", re.IGNORECASE)
_ITEM = re.compile(r"(?:[\(\[][ \t]*(?P<p>[A-Z])[ \t]*[\)\]]|(?P<d>[A-Z])[.):]?)(?:[ \t]+(?P<rest>.+))?")
_OPTION_SEP = re.compile(r"[ \t]*(?:[,;&+/\n]|(?i:and|or)(?![A-Za-z]))[ \t]*|[ \t]+(?=\n)")
_QUOTED_LIST = re.compile(r"\[[ \t]*['\"]?[A-Za-z]['\"]?(?:[ \t]*,[ \t]*['\"]?[A-Za-z]['\"]?)*[ \t]*\]")
_CONCAT = re.compile(r"[A-Z]{2,26}")
_LEADING_WORD = re.compile(r"(?i:the[ \t]+)?(?i:options?|choices?|letters?)[ \t]+")
_CLAIM_TAIL = re.compile(r"[ \t]+(?i:is|are)[ \t]+(?i:the[ \t]+)?(?i:correct|right|true|answers?|present)\b")


def _letters_answer(letters: tuple[str, ...] | list[str], saw_or: bool, choices: Choices, method: str,
                    shown: str) -> ParsedAnswer:
    distinct = sorted(set(letters))
    if saw_or and len(distinct) > 1:
        return unparseable("ambiguous", f"alternatives, not a selection: {clip(shown)!r}")
    bad = [x for x in distinct if not choices.in_range(x)]
    if bad:
        return unparseable("letter_out_of_range", f"letter(s) {', '.join(bad)} but only {choices.count} options")
    return answered(distinct, method, f"{clip(shown)!r}")


def _items(text: str, choices: Choices) -> ParsedAnswer | None:
    """Items separated by newlines/commas/"and": each a letter, "(B)", "B." or "B. <option B's text>"."""
    parts = [p.strip(" \t.") for p in _ITEM_SPLIT.split(text)]
    parts = [p for p in parts if p]
    if not parts or len(parts) > len(LETTERS):
        return None
    letters = []
    for part in parts:
        m = _ITEM.fullmatch(part)
        if m is None:
            return None
        letter = m.group("p") or m.group("d")
        rest = m.group("rest")
        if rest:
            idx = choices.exact(rest)
            if idx is None:
                return None
            if idx != index_of(letter):
                return unparseable("ambiguous", f"letter {letter} but the text {clip(rest)!r} is option "
                                                f"{letter_of(idx)}")
        letters.append(letter)
    return _letters_answer(letters, False, choices, "letter_list", text)


def _option_list(text: str, choices: Choices) -> ParsedAnswer | None:
    """Option texts separated by commas, semicolons, "and", "&", "/" or newlines (the whole text)."""
    pattern, names = option_alternation(choices.texts)
    if pattern is None:
        return None
    s = text.rstrip(" \t\n.!")
    pos, picked, saw_or = 0, [], False
    while True:
        m = pattern.match(s, pos)
        if m is None:
            return None
        picked.append(names[m.lastgroup])
        pos = m.end()
        if pos >= len(s):
            break
        sep = _OPTION_SEP.match(s, pos)
        if sep is None or sep.end() == pos:
            return None
        saw_or = saw_or or sep.group(0).strip().lower() == "or"
        pos = sep.end()
    return _letters_answer([letter_of(i) for i in picked], saw_or, choices, "option_text", text)


def _whole(text: str, choices: Choices, method_letters: str) -> ParsedAnswer | None:
    """Whole-text forms: none, a letter list, concatenated letters ("ACD"), items, option texts."""
    if _QUOTED_LIST.fullmatch(text):
        text = text.replace("'", "").replace('"', "")
    idx = choices.exact(text)
    if idx is not None:
        return answered([letter_of(idx)], "option_text", f"the whole answer is option {letter_of(idx)}'s text")
    if _NONE.fullmatch(text):
        return answered([], "none_selected", f"{clip(text)!r}")
    alone = LETTER_ALONE.fullmatch(text)
    if alone:
        return _letters_answer([alone.group(1).upper()], False, choices, method_letters, text)
    run = scan_letters(text, any_case=True)
    if run.letters and not text[run.end:].strip(" \t\n.!"):
        return _letters_answer(run.letters, run.saw_or, choices, method_letters, text)
    bare = text.strip(" \t\n.!")
    if _CONCAT.fullmatch(bare) and len(set(bare)) == len(bare) and all(choices.in_range(x) for x in bare):
        return _letters_answer(list(bare), False, choices, method_letters, text)
    found = _items(text, choices)
    if found is not None:
        return found if found.outcome != "answered" else answered(found.value, method_letters, found.detail)
    return _option_list(text, choices)


def _content(content: str, choices: Choices) -> ParsedAnswer | None:
    c = content.strip(QUOTES)
    if not c:
        return None
    found = _whole(c, choices, "answer_phrase")
    if found is None:
        none = _NONE.match(c)
        if none and (none.end() == len(c) or not c[none.end()].isalnum()):
            found = answered([], "none_selected", f"{clip(c)!r}")
    if found is None:
        run = scan_letters(c)
        if run.letters and tail_ok(c[run.end:], run.letters, choices):
            found = _letters_answer(run.letters, run.saw_or, choices, "answer_phrase", c)
    if found is not None:
        if found.outcome == "answered" and found.method == "option_text":
            return answered(found.value, "answer_phrase_text", found.detail)
        if found.outcome == "answered" and found.method != "none_selected":
            return answered(found.value, "answer_phrase", found.detail)
        return found
    phrase = find_abstention(c)
    if phrase:
        return abstained(f"abstention {phrase!r} in the answer phrase")
    return None


def json_multi(text: str, choices: Choices) -> ParsedAnswer | None:
    """A JSON answer (see structured.find_json_answer) read as a letter list; None when there is none."""
    found = find_json_answer(text)
    if found is None:
        return None
    value, key = found.value, found.key
    if isinstance(value, str):
        return json_text(value, key, choices, _content)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        letters = item_letters(value, choices)
        if letters is None:
            return None if key == "list" else unparseable("no_match", f"JSON {key} {clip(str(value))!r} is not "
                                                                      "a list of letters or option texts")
        return _letters_answer(letters, False, choices, "json", f"JSON {key}: {value}")
    if key == "list":
        return None
    return unparseable("no_match", f"JSON {key} holds {type(value).__name__}, not letters or option texts")


def parse_multi(clean: str, choices: Choices) -> ParsedAnswer:
    """Parse a cleaned multi_choice response to a sorted list of unique letters."""
    found = json_multi(clean, choices)
    if found is not None:
        return found
    first = phrase_or_abstention(clean, choices, _content)
    if first is not None:
        return first
    found = _whole(clean, choices, "letter_list")
    if found is not None:
        return found
    first_line = clean.split("\n", 1)[0]
    run = scan_letters(first_line)
    if run.letters and "\n" in clean and not first_line[run.end:].strip(" \t.!"):
        return _letters_answer(run.letters, run.saw_or, choices, "letter_list", first_line)
    lead = _LEADING_WORD.match(clean)
    start = lead.end() if lead else 0
    run = scan_letters(clean, start)
    if run.letters and (_CLAIM_TAIL.match(clean, run.end) or not clean[run.end:].strip(" \t.!")):
        return _letters_answer(run.letters, run.saw_or, choices, "letter_list", clean[: run.end])
    phrase = find_abstention(clean)
    if phrase:
        return abstained(f"abstention phrase {phrase!r}")
    return unparseable("no_match", f"no letter list, option texts or 'none' in {clip(clean)!r}")
