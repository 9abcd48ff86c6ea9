"""One way to send work to the Celery workers: after the transaction commits, and never failing the
request when the broker is down.

Every dispatch in the platform goes through `send_after_commit` (or `send` where no transaction
is open, such as a periodic sweep). A task is sent only once the rows it reads exist
(`transaction.on_commit`), and a broker outage never rolls back or fails committed work: the miss
is logged (task name and ids, never patient data) and `send` returns False. What then sends it
later is the owner's periodic sweep or the page's retry action; docs/architecture.md lists each.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from django.db import transaction
from kombu.exceptions import OperationalError as KombuOperationalError

logger = logging.getLogger(__name__)

# what a Celery send raises when Redis is unreachable (kombu wraps redis' ConnectionError)
BROKER_ERRORS: tuple[type[BaseException], ...] = (KombuOperationalError, ConnectionError, TimeoutError)


def send(task, *args, queue: str | None = None, countdown: float | None = None, **kwargs) -> bool:
    """Send `task(*args, **kwargs)` now. True when the broker took it; False (logged) when it is down."""
    options = {k: v for k, v in (("queue", queue), ("countdown", countdown)) if v is not None}
    try:
        task.apply_async(args=args, kwargs=kwargs, **options)
    except BROKER_ERRORS as exc:
        logger.warning("broker unavailable: %s%s not sent (%s); it is sent again by its sweep or retry action",
                       task.name, args, type(exc).__name__)
        return False
    return True


def send_after_commit(task, *args, queue: str | None = None, countdown: float | None = None, **kwargs) -> None:
    """Send the task once the current transaction commits (at once when none is open)."""
    transaction.on_commit(lambda: send(task, *args, queue=queue, countdown=countdown, **kwargs))


def call_after_commit(what: str, fn: Callable[[], object]) -> None:
    """Run `fn` (which sends work, e.g. a chord) after commit; a broker outage is logged, not raised."""

    def guarded() -> None:
        try:
            fn()
        except BROKER_ERRORS as exc:
            logger.warning("broker unavailable: %s not sent (%s); it is sent again by its sweep or retry action",
                           what, type(exc).__name__)

    transaction.on_commit(guarded)


def queue_depths(queues: Iterable[str]) -> dict[str, int] | None:
    """Messages waiting in each queue (a Redis list that does not exist is empty); None when the broker
    cannot be asked (down, or no broker: eager mode). The sweeps of lost messages read it: a Redis list is
    first in, first out, so a message still waiting keeps its queue non-empty."""
    from amqp.exceptions import ChannelError
    from celery import current_app
    from django.conf import settings

    if settings.CELERY_TASK_ALWAYS_EAGER:
        return None
    depths = {}
    try:
        with current_app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1)
            for queue in queues:
                channel = conn.channel()
                try:
                    depths[queue] = channel.queue_declare(queue=queue, passive=True).message_count
                except ChannelError:        # NOT_FOUND: an empty Redis queue has no key
                    depths[queue] = 0
                finally:
                    channel.close()
    except BROKER_ERRORS as exc:
        logger.warning("broker unavailable: queue depths not read (%s); lost messages are looked for next sweep",
                    type(exc).__name__)
        return None
    return depths
