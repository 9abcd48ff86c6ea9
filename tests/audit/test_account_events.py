"""Users, role groups, memberships and API tokens are audited wherever they change (audit/auth_events.py):
in a shell or a management command (actor "system", the command named), in Django admin's password form
(the admin), through services (one event, not one per row). And every 403 is recorded as `auth.refused`,
at most once a minute per user and path."""
from __future__ import annotations

import sys

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from accounts.roles import Role
from accounts.services import user_create
from audit.auth_events import window_keys
from audit.models import AuditEvent
from audit.services import audit_verify

pytestmark = pytest.mark.django_db


def _events(prefix: str, after_seq: int = 0):
    return list(AuditEvent.objects.filter(action__startswith=prefix, seq__gt=after_seq).order_by("seq"))


def _head() -> int:
    last = AuditEvent.objects.order_by("-seq").first()
    return last.seq if last else 0


@pytest.fixture
def as_command(monkeypatch):
    def _as(*argv):
        monkeypatch.setattr(sys, "argv", ["manage.py", *argv])
    return _as


def test_renaming_a_role_group_in_a_shell_names_its_members(users, as_command):
    as_command("shell")
    auditor = users[Role.AUDITOR]
    group = Group.objects.get(name="auditor")
    group.name = "auditors"
    group.save()
    event = AuditEvent.objects.get(action="auth.group.change")
    assert event.actor is None and event.actor_name == "system"
    assert event.before == {"name": "auditor"}
    assert event.after == {"name": "auditors", "members": [auditor.username], "via": {"command": "manage.py shell"}}
    assert list(event.touched.values_list("object_type", "object_id")) == [("auth.user", str(auditor.pk))]


def test_memberships_from_either_side_are_recorded(users, as_command):
    as_command("shell")
    annotator = users[Role.ANNOTATOR]
    curator_group = Group.objects.get(name="curator")
    annotator.groups.add(curator_group)
    event = AuditEvent.objects.get(action="auth.user.groups.change")
    assert event.object_id == str(annotator.pk)
    assert event.after["added"] == ["curator"] and event.after["groups"] == ["annotator", "curator"]

    curator_group.user_set.remove(annotator)
    event = AuditEvent.objects.get(action="auth.group.members.change")
    assert event.object_id == str(curator_group.pk) and event.after["removed"] == [annotator.username]

    head = _head()
    annotator.groups.clear()
    (cleared,) = _events("auth.user.groups", head)
    assert cleared.after == {"removed": ["annotator"], "groups": [], "via": {"command": "manage.py shell"}}
    head = _head()
    annotator.groups.add(Group.objects.get(name="annotator"))
    annotator.groups.add(Group.objects.get(name="annotator"))   # already a member: nothing changed
    assert len(_events("auth.user.groups", head)) == 1


def test_drf_create_token_is_recorded_without_the_key(users, as_command):
    annotator = users[Role.ANNOTATOR]
    as_command("drf_create_token", annotator.username)
    call_command("drf_create_token", annotator.username, stdout=open("/dev/null", "w"))
    key = Token.objects.get(user=annotator).key
    event = AuditEvent.objects.get(action="authtoken.token.create")
    assert event.object_id == str(annotator.pk) and event.actor is None
    assert event.after == {"user": annotator.username, "via": {"command": "manage.py drf_create_token"}}
    call_command("drf_create_token", annotator.username, "--reset", stdout=open("/dev/null", "w"))
    assert AuditEvent.objects.get(action="authtoken.token.delete").before == {"user": annotator.username}
    assert AuditEvent.objects.filter(action="authtoken.token.create").count() == 2
    assert key not in "".join(AuditEvent.objects.values_list("canonical", flat=True))


def test_user_changes_outside_services_are_recorded_and_the_hash_never(users, as_command):
    as_command("shell")
    user = users[Role.CURATOR]
    user.set_password("another-Secret-456")
    user.is_staff = True
    user.save()
    event = AuditEvent.objects.get(action="auth.user.change")
    assert event.before == {"is_staff": False, "password": "(previous)"}
    assert event.after["is_staff"] is True and event.after["password"] == "changed"
    assert user.password not in event.canonical
    head = _head()
    user.save()                                              # nothing changed: nothing recorded
    user.save(update_fields=["last_login"])                 # a login's timestamp: the login event covers it
    assert _head() == head

    made = get_user_model().objects.create_user("from-shell", password="x-Secret-789")
    assert AuditEvent.objects.get(action="auth.user.create").object_id == str(made.pk)
    pk = made.pk
    made.groups.add(Group.objects.get(name="annotator"))
    made.delete()
    deleted = AuditEvent.objects.get(action="auth.user.delete")
    assert deleted.object_id == str(pk) and deleted.before["groups"] == ["annotator"]


def test_a_service_write_is_one_event(users):
    head = _head()
    user_create(username="one-event", email="", password=None, roles=[Role.CURATOR], actor=users[Role.ADMIN])
    assert [e.action for e in _events("", head)] == ["accounts.user.create"]


def test_a_password_changed_in_admin_names_the_admin(users):
    admin_user, curator = users[Role.ADMIN], users[Role.CURATOR]
    client = Client()
    client.force_login(admin_user)
    response = client.post(reverse("admin:auth_user_password_change", args=[curator.pk]),
                           {"password1": "new-Secret-2468-x", "password2": "new-Secret-2468-x",
                            "usable_password": "true"})
    assert response.status_code == 302
    event = AuditEvent.objects.get(action="auth.user.change", object_id=str(curator.pk))
    assert event.actor == admin_user and event.after["password"] == "changed"
    assert event.after["via"]["path"].startswith("/admin/")


def test_refusals_are_recorded_once_a_minute_per_user_and_path(users):
    annotator = users[Role.ANNOTATOR]
    client = Client()
    client.force_login(annotator)
    url = reverse("audit:event-list")
    for _ in range(5):
        assert client.get(url).status_code == 403
    (event,) = _events("auth.refused")
    assert event.actor == annotator and event.object_id == str(annotator.pk)
    assert event.after | {"via": None} == {"path": url, "method": "GET", "status": 403, "roles": ["annotator"],
                                           "ip": "127.0.0.1", "suppressed_before": 0, "via": None}
    assert client.get(reverse("audit:api-verify")).status_code == 403      # another path: its own event
    assert [e.after["path"] for e in _events("auth.refused")] == [url, reverse("audit:api-verify")]
    cache.delete(window_keys(f"refused:user:{annotator.pk}:{url}")[0])     # the minute passes
    assert client.get(url).status_code == 403
    assert _events("auth.refused")[-1].after["suppressed_before"] == 4
    assert audit_verify().ok


def test_anonymous_api_refusals_are_recorded_by_address(db):
    response = Client().get(reverse("audit:api-verify"), REMOTE_ADDR="198.51.100.20")
    assert response.status_code == 403
    event = AuditEvent.objects.get(action="auth.refused")
    assert event.actor is None and event.after["ip"] == "198.51.100.20" and event.after["roles"] == []
