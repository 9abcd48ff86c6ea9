"""Reads of users, for the commands and pages that name users (by username, or by role)."""
from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from .roles import Role


def user_find(*, username: str):
    """The user with this username, or None."""
    if not username:
        return None
    return get_user_model().objects.filter(username=username).first()


def users_by_username(*, usernames: Iterable[str]) -> tuple[list, list[str]]:
    """(the users named, by username; the names no user has, sorted)."""
    names = [n for n in usernames if n]
    found = list(get_user_model().objects.filter(username__in=names).order_by("username"))
    return found, sorted(set(names) - {u.username for u in found})


def user_list(*, roles: Iterable[Role] = (), active_only: bool = True) -> QuerySet:
    """Users holding any of `roles` (every user when none is given), by username."""
    qs = get_user_model().objects.all()
    if active_only:
        qs = qs.filter(is_active=True)
    roles = [Role(r).value for r in roles]
    if roles:
        qs = qs.filter(groups__name__in=roles).distinct()
    return qs.order_by("username")
