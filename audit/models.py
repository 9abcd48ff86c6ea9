"""Append-only, hash-chained audit trail.

Each event stores the exact canonical JSON it was hashed from, and
`hash = sha256(prev_hash || canonical)`. Rows are written only by
`audit.services.audit_record`, inside the transaction of the change they describe.
On PostgreSQL a trigger rejects UPDATE and DELETE on the three tables below (migrations 0002, 0004).
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


class AuditEventObject(models.Model):
    """One object a (bulk) event touched besides its own object: the indexed copy of the event's hashed
    `objects` list (audit/objects.py), so a per-object history finds bulk approvals."""

    event = models.ForeignKey(AuditEvent, on_delete=models.PROTECT, related_name="touched",
                              db_index=False)   # the unique constraint below indexes (event, ...)
    object_type = models.CharField(max_length=100)
    object_id = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["event", "object_type", "object_id"],
                                               name="audit_event_object_once")]
        indexes = [models.Index(fields=["object_type", "object_id"], name="audit_eventobject_object_idx")]

    def __str__(self) -> str:
        return f"#{self.event_id} {self.object_type}:{self.object_id}"


class AuditCheckpoint(models.Model):
    """The chain's head at a moment (a report, a release), signed with the platform's Ed25519 key.
    A checkpoint naming an event the chain no longer reaches shows that the tail was cut off."""

    seq = models.PositiveBigIntegerField(help_text="the head event's sequence number (its audit.checkpoint event)")
    head_hash = models.CharField(max_length=64, help_text="that event's hash")
    reason = models.CharField(max_length=200, help_text='e.g. "release med-r2 1.0.0", "report 3 v1"')
    created_at = models.DateTimeField()
    message = models.TextField(help_text="the exact canonical JSON that was signed")
    signature = models.CharField(max_length=128, help_text="Ed25519 signature of the message, hex")
    public_key = models.CharField(max_length=64, help_text="Ed25519 public key that verifies it, hex")

    class Meta:
        ordering = ["-seq", "-id"]

    def __str__(self) -> str:
        return f"checkpoint at #{self.seq} ({self.reason})"
