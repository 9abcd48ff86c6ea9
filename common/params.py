"""One way to read the query parameters of a list API: each filter checked, every bad one named.

    params = QueryParams(request.query_params)
    filters = {"chain": params.id("chain"), "status": params.choice("status", QAItem.Status.values),
               "endpoint": params.id_or_name("endpoint"), "correct": params.boolean("correct")}
    params.check()      # ValidationError naming each bad parameter: 400 `invalid` with `fields`

An absent or blank parameter reads as "no filter" (None, or "" for text and choices). A value that cannot
be what the parameter means is refused, never passed on to the database: a word where an id goes, an id
beyond PostgreSQL's bigint (it would fail in the database with a DataError, a 500), an unknown choice.
The error shape is common.errors' (docs/architecture.md, "Errors"). Pages keep their own lenient reading
(`as_int`: junk means no filter); APIs answer 400.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping

from django.core.exceptions import ValidationError

BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1       # PostgreSQL bigint: every id and integer column fits
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
_INT = re.compile(r"[+-]?[0-9]{1,30}")
_DIGITS = re.compile(r"[+-]?[0-9]+")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _shown(text: str) -> str:
    return repr(text[:40] + ("…" if len(text) > 40 else ""))


def as_int(value, *, min_value: int = BIGINT_MIN, max_value: int = BIGINT_MAX) -> int | None:
    """`value` as an int within [min_value, max_value], else None (the lenient reading for pages)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    else:
        text = str(value or "").strip()
        if not text.isascii() or not _INT.fullmatch(text):
            return None
        number = int(text)
    return number if min_value <= number <= max_value else None


class QueryParams:
    """Checked reads of query parameters (a QueryDict or a dict); `check()` raises for the bad ones."""

    def __init__(self, params: Mapping) -> None:
        self._params = params
        self.errors: dict[str, list[str]] = {}

    def raw(self, name: str) -> str:
        value = self._params.get(name, "")
        return (value if isinstance(value, str) else str(value)).strip()

    def _fail(self, name: str, message: str):
        self.errors.setdefault(name, []).append(message)
        return None

    def text(self, name: str, *, max_length: int = 200) -> str:
        value = self.raw(name)
        if len(value) > max_length:
            self._fail(name, f"at most {max_length} characters")
            return ""
        if "\x00" in value:
            self._fail(name, "must not contain NUL characters")
            return ""
        return value

    def integer(self, name: str, *, min_value: int = BIGINT_MIN, max_value: int = BIGINT_MAX,
                what: str = "a whole number") -> int | None:
        value = self.raw(name)
        if not value:
            return None
        if not (value.isascii() and _DIGITS.fullmatch(value)):
            return self._fail(name, f"{_shown(value)} is not {what}")
        number = int(value) if len(value) <= 40 else None     # int() refuses thousands of digits
        if number is None or not min_value <= number <= max_value:
            return self._fail(name, f"{_shown(value)} is not {what} from {min_value} to {max_value} (out of range)")
        return number

    def id(self, name: str) -> int | None:
        """A positive id (a primary key)."""
        return self.integer(name, min_value=1, what="an id (a whole number)")

    def id_or_name(self, name: str, *, max_length: int = 200) -> int | str | None:
        """An object named by its id (digits) or by its name (anything else), e.g. a model endpoint."""
        value = self.raw(name)
        if value.isascii() and value.isdigit():
            return self.id(name)
        return self.text(name, max_length=max_length) or None

    def choice(self, name: str, choices: Iterable[str]) -> str:
        value = self.raw(name)
        choices = [str(c) for c in choices]
        if value and value not in choices:
            self._fail(name, f"{_shown(value)} is not a valid choice: {', '.join(choices)}")
            return ""
        return value

    def boolean(self, name: str) -> bool | None:
        value = self.raw(name).lower()
        if not value:
            return None
        if value in TRUE:
            return True
        if value in FALSE:
            return False
        return self._fail(name, f"{_shown(value)} is not a yes/no value: use true or false (1 or 0)")

    def date(self, name: str) -> dt.date | None:
        value = self.raw(name)
        if not value:
            return None
        try:
            if not _DATE.fullmatch(value):
                raise ValueError
            return dt.date.fromisoformat(value)
        except ValueError:
            return self._fail(name, f"{_shown(value)} is not a date: use YYYY-MM-DD")

    def check(self) -> None:
        """Raise Django's ValidationError naming every bad parameter (the handler answers 400 `invalid`)."""
        if self.errors:
            raise ValidationError({name: messages for name, messages in self.errors.items()})
