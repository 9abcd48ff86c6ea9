"""Request-wide middleware (settings.MIDDLEWARE; docs/security.md, "Browser protections" and "Refusals").

- `NoStoreMiddleware`: every response the application itself writes carries `Cache-Control: no-store`
  (pages, APIs, medical images, viewer pixels, exports): browsers and proxies keep no copy of them on disk.
  Static files never reach it (WhiteNoise answers them earlier in the chain, with its long cache).
- `CurrentRequestMiddleware`: the request being served, for code below the views that must name who
  made a change without being handed the request (the audit of users, roles and tokens written through
  Django's model signals: `current_request()`). Outside a request (shell, commands, workers) it is None.
- `RefusalMiddleware`: announces every 403 with the signal `request_refused(request, response)`, whether a
  page, an API or the CSRF check refused it. `common` imports no app; the audit trail subscribes
  (audit/auth_events.py) and records `auth.refused`.
"""
from __future__ import annotations

from contextvars import ContextVar

from django.dispatch import Signal

request_refused = Signal()   # sender=None, request=HttpRequest, response=HttpResponse (status 403)

_current_request: ContextVar = ContextVar("medr2_current_request", default=None)


def current_request():
    """The HttpRequest being served in this thread/context, or None (shell, management command, worker)."""
    return _current_request.get()


class NoStoreMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        # replaces any private max-age a view chose: nothing patient-derived may sit in a browser cache
        response["Cache-Control"] = "no-store"
        return response


class CurrentRequestMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _current_request.set(request)
        try:
            return self.get_response(request)
        finally:
            _current_request.reset(token)


class RefusalMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code == 403:
            request_refused.send(sender=None, request=request, response=response)
        return response
