"""Sign-in throttling (django-axes, configured in medr2/settings.py; docs/security.md, "Sign-in").

- `client_ip(request)`: the address a request came from. Behind `MEDR2_PROXY_COUNT` reverse proxies that
  append to `X-Forwarded-For`, the address the outermost of them saw; otherwise the socket's address.
  axes locks out by username + this address; the audit trail records it with each sign-in event.
- `lockout_response(...)`: what a locked-out sign-in gets: the login page again, saying when to retry,
  with HTTP 429 (axes calls it instead of its own plain-text page).
"""
from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.forms import AuthenticationForm
from django.shortcuts import render


def client_ip(request) -> str | None:
    meta = getattr(request, "META", {}) or {}
    proxies = getattr(settings, "MEDR2_PROXY_COUNT", 0)
    if proxies > 0:
        chain = [a.strip() for a in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
        if len(chain) >= proxies:
            return chain[-proxies]
    return meta.get("REMOTE_ADDR") or None


def cooloff_minutes() -> int:
    return max(1, int(settings.AXES_COOLOFF_TIME.total_seconds() // 60))


def lockout_response(request, original_response=None, credentials=None):
    minutes = cooloff_minutes()
    messages.error(request, f"Too many failed sign-ins for this account from your address: sign-in is refused for "
                            f"{minutes} minutes after the last attempt. An administrator can lift the lock sooner.")
    return render(request, "accounts/login.html", {"form": AuthenticationForm(request)}, status=429)
