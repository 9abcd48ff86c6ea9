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
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from common.params import QueryParams

# Per-batch bookkeeping that workers write as they go: true and audited, but noise to a reader of the
# trail (thousands per run). Hidden from the page, the API and the exports unless `bookkeeping=1`.
# The run-level events (workers.run.create / finish / score, ...) stay visible.
BOOKKEEPING_ACTIONS: frozenset[str] = frozenset({
    "workers.batch.complete",          # one evaluation batch done (workers/services/execution.py)
    "workers.batch.fail",              # one evaluation batch failed (ditto; the run's finish says so too)
    "labelstudio.batch.refresh_urls",  # image URLs of a Label Studio batch re-signed (periodic)
})

TEXT_FILTERS = {"action": 100, "actor": 150, "object_type": 100, "object_id": 64}   # name -> max length


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


def parse_event_filters(params: Mapping[str, str]) -> EventFilters:
    """EventFilters from query parameters (a QueryDict or dict); ValidationError naming every bad one
    (read with common.params, as every list API reads its filters)."""
    query = QueryParams(params)
    text = {name: query.text(name, max_length=limit) for name, limit in TEXT_FILTERS.items()}
    date_from, date_to = query.date("date_from"), query.date("date_to")
    seq_from = query.integer("seq_from", min_value=0, what="an event number")
    seq_to = query.integer("seq_to", min_value=0, what="an event number")
    bookkeeping = query.boolean("bookkeeping")
    if date_from and date_to and date_from > date_to:
        query.errors["date_to"] = [f"the end date {date_to} is before the start date {date_from}"]
    if seq_from is not None and seq_to is not None and seq_from > seq_to:
        query.errors["seq_to"] = [f"event #{seq_to} comes before event #{seq_from}"]
    query.check()
    return EventFilters(**text, date_from=date_from, date_to=date_to, seq_from=seq_from, seq_to=seq_to,
                        bookkeeping=bool(bookkeeping))
