"""Single-choice and yes/no answers: one option letter (see the package docstring for the rules)."""
from __future__ import annotations

import re

from .letters import (
    LETTER_ALONE,
    WEAK_REVISIONS,
    YES_NO,
    Choices,
    Claim,
    blank,
    find_claims,
    find_mentions,
    index_of,
    item_letters,
    json_text,
    letter_of,
    phrase_or_abstention,
    scan_letters,
    tail_ok,
)
from .negation import negated, negated_after
from .normalise import QUOTES, find_abstention
from .premise import rejection
from .structured import find_json_answer
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
_ARTICLE = re.compile(r"(?:the|an?)[ \t]+", re.IGNORECASE)
# An answer that opens by ruling something out: "not B", "not malignant", "unlikely to be benign".
_LEAD_NEG = re.compile(
    r"(?:(?:definitely|certainly|probably|likely|most\s+likely)[ \t]+)?"
    r"(?:not|never|non|unlikely(?:[ \t]+to[ \t]+be)?|less[ \t]+likely|least[ \t]+likely|cannot[ \t]+be|can'?t[ \t]+be"
    r"|rather[ \t]+than|instead[ \t]+of|other[ \t]+than|excluding|exclude|rule[ \t]+out)(?![\w'])[ \t]*",
    re.IGNORECASE,
)
_LETTER_ITEM = re.compile(r"(?:(?i:option|choice)[ \t]+)?[\(\[]?[ \t]*(?P<L>[A-Z])[ \t]*[\)\]]?(?![\w'\-])")
# What may stand between a ruled-out option and the one given instead: "CT? No, MRI", "not B, but D".
_CORRECTION = re.compile(
    r"[ \t]*[,;.!:\-]*[ \t]*(?:(?:no|nope)(?![\w'])[ \t]*[,;.!:\-]*[ \t]*)?"
    r"(?:(?:but|it'?s|it[ \t]+is|rather|instead|actually|the[ \t]+answer[ \t]+is)(?![\w'])[ \t]*[,:]?[ \t]*)*",
    re.IGNORECASE,
)
# A revision after an answer phrase that names an option text ("Wait, actually spleen.").
_REVISE_TEXT = re.compile(
    r"(?<![A-Za-z])(?:actually|wait|correction|instead|on\s+second\s+thought|i\s+mean|scratch\s+that"
    r"|change\s+(?:it|that|this|my\s+answer)\s+to|switch\s+to)(?![\w'])[ \t]*[,:.!\-]*[ \t]*"
    r"(?:(?:no|it'?s|it\s+is|it\s+should\s+be|should\s+be|i\s+think|maybe|perhaps|probably|rather|make\s+that"
    r"|the|an?)(?![\w'])[ \t]*[,:]?[ \t]*)*",
    re.IGNORECASE,
)
_TEXT_ENDS = re.compile(r"[ \t]*(?:[.!,;)\]\n]|\Z)")


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
    revised = sorted({c.letter for c in find_claims(line)
                      if c.letter != letter and not c.negated and _conflicts(c, line, choices)})
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


def _option_at(text: str, pos: int, choices: Choices) -> tuple[int, int] | None:
    """(option index, end) of an option text at ``text[pos:]``, also after "the"/"a"/"an"."""
    hit = choices.prefix_match(text, pos)
    if hit is None:
        article = _ARTICLE.match(text, pos)
        if article is not None:
            hit = choices.prefix_match(text, article.end())
    return hit


def _ruled_out(c: str, pos: int, what: str, choices: Choices, nested: bool) -> ParsedAnswer:
    """``c`` rules out ``what`` up to ``pos``: the option given instead ("not B, but D", "CT? No, MRI"),
    else unparseable "no_match" (a ruled-out option is never the answer)."""
    if not nested:
        m = _CORRECTION.match(c, pos)
        rest = c[m.end():] if m else ""
        if rest and m.end() > pos:
            found = _content(rest, choices, nested=True)
            if found is not None and found.outcome == "answered":
                return answered(found.value, found.method, f"{clip(what)!r} ruled out; {found.detail}")
    return unparseable("no_match", f"the answer rules out {clip(what)!r}")


def _content(content: str, choices: Choices, nested: bool = False) -> ParsedAnswer | None:
    """What an answer phrase's content says; None when it names nothing (the phrase is then ignored).
    A letter -> "answer_phrase"; an option text or yes/no word at its start -> "answer_phrase_text";
    a ruled-out letter or option text ("not B", "benign? no", "unlikely to be benign") -> no_match,
    or the option given instead ("not B, but D")."""
    c = content.strip(QUOTES)
    if not c:
        return None
    alone = LETTER_ALONE.fullmatch(c)
    if alone:
        return letter_answer((alone.group(1).upper(),), False, "", choices, "answer_phrase", c)
    run = scan_letters(c)
    if run.letters:
        if len(set(run.letters)) == 1:
            neg_end = negated_after(c, run.end, letter=True)
            if neg_end is not None:
                return _ruled_out(c, neg_end, c[:run.end], choices, nested)
        if tail_ok(c[run.end:], run.letters, choices):
            return letter_answer(run.letters, run.saw_or, c[run.end:], choices, "answer_phrase", c)
    lead = _LEAD_NEG.match(c)
    if lead is not None:
        item = _LETTER_ITEM.match(c, lead.end())
        hit = _option_at(c, lead.end(), choices)
        end = hit[1] if hit is not None else item.end() if item is not None else None
        if end is not None:
            return _ruled_out(c, end, c[:end], choices, nested)
    hit = _option_at(c, 0, choices)
    if hit is not None:
        idx, end = hit
        neg_end = negated_after(c, end)
        if neg_end is not None:
            return _ruled_out(c, neg_end, c[:end], choices, nested)
        return answered(letter_of(idx), "answer_phrase_text", f"option text {clip(c)!r}")
    found = _yes_no(c, choices)
    if found is not None and found.outcome == "answered":
        return answered(found.value, "answer_phrase_text", found.detail)
    if found is not None:
        return found
    phrase = find_abstention(c)
    if phrase:
        return abstained(f"abstention {phrase!r} in the answer phrase")
    mentions = find_mentions(c, choices)
    if mentions and all(m.negated for m in mentions):
        texts = ", ".join(sorted({letter_of(m.index) for m in mentions}))
        return unparseable("no_match", f"the answer phrase only rules out option(s) {texts}")
    return None


def _revised_later(found: ParsedAnswer, content: str, rest: str, choices: Choices) -> ParsedAnswer:
    """An answer phrase's letter is ambiguous when a later text revises it (see ``_revisions``)."""
    others = _revisions(content + "\n" + rest, found.value, choices)
    if others:
        return unparseable("ambiguous", f"answer {found.value} revised later to {', '.join(others)}")
    return found


def _revisions(text: str, letter: str, choices: Choices) -> list[str]:
    """Other letters that ``text`` (what follows an answer) gives instead: "actually C", "wait, C", "C is
    correct" (not the hypothetical "C would be correct"), a line that is only "C", or "wait, actually
    <option C's text>"; none of them ruled out."""
    others = {c.letter for c in find_claims(text) if c.letter != letter and not c.negated and (
        c.kind == "alone" or (c.kind == "claim" and "would" not in text[c.start:c.end].lower())
        or (c.kind == "revision" and c.cue not in WEAK_REVISIONS))}
    for m in _REVISE_TEXT.finditer(text):
        hit = _option_at(text, m.end(), choices)
        if hit is not None and letter_of(hit[0]) != letter and _TEXT_ENDS.match(text, hit[1]) \
                and not negated(text, m.end(), hit[1]):
            others.add(letter_of(hit[0]))
    return sorted(others)


def _conflicts(claim: Claim, clean: str, choices: Choices) -> bool:
    """Whether a letter claimed after an opening letter contradicts it: a revision ("actually C",
    "or (C)"), "C is correct", another "C." line, or a marked letter followed by its own option text
    (an echoed option list). Explanations such as "option C would look brighter" do not count."""
    if claim.kind in ("revision", "claim", "line", "alone"):
        return True
    idx = choices.prefix(clean[claim.end:].lstrip(_LEAD_PUNCT))
    return idx is not None and letter_of(idx) == claim.letter


def _leading(clean: str, blanked: str, choices: Choices) -> ParsedAnswer | None:
    """A letter that opens the response: "B. text", "(B) text", "Option B", "B is correct", a first line
    that is only a letter, or "B: text" / "B text" where the text is option B's. An opening letter
    that is ruled out ("Option B is wrong", "(B) can be excluded") opens nothing."""
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
    if negated_after(clean, end, letter=True) is not None:
        return None
    result = letter_answer((letter,), False, clean[end:], choices, "letter_prefix", clean[:end])
    if result.outcome != "answered":
        return result
    claims = find_claims(blanked, end)
    others = sorted({c.letter for c in claims
                     if c.letter != letter and not c.negated and _conflicts(c, clean, choices)})
    if others:
        return unparseable("ambiguous", f"opens with {letter} but also claims {', '.join(others)}")
    return result


def _self_corrected(clean: str, choices: Choices) -> ParsedAnswer | None:
    """The whole response rules out one option text and gives another: "CT? No, MRI." -> MRI."""
    hit = _option_at(clean, 0, choices)
    if hit is None:
        return None
    neg_end = negated_after(clean, hit[1])
    if neg_end is None:
        return None
    m = _CORRECTION.match(clean, neg_end)
    idx = choices.exact(clean[m.end():]) if m else None
    if idx is None or idx == hit[0]:
        return None
    return answered(letter_of(idx), "option_text",
                    f"option {letter_of(hit[0])} ruled out, then option {letter_of(idx)}'s text: {clip(clean)!r}")


_OPENING_END = re.compile(
    r"[ \t]*(?:\n|\Z|[.!](?=\s|\Z)|,[ \t]*(?=(?i:because|since|as|given|due|which|with|based|according)\b))"
)


def _opening_text(clean: str, choices: Choices) -> ParsedAnswer | None:
    """The response opens with one option's text as its whole first line or sentence ("Hyperdense.\n…",
    "Hyperdense. The lesion is bright.", "Hyperdense, because …"), not ruled out and not revised later
    (a line that is another option's text, "actually C", "C is correct", "wait, <other text>")."""
    hit = _option_at(clean, 0, choices)
    if hit is None or choices.texts[hit[0]] in YES_NO:
        return None
    idx, end = hit
    m = _OPENING_END.match(clean, end)
    if m is None:
        return None
    letter = letter_of(idx)
    rest = clean[m.end():]
    others = {letter_of(i) for i in (choices.exact(line) for line in rest.split("\n")) if i is not None and i != idx}
    others.update(_revisions(rest, letter, choices))
    if others:
        shown = ", ".join(sorted(others))
        return unparseable("ambiguous", f"opens with option {letter}'s text but later gives {shown}")
    return answered(letter, "option_text", f"the response opens with option {letter}'s text {clip(clean[:end])!r}")


def json_choice(text: str, choices: Choices) -> ParsedAnswer | None:
    """A JSON answer (see structured.find_json_answer) read as one letter; None when there is none."""
    found = find_json_answer(text)
    if found is None:
        return None
    value, key = found.value, found.key
    if isinstance(value, bool):
        idx = choices.index("yes" if value else "no")
        if idx is None:
            return unparseable("no_match", f"JSON {key} is {str(value).lower()} but no option is yes/no")
        return answered(letter_of(idx), "json", f"JSON {key}: {str(value).lower()}")
    if isinstance(value, str):
        return json_text(value, key, choices, _content)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        letters = item_letters(value, choices)
        if not letters:
            return None if key == "list" else unparseable("no_match", f"JSON {key} {clip(str(value))!r} names "
                                                                      "no option")
        return letter_answer(tuple(letters), False, "", choices, "json", f"JSON {key}: {value}")
    return unparseable("no_match", f"JSON {key} holds {type(value).__name__}, not a letter or option text")


def _premise(result: ParsedAnswer, text: str, rejecting: str) -> ParsedAnswer:
    """With a rejecting option: a prose rejection of the premise reads as that option when nothing
    else answered; against a different answered letter only a strong rejection counts (-> ambiguous)."""
    if result.outcome == "answered" and result.value == rejecting:
        return result
    found = rejection(text)
    if found is None:
        return result
    phrase, strong = found
    if result.outcome == "answered":
        if strong:
            return unparseable("ambiguous", f"option {result.value} but the premise is rejected: {clip(phrase)!r}")
        return result
    return answered(rejecting, "premise_rejection", f"premise rejected: {clip(phrase)!r} -> option {rejecting}")


def parse_single(clean: str, choices: Choices, *, rejecting: str | None = None,
                 json_text: str | None = None) -> ParsedAnswer:
    """Parse a cleaned single_choice / yes_no response to one option letter. ``json_text``: where to
    look for a JSON answer (the joint parser passes the response before its boxes were blanked)."""
    result = _parse(clean, choices, clean if json_text is None else json_text)
    return result if rejecting is None else _premise(result, clean, rejecting)


def _parse(clean: str, choices: Choices, json_text: str) -> ParsedAnswer:
    found = json_choice(json_text, choices)
    if found is not None:
        return found
    first = phrase_or_abstention(clean, choices, _content, _revised_later)
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
    if idx is None and clean[:4].lower() == "the ":
        idx = choices.exact(clean[4:])  # "The liver." ("A liver" stays a letter question)
    if idx is not None:
        method = "yes_no_word" if choices.texts[idx] in YES_NO else "option_text"
        return answered(letter_of(idx), method, f"the whole answer is option {letter_of(idx)}'s text")
    found = _self_corrected(clean, choices) or _opening_text(clean, choices)
    if found is not None:
        return found
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
    """Marked letters ("(B)", "option B") inside running text; option texts there are never read as the
    answer (only to flag a letter whose text contradicts it)."""
    live = sorted({m.index for m in mentions if not m.negated})
    claims = find_claims(blanked)
    positive = [c for c in claims if not c.negated]
    if positive:
        letters = tuple(c.letter for c in positive)
        shown = blanked[positive[0].start:positive[0].end]
        result = letter_answer(letters, False, "", choices, "letter_mention", shown)
        if result.outcome == "answered" and live and index_of(result.value) not in live:
            texts = ", ".join(letter_of(i) for i in live)
            return unparseable("ambiguous", f"letter {result.value} but the text names option(s) {texts}")
        return result
    if claims:
        ruled = ", ".join(sorted({c.letter for c in claims}))
        return unparseable("no_match", f"letter(s) {ruled} only ruled out")
    if live:
        texts = ", ".join(letter_of(i) for i in live)
        return unparseable("no_match", f"option text(s) of {texts} only in running prose, not as the answer")
    if mentions:
        return unparseable("no_match", "option text appears only negated")
    return unparseable("no_match", f"no option letter, option text or yes/no word in {clip(clean)!r}")
