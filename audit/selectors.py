from __future__ import annotations

from django.db.models import QuerySet

from .models import AuditEvent


def audit_event_list(*, action: str = "", actor: str = "", object_type: str = "", object_id: str = "") -> QuerySet[AuditEvent]:
    qs = AuditEvent.objects.select_related("actor").order_by("-seq")
    if action:
        qs = qs.filter(action__startswith=action)
    if actor:
        qs = qs.filter(actor_name=actor)
    if object_type:
        qs = qs.filter(object_type=object_type)
    if object_id:
        qs = qs.filter(object_id=object_id)
    return qs


def audit_action_names() -> list[str]:
    return list(AuditEvent.objects.order_by().values_list("action", flat=True).distinct().order_by("action"))
