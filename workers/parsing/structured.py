"""JSON answers, as guided decoding produces them: ``{"answer": "B"}``, ``{"answers": ["A", "C"]}``,
``["liver", "spleen"]``, ``{"answer": "B", "bbox_2d": [...]}`` (see the package docstring, "JSON")."""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: Keys that hold the answer, in priority order (compared lower-cased, spaces and hyphens as "_").
ANSWER_KEYS: tuple[str, ...] = (
    "final_answer", "final_answers", "answer", "answers", "choice", "choices", "selected_option",
    "selected_options", "selected", "option", "letter", "letters",
)
#: Keys whose list is the options shown, not a selection (never read as the answer's list).
NOT_ANSWER_KEYS = frozenset({"options", "option_list", "all_options", "candidates"})
_OPEN = re.compile(r"[\[{]")
_KEY_SEP = re.compile(r"[\s\-]+")
#: At most this many JSON candidates are tried per response, each at most this long.
_TRIES = 16
_SPAN = 20_000
_DEPTH = 3
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Found:
    """An answer value found in JSON: ``key`` is the answer key, or "list" for a list of strings."""

    key: str
    value: Any


def _decoded(text: str) -> Iterator[Any]:
    """Every JSON value (object or array) in ``text``, left to right; a Python-style literal with single
    quotes and no double quotes (``{'answer': 'B'}``) is read too. Malformed candidates are skipped."""
    pos, tries = 0, 0
    while tries < _TRIES:
        m = _OPEN.search(text, pos)
        if m is None:
            return
        tries += 1
        start = m.start()
        chunk = text[start: start + _SPAN]
        try:
            value, end = _DECODER.raw_decode(chunk)
        except (ValueError, RecursionError):
            value, end = _single_quoted(chunk)
        if end:
            yield value
            pos = start + end
        else:
            pos = start + 1


_CLOSE = {"{": "}", "[": "]"}


def _single_quoted(chunk: str) -> tuple[Any, int]:
    """(value, length) of a single-quoted literal at the start of ``chunk``, else (None, 0)."""
    depth, close = 0, _CLOSE[chunk[0]]
    for i, ch in enumerate(chunk[:2000]):
        if ch == chunk[0]:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                literal = chunk[: i + 1]
                if '"' in literal or "'" not in literal:
                    return None, 0
                try:
                    return json.loads(literal.replace("'", '"')), i + 1
                except (ValueError, RecursionError):
                    return None, 0
    return None, 0


def _norm_key(key: Any) -> str:
    return _KEY_SEP.sub("_", key.strip().lower()) if isinstance(key, str) else ""


def _strings(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def _answer_in(value: Any, depth: int = 0) -> Found | None:
    if isinstance(value, dict):
        keys = {_norm_key(k): v for k, v in value.items()}
        for key in ANSWER_KEYS:
            if key in keys:
                return Found(key, keys[key])
        if depth < _DEPTH:
            for inner in value.values():
                if isinstance(inner, (dict, list)):
                    found = _answer_in(inner, depth + 1)
                    if found is not None and found.key != "list":
                        return found
        lists = [v for k, v in keys.items() if k not in NOT_ANSWER_KEYS and _strings(v)]
        return Found("list", lists[0]) if len(lists) == 1 else None
    if _strings(value):
        return Found("list", value)
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict) and depth < _DEPTH:
        return _answer_in(value[0], depth + 1)
    return None


def find_json_answer(text: str) -> Found | None:
    """The answer held by the first JSON value in ``text`` that has one: the value of an answer key
    (``ANSWER_KEYS``, also one level or two down), else a list of strings (the whole value, or the only
    list of strings an object holds). None when there is no JSON or none holds an answer."""
    if "{" not in text and "[" not in text:
        return None
    for value in _decoded(text):
        found = _answer_in(value)
        if found is not None:
            return found
    return None
