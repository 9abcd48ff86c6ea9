"""Backfill the touched-object rows of bulk events written before events named their objects.

Those events list their objects only in `after` (`annotation.qa_item.review` → `item_ids`,
`annotation.image.assign` → `image_ids`, `adjudication.cases.assign_round_robin` → `case_ids`;
audit/objects.py `LEGACY_OBJECT_LISTS`). Their hashed records are not touched: the rows are derived
from hashed content, and `audit_verify` checks that such rows equal exactly what `after` names.
Nothing else changes; reversing leaves the rows (they go with the table when 0003 is reversed).
"""
import json

from django.db import migrations

from audit.objects import LEGACY_OBJECT_LISTS, legacy_objects


def backfill(apps, schema_editor):
    AuditEvent = apps.get_model("audit", "AuditEvent")
    AuditEventObject = apps.get_model("audit", "AuditEventObject")
    done = set(AuditEventObject.objects.values_list("event_id", flat=True).distinct())
    rows = []
    events = (AuditEvent.objects.filter(action__in=sorted(LEGACY_OBJECT_LISTS)).order_by("seq")
              .values_list("pk", "action", "after", "canonical"))
    for pk, action, after, canonical in events.iterator(chunk_size=2000):
        if pk in done or "objects" in json.loads(canonical):   # written with its own hashed list
            continue
        rows.extend(AuditEventObject(event_id=pk, object_type=t, object_id=i) for t, i in legacy_objects(action, after))
        if len(rows) >= 5000:
            AuditEventObject.objects.bulk_create(rows, batch_size=5000)
            rows = []
    AuditEventObject.objects.bulk_create(rows, batch_size=5000)


class Migration(migrations.Migration):
    dependencies = [("audit", "0004_append_only_objects_and_checkpoints")]
    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
