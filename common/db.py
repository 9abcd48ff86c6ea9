"""Small query helpers shared by the apps."""
from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Sequence

import orjson
from django.core.exceptions import EmptyResultSet
from django.db import connection, models
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


_LONG_NUMBER = re.compile(r"\d{19}")


def json_loads(text):
    """A JSON column's stored text decoded as `json.loads` decodes it: orjson, and the standard library for
    what orjson refuses (NaN) or reads otherwise (integers past 64 bits, which orjson makes floats: any run
    of 19 digits goes to the library). A value that is not text (a backend that decoded it) is returned."""
    if not isinstance(text, str):
        return text
    if _LONG_NUMBER.search(text):
        return json.loads(text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def plain_values(queryset: models.QuerySet, fields: Sequence[str], *,
                 json_fields: Collection[str] = ()) -> list[tuple]:
    """`queryset.values_list(*fields)`, read on PostgreSQL with a plain cursor over the SQL Django writes for
    it: Django's per-row iteration (a converter call per value, `json.loads` for every JSON column) cost more
    than the query when generation reads a batch's items, chains and boxes. The `json_fields` among `fields`
    come back decoded (`json_loads`; Django's PostgreSQL backend reads jsonb as text); no other converter
    runs, so use it for integers, text, floats and JSON. Elsewhere `values_list` itself."""
    queryset = queryset.values_list(*fields)
    if connection.vendor != "postgresql":
        return list(queryset)
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:              # .none(), or a filter Django knows matches nothing
        return []
    with connection.cursor() as cur:
        cur.execute(sql, params)
        rows = cur.fetchall()
    n = len(fields)
    if rows and len(rows[0]) > n:        # columns Django adds for DISTINCT with ORDER BY; values_list drops them
        rows = [row[:n] for row in rows]
    at = [i for i, f in enumerate(fields) if f in json_fields]
    if not at:
        return rows
    out = []
    for row in rows:
        row = list(row)
        for i in at:
            row[i] = json_loads(row[i])
        out.append(tuple(row))
    return out
