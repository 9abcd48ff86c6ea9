"""Label Studio: annotation batches, their tasks, pulled annotations, disagreements, sync log."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Image, QAItem

# --- Label Studio: annotation batches, their tasks, pulled annotations, sync log -------------------


class AnnotationBatch(models.Model):
    """A set of images (optionally with one QA item each) sent to radiologists as ONE Label Studio
    project. Push creates/updates the project and its tasks; pull (webhook hints + periodic
    reconciliation) brings annotations back as boxes with their authors."""

    class Status(models.TextChoices):
        DRAFT = "draft"            # created here, not yet in Label Studio
        PUSHING = "pushing"
        PUSHED = "pushed"          # project and every task exist in Label Studio
        RETRYING = "retrying"      # Label Studio unreachable; a retry is scheduled
        FAILED = "failed"          # gave up or a permanent error; see push_error and the sync log

    class Mode(models.TextChoices):
        INDEPENDENT = "independent"    # a blind read: no pre-annotations at all
        CORRECTION = "correction"      # readers correct pre-filled boxes; each box keeps its provenance

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    with_qa = models.BooleanField(default=False, help_text="tasks carry a QA item to answer")
    maximum_annotations = models.PositiveSmallIntegerField(default=1, help_text="annotators per task")
    readers = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="annotation_batches")
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.INDEPENDENT,
                            help_text="independent: no pre-fill; correction: pre-filled boxes to correct")
    per_reader = models.BooleanField(
        default=True, help_text="one Label Studio project per reader, each in the reader's own organization "
                                "(off only for batches pushed as one shared project before reader isolation)")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT, db_index=True)
    ls_project_id = models.PositiveIntegerField(null=True, blank=True, unique=True)
    label_config_hash = models.CharField(max_length=64, blank=True)
    push_attempts = models.PositiveIntegerField(default=0)
    push_error = models.TextField(blank=True)
    next_retry_at = models.DateTimeField(null=True, blank=True)
    pushed_at = models.DateTimeField(null=True, blank=True)
    urls_expire_at = models.DateTimeField(null=True, blank=True, help_text="signed image URLs in the tasks expire then")
    # reconciliation cursor: every Label Studio change after this instant is still to be pulled
    synced_until = models.DateTimeField(null=True, blank=True)
    last_sync_at = models.DateTimeField(null=True, blank=True)
    last_sync_ok = models.BooleanField(null=True)
    last_sync_error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "annotation_annotationbatch"   # kept from before the app split
        ordering = ["-id"]
        verbose_name_plural = "annotation batches"

    def __str__(self) -> str:
        return f"Annotation batch {self.pk}: {self.name}"

    @property
    def in_label_studio(self) -> bool:
        """Pushed (at least in part): a shared project, or readers' projects."""
        return self.ls_project_id is not None or (self.per_reader and self.pushed_at is not None)


class AnnotationTask(models.Model):
    """One Label Studio task: an image, and the QA item to answer when the batch has QA."""

    class Status(models.TextChoices):
        PENDING = "pending"        # not yet in Label Studio
        OPEN = "open"              # in Label Studio, fewer annotations than the batch asks for
        DONE = "done"              # enough annotations

    batch = models.ForeignKey(AnnotationBatch, on_delete=models.CASCADE, related_name="tasks")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="annotation_tasks")
    qa_item = models.ForeignKey(QAItem, null=True, blank=True, on_delete=models.PROTECT,
                                related_name="annotation_tasks")
    ls_task_id = models.PositiveIntegerField(null=True, blank=True, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    n_annotations = models.PositiveSmallIntegerField(default=0)
    agreement = models.JSONField(null=True, blank=True, help_text="labelstudio/agreement.py TaskAgreement")
    has_disagreement = models.BooleanField(default=False, db_index=True)
    ls_updated_at = models.DateTimeField(null=True, blank=True,
                                         help_text="task's updated_at in Label Studio at last pull")
    synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "annotation_annotationtask"   # kept from before the app split
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["batch", "image", "qa_item"], name="ls_task_unique_content")]
        indexes = [models.Index(fields=["batch", "status"])]

    def __str__(self) -> str:
        return f"Task {self.pk} of annotation batch {self.batch_id} (image {self.image_id})"


class LabelStudioAnnotation(models.Model):
    """One annotation pulled from Label Studio, kept whole (raw result) so nothing is lost; its
    regions become GroundingBoxes. A changed annotation is re-applied (old boxes retired); a
    deleted one is retired."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        RETIRED = "retired"        # deleted in Label Studio

    task = models.ForeignKey(AnnotationTask, on_delete=models.CASCADE, related_name="annotations")
    ls_annotation_id = models.PositiveIntegerField(unique=True)
    ls_task_id = models.PositiveIntegerField(null=True, blank=True,
                                             help_text="the Label Studio task (the reader's copy) it came from")
    ls_user_id = models.PositiveIntegerField(null=True, blank=True)
    ls_user_email = models.CharField(max_length=254, blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                               related_name="+")
    result = models.JSONField(default=list)
    result_hash = models.CharField(max_length=64)
    was_cancelled = models.BooleanField(default=False)
    lead_time_s = models.FloatField(null=True, blank=True)
    answer = models.JSONField(null=True, blank=True, help_text="chosen option(s) of the QA item")
    texts = models.JSONField(default=dict, blank=True, help_text="question / rationale text areas")
    n_regions = models.PositiveIntegerField(default=0)
    n_rejected = models.PositiveIntegerField(default=0)
    rejections = models.JSONField(default=list, blank=True,
                                  help_text="regions refused on pull: code, message, result id, control")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    ls_created_at = models.DateTimeField(null=True, blank=True)
    ls_updated_at = models.DateTimeField(null=True, blank=True)
    revision = models.PositiveIntegerField(default=1, help_text="times its content changed in Label Studio")
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "annotation_labelstudioannotation"   # kept from before the app split
        ordering = ["id"]
        indexes = [models.Index(fields=["task", "status"])]
        verbose_name = "Label Studio annotation"

    def __str__(self) -> str:
        return f"Label Studio annotation {self.ls_annotation_id} (task {self.task_id}, {self.status})"


class AnnotatorDisagreement(models.Model):
    """Annotators of one task disagree (boxes, labels, attributes or answers). One row per task,
    refreshed on every pull; the adjudication queue takes the open ones."""

    class Status(models.TextChoices):
        OPEN = "open"
        RESOLVED = "resolved"      # annotators now agree (an annotation changed)
        WITHDRAWN = "withdrawn"    # an annotation in it was deleted: nobody agreed, a side is gone
        QUEUED = "queued"          # taken by the adjudication queue

    task = models.OneToOneField(AnnotationTask, on_delete=models.CASCADE, related_name="disagreement")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="+")
    qa_item = models.ForeignKey(QAItem, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    kinds = models.JSONField(default=list, help_text="box_unmatched / box_label / attribute / answer")
    detail = models.JSONField(default=list)
    annotators = models.JSONField(default=list, help_text="user ids (None where unmapped)")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "annotation_annotatordisagreement"   # kept from before the app split
        ordering = ["id"]

    def __str__(self) -> str:
        return f"Disagreement on task {self.task_id} ({self.status})"


class SyncLogEntry(models.Model):
    """What happened between us and Label Studio: pushes, pulls, webhooks, and every rejected
    payload or region with a clear reason. Never holds patient data (ids, codes and messages)."""

    class Direction(models.TextChoices):
        PUSH = "push"
        PULL = "pull"
        WEBHOOK = "webhook"

    class Level(models.TextChoices):
        INFO = "info"
        WARNING = "warning"
        ERROR = "error"

    batch = models.ForeignKey(AnnotationBatch, null=True, blank=True, on_delete=models.CASCADE, related_name="sync_log")
    direction = models.CharField(max_length=8, choices=Direction.choices)
    level = models.CharField(max_length=8, choices=Level.choices, db_index=True)
    code = models.CharField(max_length=40)
    message = models.TextField()
    ls_task_id = models.PositiveIntegerField(null=True, blank=True)
    ls_annotation_id = models.PositiveIntegerField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        db_table = "annotation_synclogentry"   # kept from before the app split
        ordering = ["-id"]
        indexes = [models.Index(fields=["batch", "level"])]
        verbose_name_plural = "sync log entries"

    def __str__(self) -> str:
        return f"{self.direction} {self.level}: {self.code}"


class WebhookDelivery(models.Model):
    """A webhook body seen before (by SHA-256): a replay is acknowledged and ignored."""

    body_sha256 = models.CharField(max_length=64, unique=True)
    action = models.CharField(max_length=40)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)


    class Meta:
        db_table = "annotation_webhookdelivery"
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"{self.action or 'webhook'} {self.body_sha256[:12]}"


# --- Reader isolation: one Label Studio organization per reader ---------------------------------------


class ReaderWorkspace(models.Model):
    """A reader's own Label Studio organization (Community shows every annotation of a project, and
    every project of an organization, to every member), with the service account the platform uses
    in it. Created by `labelstudio.server.provision_reader` through Label Studio's own Django."""

    reader = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="ls_workspace")
    ls_email = models.CharField(max_length=254, help_text="the reader's Label Studio login (lower case)")
    ls_user_id = models.PositiveIntegerField()
    ls_organization_id = models.PositiveIntegerField(unique=True)
    ls_service_email = models.CharField(max_length=254)
    ls_token = models.CharField(max_length=64, help_text="the service account's API token in that organization")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"Label Studio organization {self.ls_organization_id} of {self.ls_email}"


class ReaderProject(models.Model):
    """A reader's copy of a batch: one Label Studio project in the reader's own organization."""

    batch = models.ForeignKey(AnnotationBatch, on_delete=models.CASCADE, related_name="reader_projects")
    reader = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    workspace = models.ForeignKey(ReaderWorkspace, on_delete=models.PROTECT, related_name="projects")
    ls_project_id = models.PositiveIntegerField(unique=True)
    label_config_hash = models.CharField(max_length=64, blank=True)
    synced_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["batch", "reader"], name="ls_reader_project_unique")]

    def __str__(self) -> str:
        return f"Label Studio project {self.ls_project_id} (batch {self.batch_id}, reader {self.reader_id})"


class ReaderTask(models.Model):
    """A reader's copy of one task (a Label Studio task in the reader's project)."""

    reader_project = models.ForeignKey(ReaderProject, on_delete=models.CASCADE, related_name="tasks")
    task = models.ForeignKey(AnnotationTask, on_delete=models.CASCADE, related_name="reader_copies")
    ls_task_id = models.PositiveIntegerField(unique=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["reader_project", "task"], name="ls_reader_task_unique")]

    def __str__(self) -> str:
        return f"Label Studio task {self.ls_task_id} (task {self.task_id})"
