"""What `accounts` announces to the layers above it (they subscribe; accounts never imports them).

- `user_created(sender=User, user=..., actor=..., roles=[role values, sorted])`: a user was created,
  inside the creating transaction. The audit trail subscribes (audit/receivers.py) to record it.

Users, role groups, memberships and API tokens written anywhere else (Django admin, `manage.py shell`,
`drf_create_token`, an API) are recorded by the audit trail from Django's own model signals
(audit/auth_events.py). A caller that announces its write as one event of its own (`user_create` here,
the audited Django admin) wraps the write in `announced()`, so the row-level watchers stay quiet and the
trail holds one event per change, not three.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.dispatch import Signal

user_created = Signal()

_announced: ContextVar[bool] = ContextVar("medr2_accounts_announced", default=False)


@contextmanager
def announced() -> Iterator[None]:
    """The user/group/token rows written inside are announced (and audited) by the caller as one event."""
    token = _announced.set(True)
    try:
        yield
    finally:
        _announced.reset(token)


def is_announced() -> bool:
    return _announced.get()
