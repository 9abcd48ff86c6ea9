"""Starting a shortcut audit goes through common.dispatch: the task is sent after the audit row
commits, and with the broker down the row stays, the request succeeds and the miss is logged."""
from __future__ import annotations

import logging

import pytest
from django.test import Client
from django.urls import reverse
from kombu.exceptions import OperationalError

from accounts.roles import Role
from validity.models import ShortcutAudit
from validity.tasks import shortcut_audit_task


@pytest.fixture
def broker_down(monkeypatch):
    """Every send of the audit task fails as kombu fails when Redis is unreachable."""
    calls = []

    def apply_async(args=None, kwargs=None, **options):
        calls.append((tuple(args or ()), options))
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(shortcut_audit_task, "apply_async", apply_async)
    return calls


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db(transaction=True)   # real commits: the send waits for one, and the row must outlive the miss
def test_with_the_broker_down_the_api_and_page_keep_the_audit_and_log_the_miss(audit_items, users, broker_down,
                                                                                 caplog):
    audit_items(5)
    client = _client(users[Role.CURATOR])
    with caplog.at_level(logging.WARNING, logger="common.dispatch"):
        response = client.post(reverse("validity:api-shortcut-audits"), {"split": "test"},
                               content_type="application/json")
    assert response.status_code == 202 and response.json()["status"] == "pending"
    audit = ShortcutAudit.objects.get(pk=response.json()["id"])
    assert audit.status == ShortcutAudit.Status.PENDING
    assert broker_down == [((audit.pk,), {"queue": "cpu"})]          # sent once, after the commit, to cpu
    assert f"validity.shortcut_audit({audit.pk},) not sent (OperationalError)" in caplog.text

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="common.dispatch"):
        page = client.post(reverse("validity:shortcut-create"), {"status": "approved", "split": "test"})
    second = ShortcutAudit.objects.exclude(pk=audit.pk).get()
    assert page.status_code == 302 and page["Location"] == reverse("validity:shortcut-detail",
                                                                    kwargs={"pk": second.pk})
    assert f"validity.shortcut_audit({second.pk},) not sent" in caplog.text
    assert ShortcutAudit.objects.count() == 2


@pytest.mark.django_db
def test_the_task_is_sent_only_once_the_audit_commits(audit_items, users, monkeypatch,
                                                      django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr(shortcut_audit_task, "apply_async",
                        lambda args=None, kwargs=None, **options: sent.append((tuple(args), options)))
    audit_items(5)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = _client(users[Role.CURATOR]).post(reverse("validity:api-shortcut-audits"), {"split": "test"},
                                                     content_type="application/json")
    assert response.status_code == 202 and sent == [] and len(callbacks) == 1
    callbacks[0]()
    assert sent == [((response.json()["id"],), {"queue": "cpu"})]
