"""Reading the audit trail: the filtered event list, an object's history, the export rows, checkpoints."""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from itertools import islice

from django.db import transaction
from django.db.models import Func, Prefetch, QuerySet, TextField
from django.db.models.functions import Cast

from .filters import BOOKKEEPING_ACTIONS, EventFilters
from .models import AuditCheckpoint, AuditEvent, AuditEventObject


def audit_object_history(object_type: str = "", object_id: str = "") -> QuerySet[AuditEvent]:
    """Events whose own object matches, **or** that list the object among those they touched (a bulk
    approval of items 3, 5 and 9 is in the history of item 5), newest first. Either part may be empty
    (all objects of a type; an id of any type)."""
    own, listed = AuditEvent.objects.all(), AuditEventObject.objects.all()
    if object_type:
        own, listed = own.filter(object_type=object_type), listed.filter(object_type=object_type)
    if object_id:
        own, listed = own.filter(object_id=object_id), listed.filter(object_id=object_id)
    # a union of two indexed lookups (an OR across the two tables would scan the whole trail)
    ids = own.order_by().values("pk").union(listed.order_by().values("event_id"))
    return AuditEvent.objects.filter(pk__in=ids).order_by("-seq")


def _filtered(filters: EventFilters) -> QuerySet[AuditEvent]:
    f = filters
    if f.object_type or f.object_id:
        qs = audit_object_history(f.object_type, f.object_id)
    else:
        qs = AuditEvent.objects.order_by("-seq")
    if f.action:
        qs = qs.filter(action__startswith=f.action)
    if f.actor:
        qs = qs.filter(actor_name=f.actor)
    if f.date_from:
        qs = qs.filter(created_at__gte=dt.datetime.combine(f.date_from, dt.time.min, tzinfo=dt.UTC))
    if f.date_to:
        qs = qs.filter(created_at__lt=dt.datetime.combine(f.date_to + dt.timedelta(days=1), dt.time.min,
                                                          tzinfo=dt.UTC))
    if f.seq_from is not None:
        qs = qs.filter(seq__gte=f.seq_from)
    if f.seq_to is not None:
        qs = qs.filter(seq__lte=f.seq_to)
    if not f.bookkeeping:
        qs = qs.exclude(action__in=sorted(BOOKKEEPING_ACTIONS))
    return qs


def audit_event_list(filters: EventFilters | None = None) -> QuerySet[AuditEvent]:
    """The filtered events, newest first, each with the objects it touched (`event.touched.all()`)."""
    return _filtered(filters or EventFilters()).prefetch_related(
        Prefetch("touched", queryset=AuditEventObject.objects.order_by("id")))


# The columns an export reads, in order: the time as ISO 8601 text, before/after as JSON text (or None).
EXPORT_VALUES = ("seq", "created_text", "actor_name", "action", "object_type", "object_id", "before_text",
                 "after_text", "prev_hash", "hash")


class IsoUtc(Func):
    """A timestamp as ISO 8601 text in UTC, written by the database (`2026-12-01T18:02:00.123456+00:00`), so
    an export of a million events does not parse a million datetimes in Python."""

    output_field = TextField()

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template=(
            "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"+00:00\"')"), **extra)

    def as_sqlite(self, compiler, connection, **extra):   # stored as UTC text already (the demo)
        return self.as_sql(compiler, connection, template="(replace(%(expressions)s, ' ', 'T') || '+00:00')",
                           **extra)

    def as_sql(self, compiler, connection, template=None, **extra):
        return super().as_sql(compiler, connection, template=template or "CAST(%(expressions)s AS TEXT)", **extra)


def audit_event_export_chunks(filters: EventFilters | None = None, *,
                              chunk_size: int = 2000) -> Iterator[tuple[list[tuple], dict[int, list[list[str]]]]]:
    """Every filtered event for an export, oldest first (a full export reads as the chain), as chunks:
    `(rows, touched)` with up to `chunk_size` rows (tuples in `EXPORT_VALUES` order) and the objects those
    events touched, by seq.

    Two server-side cursors, in one read-only transaction, read `chunk_size` rows at a time: the events,
    and the objects they touched in the same order (merged as they come). JSON is never decoded. Memory
    stays bounded by a chunk, whatever the number of events."""
    events = _filtered(filters or EventFilters())
    with transaction.atomic():
        rows = (events.order_by("seq")
                .annotate(created_text=IsoUtc("created_at"), before_text=Cast("before", TextField()),
                          after_text=Cast("after", TextField()))
                .values_list(*EXPORT_VALUES).iterator(chunk_size=chunk_size))
        objects = (AuditEventObject.objects.filter(event_id__in=events.order_by().values("pk"))
                   .order_by("event__seq", "id").values_list("event__seq", "object_type", "object_id")
                   .iterator(chunk_size=chunk_size))
        pending = next(objects, None)
        while chunk := list(islice(rows, chunk_size)):
            last, touched = chunk[-1][0], {}
            while pending is not None and pending[0] <= last:
                touched.setdefault(pending[0], []).append([pending[1], pending[2]])
                pending = next(objects, None)
            yield chunk, touched


def audit_action_names() -> list[str]:
    return list(AuditEvent.objects.order_by().values_list("action", flat=True).distinct().order_by("action"))


def audit_checkpoint_list() -> QuerySet[AuditCheckpoint]:
    return AuditCheckpoint.objects.order_by("-seq", "-id")
