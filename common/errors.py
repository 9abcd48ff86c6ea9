"""Service errors and the one DRF exception handler (settings.REST_FRAMEWORK["EXCEPTION_HANDLER"]).

Services raise Django's `ValidationError` for bad input and the classes below for the rest; APIs do
not catch them. Every API error then has one shape (docs/architecture.md, "Errors"):

    {"code": "invalid", "detail": "one readable sentence", "fields": {"name": ["message", ...]}}

`code` is one of: invalid (400), not_authenticated (401), permission_denied (403), not_found (404),
method_not_allowed (405), not_acceptable (406), conflict (409), too_large (413), unsupported_media_type
(415), throttled (429), unavailable (503). `fields` is present only when the error names input fields.
The OpenAPI schema publishes the shape as the `Error` component (settings.SPECTACULAR_SETTINGS).
"""
from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class ServiceError(Exception):
    """A request a service refuses for a reason other than bad input. Keyword arguments become
    extra keys of the error body (e.g. the case's current `version` on a conflict)."""

    code = "conflict"
    status_code = status.HTTP_409_CONFLICT

    def __init__(self, message: str, **extra) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra


class Conflict(ServiceError):
    """The request clashes with the current state (a case already decided, a batch not pushed)."""


class NotFound(ServiceError):
    code = "not_found"
    status_code = status.HTTP_404_NOT_FOUND


class Unavailable(ServiceError):
    """A service the request needs (Label Studio, a model server) cannot be reached now; retry later."""

    code = "unavailable"
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE


_CODES = {400: "invalid", 401: "not_authenticated", 403: "permission_denied", 404: "not_found",
          405: "method_not_allowed", 406: "not_acceptable", 409: "conflict", 413: "too_large",
          415: "unsupported_media_type", 429: "throttled", 503: "unavailable"}


def _messages(value) -> list[str]:
    if isinstance(value, dict):
        return [m for v in value.values() for m in _messages(v)]
    if isinstance(value, (list, tuple)):
        return [m for v in value for m in _messages(v)]
    return [str(value)]


def error_body(code: str, detail: str, fields: dict | None = None) -> dict:
    body = {"code": code, "detail": detail}
    if fields:
        body["fields"] = fields
    return body


def error_response(status_code: int, detail: str, *, code: str | None = None, fields: dict | None = None) -> Response:
    """An error answered by a view itself (e.g. a missing upload): the same shape as the handler's."""
    return Response(error_body(code or _CODES.get(status_code, "error"), detail, fields), status=status_code)


def _from_django_validation(exc: DjangoValidationError) -> Response:
    fields = None
    if hasattr(exc, "error_dict"):
        fields = {name: [str(m) for e in errs for m in e.messages] for name, errs in exc.error_dict.items()}
    return error_response(400, "; ".join(exc.messages), fields=fields)


def not_found(request, exception=None):
    """Django's 404 for a URL no route matches (settings' ROOT_URLCONF `handler404`): the one error shape
    under /api/ (e.g. /api/items/abc/), the HTML page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("not_found", "no API operation at this URL"), status=404)
    return defaults.page_not_found(request, exception)


def exception_handler(exc, context):
    """DRF's handler, then one shape for every error (Django and service errors included)."""
    if isinstance(exc, DjangoValidationError):
        return _from_django_validation(exc)
    if isinstance(exc, ServiceError):
        response = error_response(exc.status_code, exc.message, code=exc.code)
        response.data.update(exc.extra)
        return response
    if isinstance(exc, (Http404, PermissionDenied)):
        exc = exceptions.NotFound() if isinstance(exc, Http404) else exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:          # an unexpected error: Django's 500 handling (logged, no details leaked)
        return None
    data = response.data
    fields = None
    if isinstance(exc, exceptions.ValidationError) and isinstance(data, dict):
        fields = {k: _messages(v) for k, v in data.items() if k != "non_field_errors"}
        detail = "; ".join(_messages(data.get("non_field_errors", [])) +
                           [f"{k}: {m}" for k, v in fields.items() for m in v])
    elif isinstance(data, dict) and "detail" in data:
        detail = str(data["detail"])
    else:
        detail = "; ".join(_messages(data))
    code = _CODES.get(response.status_code, "error")
    response.data = error_body(code, detail or "invalid request", fields)
    return response
