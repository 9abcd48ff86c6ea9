"""Small query helpers shared by the apps."""
from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.db.models import Q
from django.db.models.expressions import RawSQL


def ids_in(field: str, ids: Iterable[int]) -> Q:
    """`field IN ids` for a long list of integer ids. On PostgreSQL the list goes as one array parameter
    (`IN (SELECT unnest(%s::bigint[]))`): Django's `__in` builds one placeholder per id, and building,
    splitting and parsing a thousand placeholders cost more than the query's own work (a worker batch reads
    its variants and their stored predictions by id). Elsewhere a plain `__in`."""
    ids = [int(i) for i in ids]
    if connection.vendor == "postgresql":
        return Q(**{f"{field}__in": RawSQL("SELECT unnest(%s::bigint[])", (ids,))})
    return Q(**{f"{field}__in": ids})
