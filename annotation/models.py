"""Benchmark content: images, taxonomy, findings and boxes, chains, versioned QA items, variants.

Rows are written only through `annotation.services` (which also write the audit trail);
see docs/domain.md for the picture.
"""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class Stage(models.Model):
    """One of the four clinical reading stages (data, seeded by migration 0002)."""

    code = models.CharField(max_length=8, unique=True)  # S1..S4
    order = models.PositiveSmallIntegerField(unique=True)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["order"]

    def __str__(self) -> str:
        return f"{self.code} {self.name}"


class AnswerType(models.TextChoices):
    SINGLE_CHOICE = "single_choice", "single choice"
    YES_NO = "yes_no", "yes / no"
    BOX = "box", "bounding box"
    MULTI_CHOICE = "multi_choice", "multi-select"
    SHORT_TEXT = "short_text", "short text"


class TaskCategory(models.Model):
    """One of the task categories (31 seeded); editable data, not code."""

    code = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=120)
    stage = models.ForeignKey(Stage, on_delete=models.PROTECT, related_name="categories")
    answer_type = models.CharField(max_length=20, choices=AnswerType.choices)
    prompt_template = models.TextField()
    alt_templates = models.JSONField(default=list, blank=True, help_text="further phrasings, chosen by seed")
    rule = models.JSONField(default=dict, blank=True, help_text="how gold and distractors are derived (annotation/chains/definitions.py)")
    description = models.TextField(blank=True)
    order = models.PositiveSmallIntegerField(default=0)
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["stage__order", "order"]
        verbose_name_plural = "task categories"

    def __str__(self) -> str:
        return self.name


class ImportBatch(models.Model):
    """One run of the importer (command, upload or demo), with its per-file results."""

    class Source(models.TextChoices):
        COMMAND = "command"
        UPLOAD = "upload"
        DEMO = "demo"

    source = models.CharField(max_length=16, choices=Source.choices)
    source_dataset = models.CharField(max_length=200, blank=True)
    license = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    files_imported = models.PositiveIntegerField(default=0)
    files_duplicate = models.PositiveIntegerField(default=0)
    files_failed = models.PositiveIntegerField(default=0)
    images_created = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "import batches"


class ImportFileResult(models.Model):
    class Status(models.TextChoices):
        IMPORTED = "imported"
        DUPLICATE = "duplicate"
        FAILED = "failed"

    batch = models.ForeignKey(ImportBatch, on_delete=models.CASCADE, related_name="files")
    name = models.CharField(max_length=500, help_text="path as given (relative inside a zip)")
    status = models.CharField(max_length=16, choices=Status.choices)
    code = models.CharField(max_length=50, blank=True, help_text="stable error code when failed")
    message = models.TextField(blank=True)
    images_created = models.PositiveIntegerField(default=0)
    images_duplicate = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["id"]


class Image(models.Model):
    """One 2-D image (a DICOM frame, a NIfTI slice or a raster file), content-addressed."""

    sha256 = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the source pixel data of this frame")
    file = models.CharField(max_length=200, help_text="rendered PNG, relative to the storage root")
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    modality = models.CharField(max_length=16, blank=True, db_index=True)
    body_region = models.CharField(max_length=64, blank=True, db_index=True)
    source_format = models.CharField(max_length=16)
    source_file = models.CharField(max_length=200, blank=True, help_text="de-identified source, relative to the storage root")
    source_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    frame_index = models.PositiveIntegerField(null=True, blank=True)
    source_dataset = models.CharField(max_length=200, blank=True)
    license = models.CharField(max_length=200, blank=True)
    split_group = models.CharField(max_length=64, blank=True, db_index=True, help_text="patient/study key; splits never divide a group")
    window_center = models.FloatField(null=True, blank=True)
    window_width = models.FloatField(null=True, blank=True)
    window_source = models.CharField(max_length=20, default="none")
    deid = models.JSONField(default=dict, blank=True, help_text="what de-identification did (never the removed values)")
    metadata = models.JSONField(default=dict, blank=True)
    import_batch = models.ForeignKey(ImportBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="images")
    import_file = models.ForeignKey("ImportFileResult", null=True, blank=True, on_delete=models.SET_NULL, related_name="images")
    assignees = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="assigned_images")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["modality", "body_region"])]

    def __str__(self) -> str:
        return f"Image {self.pk} ({self.modality or self.source_format} {self.width}x{self.height})"


class Finding(models.Model):
    """Something seen on an image: a lesion or an anatomical structure, with attributes."""

    class Kind(models.TextChoices):
        LESION = "lesion"
        ANATOMY = "anatomy"

    class Source(models.TextChoices):
        PHANTOM = "phantom", "phantom ground truth"
        LABEL_STUDIO = "label_studio", "Label Studio"
        MANUAL = "manual"
        MODEL = "model"

    class Status(models.TextChoices):
        ACTIVE = "active"
        RETIRED = "retired"

    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="findings")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    label = models.CharField(max_length=100)
    attributes = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["image", "status"])]

    def __str__(self) -> str:
        return f"{self.kind}: {self.label}"


class GroundingBox(models.Model):
    """A pixel box (x0, y0) inclusive top-left, (x1, y1) exclusive bottom-right, on an image."""

    finding = models.ForeignKey(Finding, on_delete=models.PROTECT, related_name="boxes")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="boxes")
    x0 = models.FloatField()
    y0 = models.FloatField()
    x1 = models.FloatField()
    y1 = models.FloatField()
    label = models.CharField(max_length=100)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    source = models.CharField(max_length=16, choices=Finding.Source.choices)
    ls_project_id = models.CharField(max_length=32, blank=True)
    ls_task_id = models.CharField(max_length=32, blank=True)
    ls_annotation_id = models.CharField(max_length=32, blank=True)
    ls_result_id = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=16, choices=Finding.Status.choices, default=Finding.Status.ACTIVE, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(x0__gte=0) & Q(y0__gte=0), name="box_origin_non_negative"),
            models.CheckConstraint(condition=Q(x1__gt=F("x0")) & Q(y1__gt=F("y0")), name="box_positive_area"),
            # one ACTIVE box per Label Studio region: a changed annotation retires its old boxes
            models.UniqueConstraint(
                fields=["ls_annotation_id", "ls_result_id"],
                condition=~Q(ls_result_id="") & Q(status="active"),
                name="box_unique_active_label_studio_result",
            ),
        ]
        indexes = [models.Index(fields=["image", "status"])]

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def xyxy(self) -> tuple[float, float, float, float]:
        return (self.x0, self.y0, self.x1, self.y1)


class Chain(models.Model):
    """A stepwise question chain on one image, walking the stages in reading order."""

    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="chains")
    seed = models.BigIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["image", "seed"], name="chain_unique_image_seed")]


class QAItem(models.Model):
    """One step of a chain. Versioned: an edit creates a new row with version+1 and the same
    `item_key`; the old row stays readable with `is_current=False`."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        IN_REVIEW = "in_review", "in review"
        APPROVED = "approved"
        REJECTED = "rejected"

    item_key = models.UUIDField(default=uuid.uuid4, db_index=True, help_text="stable identity across versions")
    version = models.PositiveIntegerField(default=1)
    is_current = models.BooleanField(default=True)
    previous = models.OneToOneField("self", null=True, blank=True, on_delete=models.PROTECT, related_name="next_version")
    chain = models.ForeignKey(Chain, on_delete=models.PROTECT, related_name="items")
    step = models.PositiveSmallIntegerField()
    stage = models.ForeignKey(Stage, on_delete=models.PROTECT, related_name="+")
    category = models.ForeignKey(TaskCategory, on_delete=models.PROTECT, related_name="items")
    question = models.TextField()
    options = models.JSONField(default=list, blank=True)
    gold_answer = models.JSONField()
    evidence_boxes = models.ManyToManyField(GroundingBox, blank=True, related_name="qa_items")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT, db_index=True)
    content_hash = models.CharField(max_length=64, db_index=True)
    change_reason = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["chain_id", "step", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["item_key", "version"], name="qaitem_unique_version"),
            models.UniqueConstraint(fields=["item_key"], condition=Q(is_current=True), name="qaitem_one_current_version"),
        ]
        indexes = [models.Index(fields=["chain", "step"]), models.Index(fields=["stage", "category", "status"])]

    @property
    def gold_options(self) -> list:
        """The option texts that are correct (several for multi-select, none for box answers)."""
        if not self.options:
            return []
        gold = self.gold_answer if isinstance(self.gold_answer, list) else [self.gold_answer]
        return [o for o in self.options if o in gold]


class VariantKind(models.TextChoices):
    CLEAN = "clean"
    MISLEADING_HINT = "misleading_hint", "misleading hint"
    CORRECT_HINT = "correct_hint", "correct hint"
    FALSE_PREMISE = "false_premise", "false premise"
    OPTION_PERMUTATION = "option_permutation", "option permutation"
    NEGATION = "negation", "negation / hallucinated-finding twin"
    CORRECT_VISUAL_CUE = "correct_visual_cue", "correct visual cue"
    WRONG_VISUAL_CUE = "wrong_visual_cue", "wrong visual cue"
    BOX_DOSE_RESPONSE = "box_dose_response", "box dose-response"
    IMAGE_ABLATION = "image_ablation", "image ablation"
    PREMISE_INJECTION = "premise_injection", "premise injection"


class Variant(models.Model):
    """A QA item version as shown to a model: clean or one perturbation, deterministic from
    (item, kind, params, seed). Visual variants store a recipe, rendered on demand."""

    item = models.ForeignKey(QAItem, on_delete=models.PROTECT, related_name="variants")
    kind = models.CharField(max_length=32, choices=VariantKind.choices, db_index=True)
    params = models.JSONField(default=dict, blank=True)
    seed = models.BigIntegerField(default=0)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    prompt = models.TextField()
    options = models.JSONField(default=list, blank=True)
    expected_answer = models.JSONField()
    image_recipe = models.JSONField(null=True, blank=True)
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["item", "kind", "content_hash"], name="variant_unique_content")]
        indexes = [models.Index(fields=["item", "seed"])]


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

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    with_qa = models.BooleanField(default=False, help_text="tasks carry a QA item to answer")
    maximum_annotations = models.PositiveSmallIntegerField(default=1, help_text="annotators per task")
    readers = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="annotation_batches")
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
        ordering = ["-id"]
        verbose_name_plural = "annotation batches"

    def __str__(self) -> str:
        return f"Annotation batch {self.pk}: {self.name}"


class AnnotationTask(models.Model):
    """One Label Studio task: an image, and the QA item to answer when the batch has QA."""

    class Status(models.TextChoices):
        PENDING = "pending"        # not yet in Label Studio
        OPEN = "open"              # in Label Studio, fewer annotations than the batch asks for
        DONE = "done"              # enough annotations

    batch = models.ForeignKey(AnnotationBatch, on_delete=models.CASCADE, related_name="tasks")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="annotation_tasks")
    qa_item = models.ForeignKey(QAItem, null=True, blank=True, on_delete=models.PROTECT, related_name="annotation_tasks")
    ls_task_id = models.PositiveIntegerField(null=True, blank=True, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    n_annotations = models.PositiveSmallIntegerField(default=0)
    agreement = models.JSONField(null=True, blank=True, help_text="annotation/labelstudio/agreement.py TaskAgreement")
    has_disagreement = models.BooleanField(default=False, db_index=True)
    ls_updated_at = models.DateTimeField(null=True, blank=True, help_text="task's updated_at in Label Studio at last pull")
    synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["batch", "image", "qa_item"], name="ls_task_unique_content")]
        indexes = [models.Index(fields=["batch", "status"])]


class LabelStudioAnnotation(models.Model):
    """One annotation pulled from Label Studio, kept whole (raw result) so nothing is lost; its
    regions become GroundingBoxes. A changed annotation is re-applied (old boxes retired); a
    deleted one is retired."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        RETIRED = "retired"        # deleted in Label Studio

    task = models.ForeignKey(AnnotationTask, on_delete=models.CASCADE, related_name="annotations")
    ls_annotation_id = models.PositiveIntegerField(unique=True)
    ls_user_id = models.PositiveIntegerField(null=True, blank=True)
    ls_user_email = models.CharField(max_length=254, blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    result = models.JSONField(default=list)
    result_hash = models.CharField(max_length=64)
    was_cancelled = models.BooleanField(default=False)
    lead_time_s = models.FloatField(null=True, blank=True)
    answer = models.JSONField(null=True, blank=True, help_text="chosen option(s) of the QA item")
    texts = models.JSONField(default=dict, blank=True, help_text="question / rationale text areas")
    n_regions = models.PositiveIntegerField(default=0)
    n_rejected = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    ls_created_at = models.DateTimeField(null=True, blank=True)
    ls_updated_at = models.DateTimeField(null=True, blank=True)
    revision = models.PositiveIntegerField(default=1, help_text="times its content changed in Label Studio")
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["task", "status"])]


class AnnotatorDisagreement(models.Model):
    """Annotators of one task disagree (boxes, labels, attributes or answers). One row per task,
    refreshed on every pull; the adjudication queue takes the open ones."""

    class Status(models.TextChoices):
        OPEN = "open"
        RESOLVED = "resolved"      # annotators now agree (an annotation changed)
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
        ordering = ["id"]


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
        ordering = ["-id"]
        indexes = [models.Index(fields=["batch", "level"])]


class WebhookDelivery(models.Model):
    """A webhook body seen before (by SHA-256): a replay is acknowledged and ignored."""

    body_sha256 = models.CharField(max_length=64, unique=True)
    action = models.CharField(max_length=40)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)


# --- Adjudication (docs/adjudication.md) ------------------------------------------------------------


class AdjudicationCase(models.Model):
    """An item (all its versions: one `item_key`) or an image where models, gold and annotators
    disagree, found by the detection rules (annotation/adjudication/rules.py). One case per key:
    re-running detection updates an open case and never duplicates it."""

    class Status(models.TextChoices):
        OPEN = "open"
        IN_PROGRESS = "in_progress", "in progress"
        RESOLVED = "resolved"

    key = models.CharField(max_length=80, unique=True, help_text="item:<item_key> or image:<id>")
    item = models.ForeignKey(QAItem, null=True, blank=True, on_delete=models.PROTECT, related_name="adjudication_cases")
    item_key = models.UUIDField(null=True, blank=True, db_index=True)
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="adjudication_cases")
    stage = models.ForeignKey(Stage, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    category = models.ForeignKey(TaskCategory, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    modality = models.CharField(max_length=16, blank=True, db_index=True)
    rules = models.CharField(max_length=300, help_text="',rule_a,rule_b,' (filterable on every database)")
    hits = models.JSONField(default=list, help_text="the rule hits: rule, priority, models, evidence")
    priority = models.FloatField()
    run_ids = models.JSONField(default=list, help_text="evaluation runs whose predictions raised it")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN, db_index=True)
    version = models.PositiveIntegerField(default=1, help_text="optimistic locking for verdicts")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-priority", "id"]
        indexes = [models.Index(fields=["status", "-priority", "id"]), models.Index(fields=["stage", "status"]),
                   models.Index(fields=["category", "status"])]

    @property
    def rule_names(self) -> list[str]:
        return [r for r in self.rules.split(",") if r]
