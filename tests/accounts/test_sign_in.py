"""Sign-in is throttled (django-axes: a username + address pair is locked out after
AXES_FAILURE_LIMIT failures, for the cool-off) and every sign-in event is in the audit trail: login,
logout, failed login (the username tried, never the password) and lockout."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.roles import Role
from audit.models import AuditEvent
from audit.services import audit_verify

pytestmark = pytest.mark.django_db

PASSWORD = "pw-Secret-123"   # tests/conftest.py make_user


def _attempt(client, username, password, ip="10.0.0.1"):
    return client.post(reverse("accounts:login"), {"username": username, "password": password}, REMOTE_ADDR=ip)


def test_thirty_wrong_passwords_then_the_right_one_is_refused(users, settings):
    curator = users[Role.CURATOR]
    client = Client()
    for n in range(30):
        response = _attempt(client, curator.username, f"wrong-{n}")
        assert response.status_code == (200 if n < settings.AXES_FAILURE_LIMIT - 1 else 429), n
    response = _attempt(client, curator.username, PASSWORD)
    assert response.status_code == 429
    assert b"Too many failed sign-ins" in response.content
    assert client.get(reverse("dashboard:index")).status_code == 302      # not signed in

    failed = AuditEvent.objects.filter(action="auth.login.failed")
    assert failed.count() == settings.AXES_FAILURE_LIMIT                  # then the lockout counts them
    assert all(e.after["username"] == curator.username and e.after["ip"] == "10.0.0.1" for e in failed)
    assert failed.filter(object_id=str(curator.pk)).count() == settings.AXES_FAILURE_LIMIT
    lockouts = AuditEvent.objects.filter(action="auth.lockout")
    assert lockouts.count() == 1                                          # at most one a minute per pair
    assert lockouts.get().after["username"] == curator.username and lockouts.get().after["cooloff_minutes"] == 15
    canonical = "".join(AuditEvent.objects.values_list("canonical", flat=True))
    assert "wrong-" not in canonical and PASSWORD not in canonical        # never a password
    assert not AuditEvent.objects.filter(action="auth.login").exists()
    assert audit_verify().ok


def test_the_lockout_is_per_username_and_address(users, settings):
    curator, auditor = users[Role.CURATOR], users[Role.AUDITOR]
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        _attempt(client, curator.username, f"wrong-{n}")
    assert _attempt(client, curator.username, PASSWORD).status_code == 429
    assert _attempt(Client(), curator.username, PASSWORD, ip="10.0.0.2").status_code == 302   # another address
    assert _attempt(Client(), auditor.username, PASSWORD).status_code == 302                  # another user


def test_the_cool_off_lifts_the_lockout(users, settings):
    from axes.models import AccessAttempt

    curator = users[Role.CURATOR]
    for n in range(settings.AXES_FAILURE_LIMIT):
        _attempt(Client(), curator.username, f"wrong-{n}")
    assert _attempt(Client(), curator.username, PASSWORD).status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    assert _attempt(Client(), curator.username, PASSWORD).status_code == 302


def test_a_success_resets_the_count(users, settings):
    curator = users[Role.CURATOR]
    for _ in range(2):
        for n in range(settings.AXES_FAILURE_LIMIT - 1):
            assert _attempt(Client(), curator.username, f"wrong-{n}").status_code == 200
        assert _attempt(Client(), curator.username, PASSWORD).status_code == 302


def test_login_and_logout_are_recorded(users):
    annotator = users[Role.ANNOTATOR]
    client = Client()
    assert _attempt(client, annotator.username, PASSWORD, ip="192.0.2.7").status_code == 302
    login = AuditEvent.objects.get(action="auth.login")
    assert login.actor == annotator and login.object_id == str(annotator.pk) and login.after["ip"] == "192.0.2.7"
    assert login.after["via"] == {"path": "/login/", "method": "POST"}
    client.post(reverse("accounts:logout"))
    assert AuditEvent.objects.get(action="auth.logout").actor == annotator


def test_an_unknown_username_is_recorded_without_an_object(users):
    _attempt(Client(), "nobody-here", "guess")
    event = AuditEvent.objects.get(action="auth.login.failed")
    assert event.after["username"] == "nobody-here" and event.object_id == "" and event.actor is None


def test_the_address_comes_from_the_proxy_when_one_is_configured(users, settings):
    settings.MEDR2_PROXY_COUNT = 1
    Client().post(reverse("accounts:login"), {"username": "x", "password": "y"}, REMOTE_ADDR="172.18.0.1",
                  HTTP_X_FORWARDED_FOR="203.0.113.9, 198.51.100.4")
    assert AuditEvent.objects.get(action="auth.login.failed").after["ip"] == "198.51.100.4"


def test_passwords_are_validated(users):
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    for weak, reason in (("4815162342424242", "entirely numeric"), ("short-1", "too short"),
                         ("password1234", "too common"), (users[Role.CURATOR].username + "x", "similar")):
        with pytest.raises(ValidationError, match=reason):
            validate_password(weak, user=users[Role.CURATOR])
    validate_password("correct-horse-battery-staple-9")
