"""Negated and hedged mentions: the cues before or after an option text or a letter that rule it out
("not malignant", "does not appear to be benign", "unlikely to be benign", "Benign? No.", "B is wrong",
"(B) can be excluded"). A ruled-out option is never selected.

The regexes are compiled once; the "before" test only looks at the 80 characters before a mention and the
"after" test is anchored at its end, so both are cheap and linear.
"""
from __future__ import annotations

import re

#: Words and phrases that negate or hedge against what follows them (in the same clause).
CUES = (
    r"not|no(?![ \t]+(?:doubt|question|matter)\b)|non|never|nor|neither|without|none[ \t]+of"
    r"|(?:isn|aren|wasn|weren|doesn|don|didn|couldn|wouldn|shouldn|hasn|haven|won)'?t|can'?t|cannot"
    r"|unlikely|improbable|doubtful|implausible|less[ \t]+likely|least[ \t]+likely"
    r"|rather[ \t]+than|instead[ \t]+of|other[ \t]+than|unlike|except|excluding|exclude[sd]?"
    r"|rule[sd]?[ \t]+out|ruling[ \t]+out|eliminate[sd]?|against|absence[ \t]+of|absent|lack[ \t]+of|lacks?"
    r"|lacking|free[ \t]+of|negative[ \t]+for|inconsistent[ \t]+with"
)
# A clause ends at punctuation, a bracket, a line break or a contrasting conjunction.
_GAP = r"[^\w.,;:!?()\[\]\n]+"
_BREAK = r"(?:but|however|although|though|yet|whereas|while)\b"


def _before(words: int) -> re.Pattern:
    return re.compile(
        rf"(?<![\w'])(?:{CUES})(?![\w'])(?:{_GAP}(?!{_BREAK})[\w'-]+){{0,{words}}}[^\w.,;:!?()\[\]\n]*\Z",
        re.IGNORECASE,
    )


#: A cue up to six words before an option text ("there is no cyst in the spleen", "does not appear to be").
_BEFORE_TEXT = _before(6)
#: A cue up to two words before a letter ("not B", "rather than option B", "rule out (B)").
_BEFORE_LETTER = _before(2)
_REACH = 80

_AFTER_COMMON = (
    r"[\)\]]?[ \t]*(?:[\(\[][ \t]*[A-Za-z][ \t]*[\)\]][ \t]*)?"
    r"(?:\?"
    r"|(?:is|are|was|were|seems?|appears?|looks?|remains?|would[ \t]+be|will[ \t]+be)[ \t]+"
    r"(?:(?:also|probably|definitely|clearly|certainly|very|much|far|quite|therefore|thus|then|highly)[ \t]+)?"
    r"(?:not\b|unlikely|less[ \t]+likely|improbable|implausible|excluded|ruled[ \t]+out|wrong|incorrect|false"
    r"|doubtful|inconsistent|eliminated)"
    r"|(?:can|could|should|may|must|will)[ \t]+(?:safely[ \t]+)?(?:be[ \t]+)?"
    r"(?:excluded|ruled[ \t]+out|eliminated|discarded|dismissed)"
    r"|(?:has|have|had)[ \t]+been[ \t]+(?:excluded|ruled[ \t]+out|eliminated)"
    r"|[,:(\-][ \t]*(?:unlikely|excluded|ruled[ \t]+out|incorrect|wrong)\b"
    r"|(?:unlikely|excluded|ruled[ \t]+out|incorrect|wrong)\b"
)
#: A predicate right after an option text that rules it out ("? ", "is wrong", "is unlikely", "can be
#: excluded", "does not fit").
_AFTER = re.compile(_AFTER_COMMON + r"|(?:isn|aren|wasn|weren|doesn|don|didn)'?t\b|(?:does|do|did)[ \t]+not\b)",
                    re.IGNORECASE)
#: The same after a letter, without "don't"/"does not" ("I don't know" is no letter I ruled out).
_AFTER_LETTER = re.compile(_AFTER_COMMON + ")", re.IGNORECASE)


def negated_before(text: str, start: int, *, letter: bool = False) -> bool:
    """Whether a negating or hedging cue precedes ``text[start:]`` in the same clause."""
    pattern = _BEFORE_LETTER if letter else _BEFORE_TEXT
    return pattern.search(text[max(0, start - _REACH):start]) is not None


def negated_after(text: str, end: int, *, letter: bool = False) -> int | None:
    """The end of a ruling-out predicate right after ``text[:end]`` ("? ", "is wrong", "is unlikely",
    "can be excluded", "(D) is less likely"), or None."""
    m = (_AFTER_LETTER if letter else _AFTER).match(text, end)
    return m.end() if m else None


def negated(text: str, start: int, end: int, *, letter: bool = False) -> bool:
    """Whether the mention ``text[start:end]`` is ruled out by a cue before or a predicate after it."""
    return negated_before(text, start, letter=letter) or negated_after(text, end, letter=letter) is not None
