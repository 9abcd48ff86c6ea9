"""Echo removal: the prompt's own sentences (context lines, a hint, the question, the closing instruction)
are taken out of a response before it is parsed, so that an echoed "A senior colleague thinks the answer
is C." is never read as the answer C. Option lines ("A. liver") stay: an answer may be "B. spleen"."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from .normalise import QUOTES, preprocess

_OPTION_LINE = re.compile(r"[ \t]*[\(\[]?[A-Z][.)\]][ \t]+\S")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*[ \t]+")  # split here (the end mark goes, as it would anyway)
_WORD = re.compile(r"\w+")
_ENDS_SENTENCE = re.compile(r"[.!?][\"')\]]*$")
_TRAILING = ".!?;: \t"
#: Placeholder for removed text while lines are tidied (a private-use character).
_MARK = "\ue000"
_ONLY_MARKS = re.compile(rf"[\s{_MARK}.,;:!?\-\"'`()\[\]]*")
_SPACES = re.compile(r"[ \t]+")


class Piece(NamedTuple):
    """A prompt line or sentence that is removed wherever it appears in a response."""

    key: str  # lower-cased, without trailing punctuation (a fast substring pre-check)
    text: str


def _removable(text: str, option_words: frozenset[str]) -> bool:
    """Whole prompt lines and sentences of at least three words, two of them words that are neither a
    single letter nor part of an option text: "liver." or "x; z." (the option part of a hint) never go."""
    words = _WORD.findall(text.lower())
    own = sum(1 for w in words if len(w) > 1 and w not in option_words)
    return len(words) >= 3 and own >= 2


@lru_cache(maxsize=4096)
def prompt_pieces(prompt: str) -> tuple[Piece, ...]:
    """The prompt's non-option lines and their sentences, longest first (a line before its own
    sentences, and before a shorter line it contains), preprocessed like a response; only pieces of
    three words or more. Whether a piece may be removed (``_removable``) is decided when it is found in
    a response."""
    seen: set[str] = set()
    pieces: list[Piece] = []
    for line in preprocess(prompt).split("\n"):  # preprocessing leaves single spaces
        for piece in _line_pieces(line):
            if piece.key not in seen:
                seen.add(piece.key)
                pieces.append(piece)
    return tuple(sorted(pieces, key=lambda p: -len(p.key)))


@lru_cache(maxsize=8192)
def _line_pieces(line: str) -> tuple[Piece, ...]:
    """A preprocessed prompt line and its sentences (nothing for an option line). Cached: prompts share
    most lines (the instruction, the region-of-interest line, a category's question)."""
    line = line.strip(QUOTES)
    if not line or _OPTION_LINE.match(line):
        return ()
    sentences = _SENTENCE_END.split(line)
    texts = [line] + ([s.strip(QUOTES) for s in sentences] if len(sentences) > 1 else [])
    keys = [(t.lower().rstrip(_TRAILING), t.rstrip(_TRAILING)) for t in texts]
    return tuple(Piece(key, text) for key, text in keys if key.count(" ") >= 2)


@lru_cache(maxsize=4096)
def _pattern(text: str) -> re.Pattern:
    words = text.split()
    # any whitespace between the words of a sentence, but no line break between two sentences: in
    # "… the answer is A.\nYes" the line break ends the echo, and "Yes" is the answer
    body = "".join(re.escape(w) + (r"[ \t]+" if _ENDS_SENTENCE.search(w) else r"\s+") for w in words[:-1])
    body += re.escape(words[-1])
    before = r"(?<![\w-])" if text[:1].isalnum() or text[:1] == "_" else ""
    after = r"(?![\w-])" if text[-1:].isalnum() or text[-1:] == "_" else ""
    return re.compile(before + body + after + r"(?:[ \t]*[.!?])?", re.IGNORECASE)


def _room_for_echo(clean: str) -> bool:
    """Fewer than three words hold no removable piece ("B", "B. liver", "Answer: C")."""
    return clean.count(" ") + clean.count("\n") >= 2


def echo_matters(text: str) -> bool:
    """Whether the prompt can change the parse of this raw response (else parsing it with or without
    the prompt gives the same result, so a cache of parses may leave the prompt out of its key)."""
    return _room_for_echo(preprocess(text))


def remove_echo(clean: str, prompt: str, options: tuple[str, ...]) -> str:
    """``clean`` (a preprocessed response) without any occurrence of the prompt's non-option lines and
    sentences (case-insensitive, whitespace-normalised). A line left with nothing but punctuation is
    dropped; the rest is re-spaced as preprocessing would."""
    if not _room_for_echo(clean):
        return clean
    pieces = prompt_pieces(prompt)
    if not pieces:
        return clean
    flat = " ".join(clean.lower().split())
    found = [p for p in pieces if p.key in flat]
    if not found:
        return clean
    option_words = frozenset(w for o in options for w in _WORD.findall(o.lower()))
    found = [p for p in found if _removable(p.text, option_words)]
    text = clean
    for piece in found:
        text = _pattern(piece.text).sub(_MARK, text)
    if _MARK not in text:
        return clean
    lines = []
    for line in text.split("\n"):
        if _MARK in line:
            if _ONLY_MARKS.fullmatch(line):
                continue
            line = _SPACES.sub(" ", line.replace(_MARK, " ")).strip(" \t")
        lines.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip(QUOTES)
