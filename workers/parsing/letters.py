"""Option letters and option texts inside a response: the option table, letter scanning, letter claims
in sentences and option-text mentions."""
from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .negation import negated, negated_before
from .normalise import QUOTES, answer_phrase_contents, norm_options, norm_text, whole_abstention
from .types import ParsedAnswer, abstained, answered, clip, unparseable

LETTERS = string.ascii_uppercase
YES_NO = ("yes", "no")


@dataclass(frozen=True)
class Choices:
    """The options of a question, normalised; letters are A, B, C, … in this order."""

    texts: tuple[str, ...]

    @classmethod
    def of(cls, options: Sequence[str]) -> Choices:
        return _choices(tuple("" if o is None else str(o) for o in options[: len(LETTERS)]))

    @property
    def count(self) -> int:
        """How many letters are valid: one per option, or A–Z when no options are known."""
        return len(self.texts) or len(LETTERS)

    def in_range(self, letter: str) -> bool:
        return LETTERS.index(letter) < self.count

    def index(self, word: str) -> int | None:
        """The option whose normalised text is ``word`` (first one), or None."""
        try:
            return self.texts.index(word)
        except ValueError:
            return None

    def exact(self, text: str) -> int | None:
        """The option whose text equals the whole ``text`` (normalised)."""
        norm = norm_text(text)
        return self.index(norm) if norm else None

    def prefix(self, text: str) -> int | None:
        """The option whose text (the longest one) starts ``text``, ending at a word boundary (a hyphen
        is not one: "benign-appearing" does not start with "benign")."""
        found = self.prefix_match(text)
        return found[0] if found else None

    def prefix_match(self, text: str, pos: int = 0) -> tuple[int, int] | None:
        """(option index, end) of the option text (the longest one) at ``text[pos:]``, or None."""
        if not self.texts or len(text) <= pos or not text[pos].isalnum():
            return None  # nothing to match (the common "A" answer): skip compiling the option regex
        pattern, names = option_alternation(self.texts)
        if pattern is None:
            return None
        m = pattern.match(text, pos)
        return (names[m.lastgroup], m.end()) if m else None


@lru_cache(maxsize=8192)
def _choices(options: tuple[str, ...]) -> Choices:
    """Normalising options is most of the cost of parsing a one-letter answer; runs repeat them."""
    return Choices(norm_options(list(options)))


def letter_of(index: int) -> str:
    return LETTERS[index]


def index_of(letter: str) -> int:
    return LETTERS.index(letter)


def _words_pattern(norm: str) -> str:
    return r"\s+".join(re.escape(w) for w in norm.split())


@lru_cache(maxsize=8192)
def option_alternation(texts: tuple[str, ...]) -> tuple[re.Pattern | None, dict[str, int]]:
    """One regex matching any option text (longest first) with word boundaries (a hyphen is not a
    boundary: "non-malignant" never contains "malignant"); group name -> index."""
    order = sorted((i for i, t in enumerate(texts) if t), key=lambda i: (-len(texts[i]), i))
    seen: set[str] = set()
    parts, names = [], {}
    for i in order:
        if texts[i] in seen:
            continue
        seen.add(texts[i])
        names[f"o{i}"] = i
        parts.append(rf"(?P<o{i}>{_words_pattern(texts[i])})")
    if not parts:
        return None, {}
    return re.compile(r"(?<![\w-])(?:" + "|".join(parts) + r")(?![\w-])", re.IGNORECASE), names


@lru_cache(maxsize=1024)
def _mention_pattern(norm: str) -> re.Pattern:
    return re.compile(rf"(?<![\w-]){_words_pattern(norm)}(?![\w-])", re.IGNORECASE)


# -- letter scanning ------------------------------------------------------------------------------
_TOKEN_UPPER = re.compile(
    r"[ \t]*(?:(?P<sep>[,;&+/]|(?i:and|or)\b)[ \t]*)?(?P<open>[\(\[])?[ \t]*(?P<L>[A-Z])[ \t]*(?P<close>[\)\]])?"
    r"(?![\w'\-])"
)
_TOKEN_ANY = re.compile(
    r"[ \t]*(?:(?P<sep>[,;&+/]|(?i:and|or)\b)[ \t]*)?(?P<open>[\(\[])?[ \t]*(?P<L>[A-Za-z])[ \t]*(?P<close>[\)\]])?"
    r"(?![\w'\-])"
)
LETTER_ALONE = re.compile(r"[\(\[\{<]?[ \t]*([A-Za-z])[ \t]*[\)\]\}>]?[ \t]*[.:!]?")


_MAX_RUN = 64


@dataclass(frozen=True)
class LetterRun:
    letters: tuple[str, ...]
    end: int
    saw_or: bool


def scan_letters(text: str, start: int = 0, *, any_case: bool = False) -> LetterRun:
    """Letters at ``text[start:]`` as a list ("A", "(A)(C)", "A, C", "A and C", "A or B", "A C"); the
    scan stops after 64 letters (a longer run is junk and leaves unscanned text behind)."""
    token = _TOKEN_ANY if any_case else _TOKEN_UPPER
    letters: list[str] = []
    pos, saw_or = start, False
    while len(letters) < _MAX_RUN:
        m = token.match(text, pos)
        if m is None or (not letters and m.group("sep")):
            break
        sep = (m.group("sep") or "").lower()
        saw_or = saw_or or sep == "or"
        letters.append(m.group("L").upper())
        pos = m.end()
    return LetterRun(tuple(letters), pos, saw_or)


_TAIL_OK = re.compile(
    r"[ \t]*(?:\n|$|[.,;:!?)\]}(\-]|(?i:because|since|as|given|due|which|with|based|according)\b"
    r"|(?i:is|are|would\s+be|seems?\s+to\s+be)\s+(?i:the\s+)?(?i:correct|right|true|best|answers?|present)\b)"
)


def tail_ok(tail: str, letters: Sequence[str], choices: Choices) -> bool:
    """Whether the text after a letter (list) ends it cleanly: end, punctuation, a connector such as
    "because", "is correct", or the text of that very option ("B hypodense")."""
    if _TAIL_OK.match(tail):
        return True
    if len(set(letters)) == 1:
        idx = choices.prefix(tail.lstrip())
        return idx is not None and letter_of(idx) == letters[0]
    return False


# -- letter claims in sentences -------------------------------------------------------------------
_REVISION_WORDS = r"actually|or|instead|rather|correction|wait|change\s+to|switch\s+to"
_CLAIM = re.compile(
    r"(?:(?<![A-Za-z])(?i:option|choice)\b[ \t]*[:#]?[ \t]*|(?<![\w'\-]))[\(\[]?[ \t]*(?P<c>[A-Z])[ \t]*[\)\]]?"
    r"[ \t]+(?i:is|would\s+be|seems\s+to\s+be|appears\s+to\s+be)[ \t]+(?i:the[ \t]+)?"
    r"(?i:correct|right|best|most\s+likely|answer)\b"
    r"|[\(\[][ \t]*(?P<p>[A-Z])[ \t]*[\)\]]"
    r"|(?<![A-Za-z])(?i:option|choice)\b[ \t]*[:#]?[ \t]*[\(\[]?[ \t]*(?P<o>[A-Z])(?![\w'\-])"
    r"|^[ \t]*(?P<l>[A-Z])[.)](?=\s|$)"
    r"|^[ \t]*[\(\[]?(?P<a>[A-Z])[\)\]]?[ \t]*[.:]?[ \t]*$"
    r"|(?<![A-Za-z])(?P<rc>(?i:" + _REVISION_WORDS + r"))[ \t]*[,:]?[ \t]*"
    r"(?:(?i:maybe|perhaps|possibly|probably|even)[ \t]+)?[\(\[]?(?P<r>[A-Z])[\)\]]?(?=[ \t]*(?:[.,;:!?)\]]|$))",
    re.MULTILINE,
)
_KINDS = (("c", "claim"), ("p", "paren"), ("o", "option"), ("l", "line"), ("a", "alone"), ("r", "revision"))
#: Revision words too weak to overturn an answer given earlier ("brighter than A or B.").
WEAK_REVISIONS = frozenset({"or", "rather"})


@dataclass(frozen=True)
class Claim:
    letter: str
    start: int
    end: int
    kind: str  # "claim" ("B is correct"), "paren", "option", "line" ("B." at a line start), "alone", "revision"
    negated: bool = False  # ruled out: "not (B)", "option B is wrong", "(B) can be excluded", "(B)?"
    cue: str = ""  # the revision word of a "revision" claim


def find_claims(text: str, start: int = 0) -> list[Claim]:
    """Clearly marked letters in running text (from ``start``): "(B)", "[B]", "option B", "B." at a
    line start, a line that is only a letter, "B is correct" (also "option B is right"), and revisions
    such as "actually C" / "or maybe (C)". A letter with a negating cue before it ("not", "rather than",
    "rule out") or a ruling-out predicate after it ("is wrong", "can be excluded", "?") is ``negated``."""
    claims = []
    for m in _CLAIM.finditer(text, start):
        kind, group = next((k, g) for g, k in _KINDS if m.group(g) is not None)
        if kind == "claim":  # "B is correct": only a cue before it can rule it out ("not that B is correct")
            neg = negated_before(text, m.start(), letter=True)
        else:
            neg = negated(text, m.start(), m.end(), letter=True)
        cue = (m.group("rc") or "").lower() if kind == "revision" else ""
        claims.append(Claim(m.group(group), m.start(), m.end(), kind, neg, cue))
    return claims


# -- option-text mentions -------------------------------------------------------------------------
@dataclass(frozen=True)
class Mention:
    index: int
    start: int
    end: int
    negated: bool


def find_mentions(text: str, choices: Choices, *, skip_yes_no: bool = True) -> list[Mention]:
    """Whole-word, case-insensitive occurrences of option texts (a hyphen is not a word boundary); a
    mention inside a longer option's mention is dropped, and one that is negated or hedged against
    (see ``negation``: "not", "no", "unlikely to be", "rather than", "… is wrong", "…?") is marked."""
    raw: list[tuple[int, int, int]] = []
    seen: set[str] = set()
    for i, norm in enumerate(choices.texts):
        if not norm or norm in seen or (skip_yes_no and norm in YES_NO):
            continue
        seen.add(norm)
        raw.extend((m.start(), m.end(), i) for m in _mention_pattern(norm).finditer(text))
    raw.sort(key=lambda t: (t[0], -(t[1] - t[0])))
    kept: list[Mention] = []
    cover_end = -1
    for start, end, i in raw:
        if end <= cover_end:
            continue
        kept.append(Mention(i, start, end, negated(text, start, end)))
        cover_end = max(cover_end, end)
    return kept


def blank(text: str, spans: Sequence[Mention]) -> str:
    """``text`` with the given spans replaced by spaces (positions are kept)."""
    if not spans:
        return text
    parts, pos = [], 0
    for s in sorted(spans, key=lambda m: m.start):
        if s.start < pos:
            continue
        parts.append(text[pos:s.start])
        parts.append(" " * (s.end - s.start))
        pos = s.end
    parts.append(text[pos:])
    return "".join(parts)


_ITEM_TEXT = re.compile(r"[\(\[]?[ \t]*(?P<L>[A-Z])[ \t]*[.):\]][ \t]*(?P<rest>.+)")


def item_letters(items: Sequence[str], choices: Choices) -> list[str] | None:
    """The letters of list items that are each a letter ("B", "(b)"), an option's exact text, or
    "B. <option B's text>"; None when any item is something else."""
    out = []
    for item in items:
        text = item.strip(QUOTES)
        alone = LETTER_ALONE.fullmatch(text)
        if alone:
            out.append(alone.group(1).upper())
            continue
        idx = choices.exact(text)
        if idx is None:
            m = _ITEM_TEXT.fullmatch(text)
            if m is None or choices.exact(m.group("rest")) != index_of(m.group("L")):
                return None
            idx = index_of(m.group("L"))
        out.append(letter_of(idx))
    return out


def phrase_or_abstention(clean: str, choices: Choices, read_content, after=None) -> ParsedAnswer | None:
    """The first rules of every choice type: the last answer phrase that names something (read by
    ``read_content``; an answered one is passed to ``after(found, content, rest_of_text, choices)``,
    which may overrule it), else a response that is wholly an abstention (unless it is an option text)."""
    for _pos, content, end in reversed(answer_phrase_contents(clean)):
        found = read_content(content, choices)
        if found is None:
            continue
        if after is not None and found.outcome == "answered":
            found = after(found, content, clean[end:], choices)
        return found
    phrase = whole_abstention(clean)
    if phrase and choices.exact(clean) is None:
        return abstained(f"the answer is {phrase!r}")
    return None


def json_text(value: str, key: str, choices: Choices, read_content) -> ParsedAnswer:
    """A JSON answer's string value ({"answer": "B"}, {"answer": "liver"}) read as an answer phrase's
    content (by ``read_content``), the method then being "json"."""
    read = read_content(value, choices)
    if read is None:
        return unparseable("no_match", f"JSON {key} {clip(value)!r} names no option")
    if read.outcome != "answered":
        return read
    return answered(read.value, "json", f"JSON {key}: {clip(value)!r}")
