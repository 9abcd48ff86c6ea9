"""Celery adapters for image import. Thin: ids in, one service call, quiet when there is nothing to do.

`annotation.import_chunk` is idempotent (files already recorded are skipped), so it is acked late and
rejected (redelivered) when its worker dies mid-chunk (a file that keeps killing it is given up:
`services.ingest_retry`); routed to the `cpu` queue (CELERY_TASK_ROUTES).
`annotation.imports_reconcile` is the sweep Celery beat runs every MEDR2_IMPORT_RECONCILE_S.
"""
from __future__ import annotations

from celery import shared_task

from .services.ingest_parallel import import_chunk_run
from .services.ingest_reconcile import imports_reconcile


@shared_task(name="annotation.import_chunk", acks_late=True, reject_on_worker_lost=True)
def import_chunk_task(chunk_id: int) -> str:
    return import_chunk_run(chunk_id=chunk_id)


@shared_task(name="annotation.imports_reconcile")
def imports_reconcile_task() -> dict:
    """Celery beat: send again the chunks the broker lost; finish batches whose last chunk is done."""
    return imports_reconcile()
