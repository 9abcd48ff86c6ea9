"""The audit trail's filters, read once from a page's or an API's query parameters.

One parser for the page, the API and both exports, so they agree on what a filter means and on what
is refused: a bad value raises Django's `ValidationError` naming the parameter (the page shows the
message; the API answers 400 with the common error shape).

| parameter | meaning |
| --- | --- |
| `action` | actions starting with this (`annotation.qa_item` matches `annotation.qa_item.review`) |
| `actor` | the actor's username at the time (`system` for events without a user) |
| `object_type`, `object_id` | the object's history: events about it **and** bulk events that list it |
| `date_from`, `date_to` | `YYYY-MM-DD`, inclusive, UTC days |
| `seq_from`, `seq_to` | event numbers, inclusive |
| `bookkeeping` | `1` to include worker bookkeeping events (`BOOKKEEPING_ACTIONS`), hidden by default |
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from django.core.exceptions import ValidationError

# Per-batch bookkeeping that workers write as they go: true and audited, but noise to a reader of the
# trail (thousands per run). Hidden from the page, the API and the exports unless `bookkeeping=1`.
# The run-level events (workers.run.create / finish / score, ...) stay visible.
BOOKKEEPING_ACTIONS: frozenset[str] = frozenset({
    "workers.batch.complete",          # one evaluation batch done (workers/services/execution.py)
    "workers.batch.fail",              # one evaluation batch failed (ditto; the run's finish says so too)
    "labelstudio.batch.refresh_urls",  # image URLs of a Label Studio batch re-signed (periodic)
})

TEXT_FILTERS = {"action": 100, "actor": 150, "object_type": 100, "object_id": 64}   # name -> max length
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"", "0", "false", "no", "off"}


@dataclass(frozen=True)
class EventFilters:
    action: str = ""
    actor: str = ""
    object_type: str = ""
    object_id: str = ""
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    seq_from: int | None = None
    seq_to: int | None = None
    bookkeeping: bool = False

    def as_query(self) -> dict[str, str]:
        """The filters as query parameters (only those set), e.g. for the export links."""
        out = {}
        for name, value in asdict(self).items():
            if value in (None, "", False):
                continue
            out[name] = "1" if value is True else value.isoformat() if isinstance(value, dt.date) else str(value)
        return out


def _date(name: str, text: str, errors: dict) -> dt.date | None:
    if not text:
        return None
    try:
        if not _DATE.fullmatch(text):
            raise ValueError
        return dt.date.fromisoformat(text)
    except ValueError:
        errors[name] = [f"{text[:40]!r} is not a date: use YYYY-MM-DD (UTC)"]
        return None


def _seq(name: str, text: str, errors: dict) -> int | None:
    if not text:
        return None
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        errors[name] = [f"{text[:40]!r} is not an event number: use a whole number like 42"]
        return None
    return int(text)


def parse_event_filters(params: Mapping[str, str]) -> EventFilters:
    """EventFilters from query parameters (a QueryDict or dict); ValidationError naming every bad one."""
    def get(name: str) -> str:
        value = params.get(name, "")
        return (value if isinstance(value, str) else str(value)).strip()

    errors: dict[str, list[str]] = {}
    text = {}
    for name, limit in TEXT_FILTERS.items():
        text[name] = get(name)
        if len(text[name]) > limit:
            errors[name] = [f"at most {limit} characters"]
    date_from, date_to = _date("date_from", get("date_from"), errors), _date("date_to", get("date_to"), errors)
    seq_from, seq_to = _seq("seq_from", get("seq_from"), errors), _seq("seq_to", get("seq_to"), errors)
    flag = get("bookkeeping").lower()
    if flag not in _TRUE | _FALSE:
        errors["bookkeeping"] = [f"{flag[:40]!r} is not a yes/no value: use 1 or 0"]
    if date_from and date_to and date_from > date_to:
        errors["date_to"] = [f"the end date {date_to} is before the start date {date_from}"]
    if seq_from is not None and seq_to is not None and seq_from > seq_to:
        errors["seq_to"] = [f"event #{seq_to} comes before event #{seq_from}"]
    if errors:
        raise ValidationError(errors)
    return EventFilters(**text, date_from=date_from, date_to=date_to, seq_from=seq_from, seq_to=seq_to,
                        bookkeeping=flag in _TRUE)
