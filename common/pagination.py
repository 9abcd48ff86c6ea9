"""One pagination module for every list: the API's page rules and the HTML pages' page rules.

APIs: `paginated_response(request, rows, serializer)` (or DRF's default `StandardPagination` on a
generic view) — 50 a page, `?page_size=` up to 500, `{"count", "next", "previous", "results"}`; its
schema is `@extend_schema(responses=paginated(Serializer))` (common/schema.py: the envelope, `page`, `page_size`).
Pages: `page_of(request, rows)` — a Django `Page` for `templates/_pager.html`, `?page=` out of
range gives the last page, never an error.

Long lists (a run's predictions: millions of rows) are paginated with `capped=True`: `CappedPaginator`
counts the rows only up to `COUNT_CAP` (or to the end of the page asked for, when deeper) and one more, so
a page costs the same at 1M or 15M rows. Past the cap the page says "10,000+ matching", "page 3 of 201+";
the API's envelope carries `count_exact: false` and `count` is then a lower bound. A caller that knows the
length without counting (a run's own total) passes it as `known_count`; then every number is exact."""
from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.utils.functional import cached_property
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

PER_PAGE = 50   # HTML pages
COUNT_CAP = 10_000   # capped lists: rows counted at most (unless a deeper page is asked for)
MAX_PAGE = 10**12    # a page number past this counts as this (the LIMIT stays a bigint)


class CappedPaginator(Paginator):
    """A Django paginator that never counts a long list to its end: it counts at most `reach` rows and one
    more (`reach`: `cap`, or the rows up to the end of the page asked for when that is deeper; None: all),
    with one `SELECT COUNT(*) FROM (... LIMIT reach + 1)`. `count_exact` says whether `count` is the list's
    length; otherwise the list has more than `counted` rows and `count` (`counted` + 1) is what paging
    needs: the page after the last counted one exists. Page numbers, next and previous stay right at any
    depth; a page past the end still gives the last one (its number is then counted exactly)."""

    def __init__(self, object_list, per_page, orphans=0, allow_empty_first_page=True, *,
                 cap: int | None = None, known_count: int | None = None):
        super().__init__(object_list, per_page, orphans, allow_empty_first_page)
        self.reach: int | None = COUNT_CAP if cap is None else cap
        self.known_count = known_count

    def validate_number(self, number):
        if "count" not in self.__dict__ and self.reach is not None:   # count far enough for this page
            try:
                asked = min(max(int(number), 1), MAX_PAGE)
            except (TypeError, ValueError, OverflowError):
                asked = 1
            self.reach = max(self.reach, asked * self.per_page)
        return super().validate_number(number)

    @cached_property
    def count(self) -> int:
        if self.known_count is not None:
            self.reach = None
            return self.known_count
        rows = self.object_list
        if self.reach is None:
            return rows.count() if isinstance(rows, QuerySet) else len(rows)
        limit = self.reach + 1
        if isinstance(rows, QuerySet):   # a plain model queryset: count its ids, unordered, in a subquery
            return rows.order_by().values("pk")[:limit].count()
        return min(len(rows), limit)

    def page(self, number) -> Page:
        """A queryset's page in two steps: the page's ids (OFFSET over the list's index, without its joins),
        then those rows with their joins; a deep page no longer joins every row it skips."""
        rows = self.object_list
        if not isinstance(rows, QuerySet):
            return super().page(number)
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = min(bottom + self.per_page, self.count)
        ids = list(rows.values_list("pk", flat=True)[bottom:top])
        return self._get_page(rows.filter(pk__in=ids), number, self)

    @property
    def count_exact(self) -> bool:
        count = self.count   # first: counting may settle `reach`
        return self.reach is None or count <= self.reach

    @property
    def counted(self) -> int:
        """The list's length when `count_exact`, else the rows counted (the list has more)."""
        return self.count if self.count_exact else self.reach

    @property
    def count_label(self) -> str:
        """"1,234" or "10,000+"."""
        return f"{self.counted:,}" if self.count_exact else f"{self.counted:,}+"

    @property
    def num_pages_label(self) -> str:
        """"24", or "201+": at least that many pages (10,000 rows counted and more)."""
        return str(self.num_pages) if self.count_exact else f"{self.num_pages}+"


class StandardPagination(PageNumberPagination):
    """Every list endpoint: 50 a page, ?page_size= up to 500."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


class CappedPagination(StandardPagination):
    """A long list (module docstring): `CappedPaginator` pages, and `count_exact` in the envelope
    (`paginated(Serializer, capped=True)`). `?page=last` counts every row."""

    def __init__(self, known_count: int | None = None):
        self.known_count = known_count

    def django_paginator_class(self, rows, page_size):   # what DRF's paginate_queryset instantiates
        return CappedPaginator(rows, page_size, known_count=self.known_count)

    def get_page_number(self, request, paginator):
        if request.query_params.get(self.page_query_param) in self.last_page_strings:
            paginator.reach = None
        return super().get_page_number(request, paginator)

    def get_paginated_response(self, data):
        paginator = self.page.paginator
        return Response({"count": paginator.counted, "count_exact": paginator.count_exact,
                         "next": self.get_next_link(), "previous": self.get_previous_link(), "results": data})


def paginated_response(request, rows, serializer_class, *, view=None, context: dict | None = None,
                       page_rows=None, capped: bool = False, known_count: int | None = None) -> Response:
    """One API page of `rows` (a queryset or list) serialized with `serializer_class`.

    `page_rows(page)` turns the page's rows into what the serializer reads (e.g. ids into objects).
    `capped`: a long list, counted up to `COUNT_CAP` (module docstring); `known_count`: its length, when
    the caller knows it without counting."""
    paginator = CappedPagination(known_count) if capped else StandardPagination()
    page = paginator.paginate_queryset(rows, request, view=view)
    if page_rows is not None:
        page = page_rows(page)
    return paginator.get_paginated_response(serializer_class(page, many=True, context=context or {}).data)


def page_of(request, rows, per_page: int = PER_PAGE, *, param: str = "page", capped: bool = False,
            known_count: int | None = None) -> Page:
    """One HTML page of `rows`: `?page=` past the end gives the last page, junk gives the first.
    `capped`: a long list, counted up to `COUNT_CAP` (module docstring; the page shows
    `page.paginator.count_label`); `known_count`: its length, when the caller knows it without counting.

    The page carries what `templates/_pager.html` needs for its links: `page.param` and
    `page.query`, the request's other parameters (filters) urlencoded."""
    paginator = (CappedPaginator(rows, per_page, known_count=known_count) if capped
                 else Paginator(rows, per_page))
    page = paginator.get_page(request.GET.get(param))
    query = request.GET.copy()
    query.pop(param, None)
    page.param, page.query = param, query.urlencode()
    return page
