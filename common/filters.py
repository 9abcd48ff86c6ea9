"""One way to narrow a queryset by the filters of a list page or API."""
from __future__ import annotations

from collections.abc import Mapping

from django.db.models import QuerySet

EMPTY = (None, "", [], ())


def filter_by(qs: QuerySet, filters: Mapping[str, object], lookups: Mapping[str, str]) -> QuerySet:
    """`qs` narrowed by each named filter that has a value: `filters[name]` is matched with the ORM
    lookup `lookups[name]` (e.g. {"stage": "stage__code"}). Strings are stripped; empty ones are ignored."""
    for name, lookup in lookups.items():
        value = filters.get(name)
        if isinstance(value, str):
            value = value.strip()
        if value not in EMPTY:
            qs = qs.filter(**{lookup: value})
    return qs
