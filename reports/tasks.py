"""Celery adapters for reports: id in, one service call; quiet when the row is gone or done. A worker
killed mid-build is redelivered (acks late) and builds again from the start: nothing is written to the
row until the three files are there."""
from __future__ import annotations

from celery import shared_task
from django.contrib.auth import get_user_model

from .services import report_version_build, signed_copy_build


@shared_task(name="reports.build_version", acks_late=True, reject_on_worker_lost=True)
def report_version_build_task(version_id: int, actor_id: int | None = None) -> dict:
    actor = get_user_model().objects.filter(pk=actor_id).first() if actor_id else None
    version = report_version_build(version_id=version_id, actor=actor)
    if version is None:
        return {"version_id": version_id, "status": "missing"}
    return {"version_id": version_id, "status": version.status, "document_hash": version.document_hash,
            "error": version.error}


@shared_task(name="reports.build_signed_copy", acks_late=True, reject_on_worker_lost=True)
def signed_copy_build_task(copy_id: int) -> dict:
    copy = signed_copy_build(copy_id=copy_id)
    if copy is None:
        return {"copy_id": copy_id, "status": "missing"}
    return {"copy_id": copy_id, "status": copy.status, "pdf_sha256": copy.pdf_sha256}
