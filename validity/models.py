"""Stored shortcut audits: one row per run (versioned by sequence number) and a compact per-item table.
Written only by validity.services."""
from __future__ import annotations

from django.conf import settings
from django.db import models


class ShortcutAudit(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    seq = models.PositiveIntegerField(unique=True, help_text="audit number: 1, 2, 3, ... (the version)")
    filters = models.JSONField(default=dict, blank=True, help_text="item filters as on /items/")
    split = models.CharField(max_length=8, default="test", help_text="the split the baselines are scored on")
    params = models.JSONField(default=dict, blank=True)
    item_count = models.PositiveIntegerField(default=0)
    digest = models.CharField(max_length=64, blank=True, help_text="SHA-256 of the audited item ids and content hashes")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING, db_index=True)
    error = models.TextField(blank=True)
    results = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-seq"]

    def __str__(self) -> str:
        return f"shortcut audit #{self.seq} ({self.status})"


class ShortcutAuditItem(models.Model):
    """One audited item version: its split, which blind baselines got it right (bitmask, bits in
    validity.shortcuts.BIT) and the verdict. Compact: ~110k rows per audit at the paper's scale."""

    audit = models.ForeignKey(ShortcutAudit, on_delete=models.CASCADE, related_name="items")
    item = models.ForeignKey("annotation.QAItem", on_delete=models.PROTECT, related_name="+")
    split = models.CharField(max_length=5)
    correct_mask = models.PositiveSmallIntegerField(default=0)
    image_necessary = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["audit", "item"], name="shortcut_audit_item_unique")]
        indexes = [models.Index(fields=["audit", "image_necessary"])]

    def __str__(self) -> str:
        return f"QA item {self.item_id} in shortcut audit {self.audit_id}"
