"""Users and roles. Every change goes through here and is announced (accounts.signals), so the audit
trail (a layer above) records it in the same transaction."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from .roles import Role
from .signals import announced, user_created


def _role_groups(roles: list[Role]) -> list[Group]:
    """The groups for these roles, created if missing (migration 0001 creates them; a flushed
    database must not silently leave a user without a role)."""
    return [Group.objects.get_or_create(name=role.value)[0] for role in roles]


def user_create(*, username: str, email: str, password: str | None, roles: list[Role], actor, first_name: str = "",
                last_name: str = ""):
    User = get_user_model()
    with transaction.atomic(), announced():
        user = User(username=username, email=email, first_name=first_name, last_name=last_name)
        user.set_password(password) if password else user.set_unusable_password()
        user.is_staff = user.is_superuser = Role.ADMIN in roles
        user.save()
        user.groups.set(_role_groups(roles))
        user_created.send(sender=User, user=user, actor=actor, roles=sorted(r.value for r in roles))
    return user
