"""Append-only, hash-chained audit trail.

Each event stores the exact canonical JSON it was hashed from, and
`hash = sha256(prev_hash || canonical)`. Rows are written only by
`audit.services.audit_record`, inside the transaction of the change they describe.
On PostgreSQL a trigger rejects UPDATE and DELETE on this table (migration 0002).
"""
from django.conf import settings
from django.db import models

GENESIS_HASH = "0" * 64


class AuditEvent(models.Model):
    seq = models.PositiveBigIntegerField(unique=True, help_text="1, 2, 3, ... without gaps")
    created_at = models.DateTimeField(db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_name = models.CharField(max_length=150, help_text="username at the time, or 'system'")
    action = models.CharField(max_length=100, db_index=True, help_text="dotted name, e.g. annotation.image.import")
    object_type = models.CharField(max_length=100, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    canonical = models.TextField(help_text="the exact JSON text that was hashed")
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    class Meta:
        ordering = ["-seq"]
        indexes = [models.Index(fields=["object_type", "object_id"]), models.Index(fields=["actor", "-seq"])]

    def __str__(self) -> str:
        return f"#{self.seq} {self.action} {self.object_type}:{self.object_id}"
