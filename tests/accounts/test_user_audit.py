"""Users enter the audit trail without accounts importing it: accounts announces `user_created`,
audit records it (in the creating transaction); Django admin edits of users are audited too."""
from __future__ import annotations

import json

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import IntegrityError
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from accounts.services import user_create
from audit.admin import AuditedModelAdmin
from audit.models import AuditEvent
from audit.services import audit_verify

pytestmark = pytest.mark.django_db


def test_creating_a_user_records_who_and_which_roles(users):
    actor = users[Role.ADMIN]
    user = user_create(username="new-reader", email="reader@example.org", password="pw-Secret-123",
                       roles=[Role.ANNOTATOR, Role.ADJUDICATOR], actor=actor)
    event = AuditEvent.objects.get(action="accounts.user.create", object_id=str(user.pk))
    assert event.actor == actor and event.object_type == "auth.user"
    assert event.after == {"username": "new-reader", "email": "reader@example.org",
                           "roles": ["adjudicator", "annotator"]}
    assert "pw-Secret" not in json.dumps(event.after) and user.password not in json.dumps(event.after)
    assert audit_verify().ok


def test_a_failed_creation_leaves_neither_user_nor_event(users):
    before = AuditEvent.objects.count()
    with pytest.raises(IntegrityError):
        user_create(username=users[Role.CURATOR].username, email="twin@example.org", password=None,
                    roles=[Role.CURATOR], actor=None)
    assert AuditEvent.objects.count() == before
    assert get_user_model().objects.filter(email="twin@example.org").count() == 0


def test_user_changes_in_django_admin_are_audited(users):
    assert isinstance(admin.site._registry[get_user_model()], AuditedModelAdmin)
    client = Client()
    client.force_login(users[Role.ADMIN])
    response = client.post(reverse("admin:auth_user_add"), {
        "username": "made-in-admin", "password1": "pw-Secret-456", "password2": "pw-Secret-456",
        "usable_password": "true"})
    assert response.status_code == 302, response.content[:3000]
    made = get_user_model().objects.get(username="made-in-admin")
    event = AuditEvent.objects.get(action="admin.auth.user.create", object_id=str(made.pk))
    assert event.actor == users[Role.ADMIN] and "password" not in event.after
