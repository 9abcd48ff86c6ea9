"""The OpenAPI schema (drf-spectacular, /api/schema/) says what the APIs really answer.

`AutoSchema` (settings.REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]) adds, to every operation:

- the errors every API can answer, as the `Error` component (common/errors.py): 403 (not logged in, or
  without the capability), 404 when the path names an object or the list is paginated (a page past the
  end), 400 when the operation reads query parameters or a body, 415 when it reads a body. Errors only
  some views raise (409, 413, 429, 503, or a 400 from an action without a body) are named with
  `errors(...)` in their `@extend_schema`;
- `page` and `page_size` on lists answered by `common.pagination.paginated_response`, whose envelope
  `paginated(Serializer)` documents: `@extend_schema(responses=paginated(ItemOutput))`;
- component names without clashes: a nested `Input`/`Output` serializer is named after its API class
  (`CaseVerdictApi.Input` → `CaseVerdictInput`).
"""
from __future__ import annotations

from functools import cache

from drf_spectacular import openapi
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from rest_framework import serializers

ERROR_REF = {"$ref": "#/components/schemas/Error"}
ERROR_DESCRIPTIONS = {
    400: "invalid: a bad query parameter or body (`fields` names them)",
    403: "permission_denied: not logged in, or without the capability",
    404: "not_found: no such object (or not one you may see), or a page past the end",
    409: "conflict: the request clashes with the object's current state",
    413: "too_large: over the upload limit",
    415: "unsupported_media_type",
    422: "every file failed",
    429: "throttled: too many attempts; retry later",
    503: "unavailable: a service the request needs cannot be reached; retry later",
}
PAGE_PARAMETERS = [
    OpenApiParameter("page", OpenApiTypes.INT, description="page number, from 1 (past the end: 404)"),
    OpenApiParameter("page_size", OpenApiTypes.INT, description="rows a page, default 50, at most 500"),
]


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """`@extend_schema(responses={200: X, **errors(409)})`: these statuses answer the `Error` shape."""
    return {code: OpenApiResponse(response=ERROR_REF, description=ERROR_DESCRIPTIONS.get(code, "")) for code in codes}


def component_name(cls: type) -> str:
    """A serializer's component name: its class name, or for a class nested in an API class the API's
    name without `Api` and the class's own (`ChainListApi.Output` → `ChainListOutput`)."""
    parts = cls.__qualname__.split(".")
    if len(parts) == 1 or "<locals>" in parts:
        return cls.__name__
    return parts[0].removesuffix("Api") + parts[-1]


@cache   # one envelope class a serializer: the schema has one component for it
def paginated(serializer_class, *, capped: bool = False) -> serializers.Serializer:
    """The schema of what `paginated_response` answers with `serializer_class`: the page envelope.
    `capped`: a long list (`paginated_response(..., capped=True)`), counted only up to 10,000 rows or the
    page asked for (common/pagination.py), with `count_exact`."""
    count = (serializers.IntegerField(help_text="rows in all pages; when `count_exact` is false, a lower bound: "
                                                "there are more than `count` rows (a long list is counted only up "
                                                "to 10,000 rows, or to the end of the page asked for)")
             if capped else serializers.IntegerField(help_text="rows in all pages"))
    exact = {"count_exact": serializers.BooleanField(help_text="whether `count` is every row (false: more rows "
                                                               "than `count`; `?page=last` counts them all)")}
    envelope = inline_serializer(f"Paginated{component_name(serializer_class)}List", fields={
        "count": count,
        **(exact if capped else {}),
        "next": serializers.URLField(allow_null=True, help_text="the next page, null on the last"),
        "previous": serializers.URLField(allow_null=True, help_text="the previous page, null on the first"),
        "results": serializer_class(many=True),
    })
    type(envelope).paginated_envelope = True     # AutoSchema adds ?page= and ?page_size=
    return envelope


def _error_response(code: int) -> dict:
    return {"description": ERROR_DESCRIPTIONS.get(code, ""), "content": {"application/json": {"schema": ERROR_REF}}}


class AutoSchema(openapi.AutoSchema):
    def get_serializer_name(self, serializer, direction) -> str:
        return component_name(type(serializer))

    def _paginated(self) -> bool:
        if self.method != "GET":
            return False
        response = self.get_response_serializers()
        if isinstance(response, dict):
            response = response.get(200, response.get("200"))
        return bool(getattr(response, "paginated_envelope", False))

    def get_override_parameters(self):
        parameters = super().get_override_parameters()
        return [*parameters, *PAGE_PARAMETERS] if self._paginated() else parameters

    def get_operation_id(self) -> str:
        operation_id = super().get_operation_id()
        if self._paginated() and operation_id.endswith("_retrieve"):
            operation_id = operation_id.removesuffix("_retrieve") + "_list"
        return operation_id

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        places = {p.get("in") for p in operation.get("parameters", [])}
        codes = {403}
        if "path" in places or self._paginated():
            codes.add(404)
        if "query" in places or "requestBody" in operation:
            codes.add(400)
        if "requestBody" in operation:      # a body in a media type the view does not parse
            codes.add(415)
        responses = operation.setdefault("responses", {})
        for code in sorted(codes):
            responses.setdefault(str(code), _error_response(code))
        operation["responses"] = dict(sorted(responses.items()))
        return operation
