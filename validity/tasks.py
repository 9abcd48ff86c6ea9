"""Celery adapter for the shortcut audit: an id in, one service call, quiet when done or gone."""
from __future__ import annotations

from celery import shared_task

from .services import shortcut_audit_execute


@shared_task(name="validity.shortcut_audit", acks_late=True, reject_on_worker_lost=True)
def shortcut_audit_task(audit_id: int) -> dict:
    audit = shortcut_audit_execute(audit_id=audit_id)
    return {"audit_id": audit_id, "status": audit.status if audit else "missing"}
