"""The sweep of parallel imports: chunks the broker lost are sent again, batches whose finish was lost are
finished (the import's twin of `workers.services.runs.runs_reconcile`).

A chunk's message can be lost between its send and its import: Redis restarted between a delivery and its
ack, a send refused while the broker was down, a worker killed with its host. Without the sweep such a
batch stays "importing" until someone runs `manage.py import_images --resume BATCH`. From the database
alone plus the depth of the chunks' queue:

- **lost**: a chunk of an unfinished batch sent more than `MEDR2_IMPORT_LOST_GRACE_S` ago that no worker has
  started, while its queue is empty (a Redis list is first in, first out: a message still waiting keeps its
  queue non-empty, so a chunk waiting its turn behind others is left alone);
- **silent**: a running chunk whose worker has shown no progress (`heartbeat_at`) for `MEDR2_IMPORT_STALE_S`,
  and that was not sent since then;
- **unfinished**: a batch whose chunks are all done but that is not finished (its last chunk's finish was
  lost): it is finished, once.

Lost and silent chunks are sent again through `ingest_parallel.chunks_resend` (renewed `dispatched_at`, one
audit event `annotation.import_batch.resend` per batch). A chunk is idempotent: one sent twice records each
file once. Run by Celery beat every `MEDR2_IMPORT_RECONCILE_S` (`annotation.imports_reconcile`) and by
`manage.py imports_reconcile [--loop]`; safe at any time and from several processes.
"""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import ImportBatch, ImportChunk
from annotation.services.ingest_parallel import chunks_resend, parallel_batch_finish
from common.dispatch import queue_depths

logger = logging.getLogger(__name__)
OPEN = (ImportChunk.Status.PENDING, ImportChunk.Status.RUNNING)


def chunk_queue() -> str:
    """The queue `annotation.import_chunk` is routed to (`CELERY_TASK_ROUTES`)."""
    from celery import current_app

    from annotation.tasks import import_chunk_task  # lazy: tasks.py imports this module

    route = current_app.amqp.router.route({}, import_chunk_task.name)
    return route["queue"].name


def chunks_lost(*, now=None) -> list[tuple[int, int, str]]:
    """(chunk id, batch id, why) of the chunks of unfinished batches that will never be imported unless sent
    again (the module's "lost" and "silent"). Chunks not started are left alone when the broker cannot be
    asked. A chunk from before `dispatched_at` existed counts as sent when its batch was created."""
    now = now or timezone.now()
    grace = now - timedelta(seconds=settings.MEDR2_IMPORT_LOST_GRACE_S)
    stale = now - timedelta(seconds=settings.MEDR2_IMPORT_STALE_S)
    chunks = ImportChunk.objects.filter(status__in=OPEN, batch__finished_at__isnull=True).annotate(
        sent=Coalesce("dispatched_at", "batch__created_at"), alive=Coalesce("heartbeat_at", "started_at"))
    silent = list(chunks.filter(status=ImportChunk.Status.RUNNING, sent__lt=stale)
                  .filter(Q(alive__lt=stale) | Q(alive__isnull=True)).values_list("pk", "batch_id"))
    lost = [(pk, batch_id, f"no progress for {settings.MEDR2_IMPORT_STALE_S} s") for pk, batch_id in silent]
    unstarted = list(chunks.filter(status=ImportChunk.Status.PENDING, sent__lt=grace).values_list("pk", "batch_id"))
    if unstarted:
        queue = chunk_queue()
        if (queue_depths([queue]) or {}).get(queue) == 0:
            lost += [(pk, batch_id, f"not started and queue {queue!r} is empty") for pk, batch_id in unstarted]
    return lost


def batches_done_unfinished() -> list[ImportBatch]:
    """Unfinished parallel batches whose chunks are all done (their last chunk's finish was lost)."""
    chunks = ImportChunk.objects.filter(batch=OuterRef("pk"))
    return list(ImportBatch.objects.filter(finished_at__isnull=True).filter(Exists(chunks))
                .exclude(Exists(chunks.filter(status__in=OPEN))).select_related("created_by"))


def imports_reconcile(*, now=None) -> dict:
    """The sweep (module docstring). Returns counts, for the log and the command."""
    now = now or timezone.now()
    lost = chunks_lost(now=now)
    resent = 0
    if lost:
        cutoff = now - timedelta(seconds=min(settings.MEDR2_IMPORT_LOST_GRACE_S, settings.MEDR2_IMPORT_STALE_S))
        resent = chunks_resend(why={pk: why for pk, _, why in lost}, sent_before=cutoff)
    finished = 0
    for batch in batches_done_unfinished():
        logger.warning("import batch %s: every chunk done but not finished; finished by the sweep", batch.pk)
        parallel_batch_finish(batch)
        finished += 1
    importing = ImportBatch.objects.filter(finished_at__isnull=True).filter(
        Exists(ImportChunk.objects.filter(batch=OuterRef("pk")))).count()
    return {"lost": len(lost), "resent": resent, "finished": finished, "importing": importing}
