"""One pagination module for every list: the API's page rules and the HTML pages' page rules.

APIs: `paginated_response(request, rows, serializer)` (or DRF's default `StandardPagination` on a
generic view) — 50 a page, `?page_size=` up to 500, `{"count", "next", "previous", "results"}`; its
schema is `@extend_schema(responses=paginated(Serializer))` (common/schema.py: the envelope, `page`, `page_size`).
Pages: `page_of(request, rows)` — a Django `Page` for `templates/_pager.html`, `?page=` out of
range gives the last page, never an error."""
from __future__ import annotations

from django.core.paginator import Page, Paginator
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

PER_PAGE = 50   # HTML pages


class StandardPagination(PageNumberPagination):
    """Every list endpoint: 50 a page, ?page_size= up to 500."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


def paginated_response(request, rows, serializer_class, *, view=None, context: dict | None = None,
                       page_rows=None) -> Response:
    """One API page of `rows` (a queryset or list) serialized with `serializer_class`.

    `page_rows(page)` turns the page's rows into what the serializer reads (e.g. ids into objects)."""
    paginator = StandardPagination()
    page = paginator.paginate_queryset(rows, request, view=view)
    if page_rows is not None:
        page = page_rows(page)
    return paginator.get_paginated_response(serializer_class(page, many=True, context=context or {}).data)


def page_of(request, rows, per_page: int = PER_PAGE, *, param: str = "page") -> Page:
    """One HTML page of `rows`: `?page=` past the end gives the last page, junk gives the first.

    The page carries what `templates/_pager.html` needs for its links: `page.param` and
    `page.query`, the request's other parameters (filters) urlencoded."""
    page = Paginator(rows, per_page).get_page(request.GET.get(param))
    query = request.GET.copy()
    query.pop(param, None)
    page.param, page.query = param, query.urlencode()
    return page
