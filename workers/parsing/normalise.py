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
_SPACES = re.compile(r"[ \t\f\v\u00a0]{2,}|[\t\f\v\u00a0]")  # a single space needs no replacing
_ODD_SPACE = re.compile(r"[\t\f\v\u00a0]")
_MANY_NEWLINES = re.compile(r"\n{3,}")
_CHAR_MAP = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": " - ", "\r": "\n",
                           "。": ".", "、": ","})


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
    for last in _ANY_CLOSE.finditer(result):  # noqa: B007  (the loop keeps the last match)
        pass
    return result[last.end():] if last is not None else result


#: Characters (and line starts) that some markup step below acts on; text without any skips those steps.
_MARKUP = re.compile(r"[<\\`*$_#>•+]")
_DASH_BULLET = re.compile(r"^[ \t]*-[ \t]", re.MULTILINE)


def preprocess(text: str) -> str:
    """Normalise a raw model response for parsing (see the package docstring, "Preprocessing")."""
    if text.isascii():  # NFKC and the character map change nothing in ASCII but "\r"
        text = text.replace("\r", "\n")
    else:
        text = unicodedata.normalize("NFKC", text).translate(_CHAR_MAP)
    if _MARKUP.search(text) or ("-" in text and _DASH_BULLET.search(text)):
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
    if "  " in text or _ODD_SPACE.search(text):
        text = _SPACES.sub(" ", text)
    if "\n\n\n" in text:
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
# Chinese: 答案是B, 答案: B, 答案为B, 正确答案是B, 正确选项是B, 最终答案: B, 选B, 我选B, 应选B, 选择B (searched
# only when the text holds 答 or 选, so English answers pay nothing for it)
_PHRASE_ZH = re.compile(r"(?:最终|正确)?(?:答案|选项)[ \t]*(?:是|为|[:=])[ \t]*:?"
                        r"|(?:我|应该?|应当)?选择?(?!项)[ \t]*:?")
#: Every English answer phrase holds one of these (lower-cased); text without any skips the regex.
_PHRASE_WORDS = ("answer", "respons", "option", "choice", "selection", "letter", "choose", "select", "pick", "go ",
                 "go\t", "go\n")
_HEDGE = re.compile(
    r"(?:(?:i\s+(?:think|believe|guess)|probably|most\s+likely|likely|perhaps|maybe)(?:\s+that)?\s*,?\s*"
    r"|(?:it'?s|it\s+is|it\s+would\s+be|that\s+is|this\s+is)\s+)+",
    re.IGNORECASE,
)
_CONTENT_CAP = 400
#: Only the last this-many answer phrases of a response are examined (bounds the work on junk).
PHRASES_EXAMINED = 32


def answer_phrase_contents(text: str, last: int = PHRASES_EXAMINED) -> list[tuple[int, str, int]]:
    """(position, content, end) of the last ``last`` explicit answer phrases, in order. The content runs
    to the end of the line (the next non-empty line when the phrase ends its line), capped at 400
    characters, with leading hedges ("I think", "it is") removed; ``end`` is where that line ends."""
    low = text.lower()
    matches = list(_PHRASE.finditer(text)) if any(w in low for w in _PHRASE_WORDS) else []
    if "答" in text or "选" in text:
        matches = sorted(matches + list(_PHRASE_ZH.finditer(text)), key=lambda m: m.start())
    matches = matches[-last:]
    found: list[tuple[int, str, int]] = []
    for m in matches:
        end = text.find("\n", m.end())
        line_end = end if end >= 0 else len(text)
        content = text[m.end(): line_end][:_CONTENT_CAP].strip(QUOTES).lstrip(":, ")
        if not content and end >= 0:
            window = text[end: end + _CONTENT_CAP + 64]
            start = end + len(window) - len(window.lstrip())
            next_end = text.find("\n", start, start + _CONTENT_CAP + 64)
            line_end = next_end if next_end >= 0 else min(len(text), start + _CONTENT_CAP + 64)
            content = text[start:line_end][:_CONTENT_CAP].strip(QUOTES)
        hedge = _HEDGE.match(content)
        if hedge:
            content = content[hedge.end():].strip(QUOTES).lstrip(":, ")
        found.append((m.start(), content, line_end))
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


_ABSTAIN_ZH = re.compile("不确定|无法确定|无法判断")


def find_abstention(text: str) -> str | None:
    """The abstention phrase in ``text``, if any: one of the listed phrases anywhere (also 不确定,
    无法确定, 无法判断), or a response that is (or starts with, followed by punctuation) "uncertain",
    "unknown", "unclear", "N/A", …"""
    m = _ABSTAIN.search(text) or _ABSTAIN_ZH.search(text)
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
