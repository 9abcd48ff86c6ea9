"""Clean-up shared by every answer type: reasoning blocks, markdown, quotes, answer phrases, abstentions.

Every regex here is compiled once and is linear in the input (no nested quantifiers over the same
characters), so a 100 kB answer is handled in milliseconds.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

#: Characters stripped from both ends of a response (whitespace and quotes).
QUOTES = " \t\r\n\"'`"

# -- reasoning blocks -------------------------------------------------------------------------------
_THINK_OPEN = re.compile(r"<\s*(think|thinking|reasoning)\s*>", re.IGNORECASE)
_THINK_CLOSE = {tag: re.compile(rf"<\s*/\s*{tag}\s*>", re.IGNORECASE) for tag in ("think", "thinking", "reasoning")}
_ANY_CLOSE = re.compile(r"<\s*/\s*(?:think|thinking|reasoning)\s*>", re.IGNORECASE)

# -- markup ----------------------------------------------------------------------------------------
_ANSWER_TAG_OPEN = re.compile(r"<\s*answer\s*>", re.IGNORECASE)
_ANSWER_TAG_CLOSE = re.compile(r"<\s*/\s*answer\s*>", re.IGNORECASE)
_LATEX_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\s*\{([^{}\n]{0,200})\}")
_LATEX_BOXED = re.compile(r"\\boxed\s*\{([^{}\n]{0,200})\}")
_FENCE = re.compile(r"```[A-Za-z0-9_+.\-]*")
_HTML_SHORT = {tag: re.compile(rf"<\s*/?\s*{tag}\s*>", re.IGNORECASE) for tag in ("b", "i", "u")}
_HTML_SHORT_CLOSE = {tag: re.compile(rf"<\s*/\s*{tag}\s*>", re.IGNORECASE) for tag in ("b", "i", "u")}
_HTML_TAG = re.compile(r"</?\s*(?:strong|em|p|br|span|mark)\s*/?>", re.IGNORECASE)
_EMPHASIS_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])")
_LINE_MARKUP = re.compile(r"^[ \t]*(?:#{1,6}[ \t]*|>[ \t]?|[-*•+][ \t]+)", re.MULTILINE)
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
_MANY_NEWLINES = re.compile(r"\n{3,}")
_CHAR_MAP = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-", "\r": "\n"})


def strip_reasoning(text: str) -> str:
    """Drop ``<think>…</think>`` blocks (and ``thinking``/``reasoning``); an unclosed block runs to the
    end; text before an orphan closing tag is reasoning too."""
    out: list[str] = []
    pos = 0
    while True:
        m = _THINK_OPEN.search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        out.append(text[pos:m.start()])
        close = _THINK_CLOSE[m.group(1).lower()].search(text, m.end())
        if close is None:
            break
        pos = close.end()
    result = "".join(out)
    last = None
    for last in _ANY_CLOSE.finditer(result):
        pass
    return result[last.end():] if last is not None else result


def preprocess(text: str) -> str:
    """Normalise a raw model response for parsing (see the package docstring, "Preprocessing")."""
    text = unicodedata.normalize("NFKC", text).translate(_CHAR_MAP)
    text = strip_reasoning(text)
    text = _ANSWER_TAG_OPEN.sub("\nAnswer: ", text)
    text = _ANSWER_TAG_CLOSE.sub("\n", text)
    text = _LATEX_TEXT.sub(r"\1", text)
    text = _LATEX_BOXED.sub(r"\nAnswer: \1\n", text)
    text = _FENCE.sub("\n", text)
    for tag, pattern in _HTML_SHORT.items():  # <b>, <i>, <u> only when closed somewhere: "<B>" may be a letter
        if _HTML_SHORT_CLOSE[tag].search(text):
            text = pattern.sub("", text)
    text = _HTML_TAG.sub("", text)
    text = text.replace("`", "").replace("*", "").replace("$", "")
    text = _EMPHASIS_UNDERSCORE.sub("", text)
    text = _LINE_MARKUP.sub("", text)
    text = _SPACES.sub(" ", text)
    text = _MANY_NEWLINES.sub("\n\n", text)
    return text.strip(QUOTES)


# -- answer phrases --------------------------------------------------------------------------------
_COPULA = r"(?:is|are|was|would\s+be|will\s+be|should\s+be|must\s+be|seems\s+to\s+be|appears\s+to\s+be)"
_PHRASE = re.compile(
    r"(?<![A-Za-z])(?:answers?|responses?)(?:\s+to\s+(?:the|this)\s+question)?"
    r"(?:\s+" + _COPULA + r"\b\s*[:\-]?|\s*(?:[:=]|->|→|-(?=\s)))"
    r"|(?<![A-Za-z])(?:correct|right|best|final|selected|chosen|my|most\s+likely|appropriate)\s+"
    r"(?:options?|choices?|selections?|letters?)(?:\s+" + _COPULA + r"\b\s*[:\-]?|\s*[:=])"
    r"|(?<![A-Za-z])i(?:\s+would|\s+will|'d|'ll)?\s+(?:choose|select|pick|go\s+with)\b\s*:?",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"(?:(?:i\s+(?:think|believe|guess)|probably|most\s+likely|likely|perhaps|maybe)(?:\s+that)?\s*,?\s*"
    r"|(?:it'?s|it\s+is|it\s+would\s+be|that\s+is|this\s+is)\s+)+",
    re.IGNORECASE,
)
_CONTENT_CAP = 400
#: Only the last this-many answer phrases of a response are examined (bounds the work on junk).
PHRASES_EXAMINED = 32


def answer_phrase_contents(text: str, last: int = PHRASES_EXAMINED) -> list[tuple[int, str]]:
    """(position, content) of the last ``last`` explicit answer phrases, in order. The content runs to
    the end of the line (the next non-empty line when the phrase ends its line), capped at 400
    characters, with leading hedges ("I think", "it is") removed."""
    matches = list(_PHRASE.finditer(text))[-last:]
    found: list[tuple[int, str]] = []
    for m in matches:
        end = text.find("\n", m.end())
        content = text[m.end(): end if end >= 0 else len(text)][:_CONTENT_CAP].strip(QUOTES).lstrip(":, ")
        if not content and end >= 0:
            rest = text[end: end + _CONTENT_CAP + 64].lstrip()
            content = rest.split("\n", 1)[0][:_CONTENT_CAP].strip(QUOTES)
        hedge = _HEDGE.match(content)
        if hedge:
            content = content[hedge.end():].strip(QUOTES).lstrip(":, ")
        found.append((m.start(), content))
    return found


# -- abstentions -----------------------------------------------------------------------------------
_ABSTAIN_VERBS = (
    r"(?:be\s+)?(?:determined?|told|tell|say|answer(?:ed)?|assess(?:ed)?|conclude[d]?|decided?|known|know|"
    r"evaluated?|sure|certain|interpret(?:ed)?|comment|help|assist|"
    r"provide\s+(?:an?\s+)?(?:\w+\s+)?(?:answer|diagnos[ie]s|assessment|interpretation)|"
    r"(?:see|view|access|analy[sz]e|read)\s+(?:the\s+|this\s+|any\s+)?(?:images?|pictures?|scans?)|"
    r"make\s+a\s+(?:definitive\s+|definite\s+|confident\s+|reliable\s+)?(?:determination|diagnosis|decision))"
)
_ABSTAIN = re.compile(
    r"\b(?:not\s+(?:entirely\s+|completely\s+|totally\s+|very\s+|100%\s+)?(?:sure|certain)"
    r"|unsure"
    r"|(?:do\s+not|don'?t|dont)\s+know"
    r"|(?:cannot|can\s+not|can'?t|cant|could\s+not|couldn'?t|unable\s+to|not\s+able\s+to|impossible\s+to|"
    r"not\s+possible\s+to)\s+(?:reliably\s+|definitively\s+|accurately\s+|confidently\s+)?" + _ABSTAIN_VERBS +
    r"|(?:insufficient|not\s+enough|inadequate)\s+(?:information|data|detail|details|evidence|context)"
    r"|no\s+idea|no\s+way\s+to\s+(?:tell|know|determine|say)"
    r"|(?:hard|difficult)\s+to\s+(?:say|tell|determine)"
    r"|(?:i'?m|i\s+am|is|remains|are|remain)\s+(?:uncertain|unsure))\b",
    re.IGNORECASE,
)
_ABSTAIN_WHOLE = re.compile(
    r"(?:uncertain|unsure)(?:\W.*)?"
    r"|(?:unclear|unknown|indeterminate|undetermined|n/?a|idk|not\s+applicable|no\s+answer)(?:\s*[.,:;!\-].*)?",
    re.IGNORECASE | re.DOTALL,
)


def whole_abstention(text: str) -> str | None:
    """The abstention word when the whole response is one ("N/A", "Unknown.", "uncertain - …")."""
    stripped = text.strip(QUOTES)
    if _ABSTAIN_WHOLE.fullmatch(stripped):
        return stripped.split()[0] if stripped.split() else stripped
    return None


def find_abstention(text: str) -> str | None:
    """The abstention phrase in ``text``, if any: one of the listed phrases anywhere, or a response
    that is (or starts with, followed by punctuation) "uncertain", "unknown", "unclear", "N/A", …"""
    m = _ABSTAIN.search(text)
    return m.group(0) if m else whole_abstention(text)


# -- plain-text normalisation -----------------------------------------------------------------------
_TRAILING_PUNCT = ".,;:!?。 \t\n"
_HAS_WORD = re.compile(r"\w")


def norm_text(text: str) -> str:
    """Lower-cased, whitespace-collapsed text with surrounding quotes and trailing punctuation removed."""
    text = unicodedata.normalize("NFKC", str(text)).translate(_CHAR_MAP)
    text = " ".join(text.split()).strip(QUOTES).rstrip(_TRAILING_PUNCT).strip(QUOTES)
    return text.lower()


def has_word_char(text: str) -> bool:
    return _HAS_WORD.search(text) is not None


def norm_options(options: Sequence[str]) -> tuple[str, ...]:
    """Options as normalised texts, in order (``norm_text`` of each)."""
    return tuple(norm_text(o) for o in options)
