from __future__ import annotations

from django.db.models import QuerySet

from common.filters import filter_by

from .models import AuditEvent


def audit_event_list(*, action: str = "", actor: str = "", object_type: str = "",
                     object_id: str = "") -> QuerySet[AuditEvent]:
    filters = {"action": action, "actor": actor, "object_type": object_type, "object_id": object_id}
    return filter_by(AuditEvent.objects.select_related("actor").order_by("-seq"), filters,
                     {"action": "action__startswith", "actor": "actor_name", "object_type": "object_type",
                      "object_id": "object_id"})


def audit_action_names() -> list[str]:
    return list(AuditEvent.objects.order_by().values_list("action", flat=True).distinct().order_by("action"))
