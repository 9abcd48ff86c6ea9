"""A benchmark release: an immutable, signed snapshot of approved items (docs/releases.md).

Lifecycle: draft → (building) → built → published. The draft freezes *which* item versions are in it
(`ReleaseItem`, with each one's split) and its version; the build writes the folder and archive from
exactly those rows; publishing makes it permanent. A published release never changes: a correction
is a new release. Rows are written only through `releases.services` (which audit every step).
"""
from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import QAItem


class Release(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "draft"
        BUILDING = "building", "building"
        BUILT = "built", "built"
        PUBLISHED = "published", "published"
        FAILED = "failed", "build failed"

    name = models.CharField(max_length=80, default="med-r2", help_text="the dataset name in every file")
    version = models.CharField(max_length=40, unique=True, help_text="semantic version, e.g. 1.2.0")
    title = models.CharField(max_length=200, default="Med-R2 grounded stepwise VQA benchmark")
    description = models.TextField(blank=True)
    license = models.CharField(max_length=40, default="CC-BY-4.0", help_text="SPDX id of the release")
    previous = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="next_releases")
    selection = models.JSONField(default=dict, blank=True,
                                 help_text="item filters and explicit inclusions the admin chose")
    excluded = models.JSONField(default=dict, blank=True,
                                help_text="items left out (or included anyway) by reason, with their counts")
    changes = models.JSONField(default=list, blank=True, help_text="changelog against the previous release")
    bump = models.CharField(max_length=8, blank=True, help_text="what the semver rule asked for: major/minor/patch")
    counts = models.JSONField(default=dict, blank=True, help_text="items, variants, images per stage/category/...")
    taxonomy = models.JSONField(default=list, blank=True, help_text="stages and categories, frozen")
    taxonomy_version = models.CharField(max_length=64, blank=True)
    reference_standard = models.JSONField(default=dict, blank=True,
                                          help_text="who annotated and adjudicated (counts), agreement, outcomes")
    shortcut_audit = models.JSONField(null=True, blank=True, help_text="the latest shortcut audit's summary")
    audit_head = models.CharField(max_length=64, blank=True, help_text="audit-chain head hash at release time")
    created_date = models.DateField(help_text="the date written into the release (fixed: rebuilds are identical)")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.DRAFT, db_index=True)
    digest = models.CharField(max_length=64, blank=True, help_text="SHA-256 of MANIFEST.sha256")
    archive_sha256 = models.CharField(max_length=64, blank=True)
    archive_bytes = models.BigIntegerField(null=True, blank=True)
    public_key = models.CharField(max_length=64, blank=True, help_text="Ed25519 public key (hex) of the signature")
    folder = models.CharField(max_length=300, blank=True, help_text="the built folder, relative to the release root")
    progress = models.JSONField(default=dict, blank=True, help_text="live build progress: step, done, total")
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    built_at = models.DateTimeField(null=True, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)
    published_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} {self.version}"

    @property
    def is_frozen(self) -> bool:
        return self.status == self.Status.PUBLISHED


class ReleaseItem(models.Model):
    """One item version frozen into a release, with its patient-level split."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="items")
    item = models.ForeignKey(QAItem, on_delete=models.PROTECT, related_name="+")
    item_key = models.UUIDField(db_index=True)
    item_version = models.PositiveIntegerField()
    gold_hash = models.CharField(max_length=64, help_text="hash of the gold answer (the semver rule compares it)")
    split = models.CharField(max_length=8)
    variant_ids = models.JSONField(default=list, help_text="the variants frozen with it (new ones come later)")
    included_anyway = models.CharField(max_length=20, blank=True,
                                       help_text="why it would have been left out, when the admin included it")

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["release", "item_key"], name="release_item_once")]

    def __str__(self) -> str:
        return f"QA item {self.item_id} v{self.item_version} in release {self.release_id} ({self.split})"
