"""Benchmark content: images, taxonomy, findings and boxes, chains, versioned QA items, variants
(docs/domain.md). Written only through `annotation.services` (which also write the audit trail).
Label Studio's models live in `labelstudio.models`, adjudication's in `adjudication.models`."""
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
    rule = models.JSONField(default=dict, blank=True,
                            help_text="how gold and distractors are derived (annotation/chains/definitions.py)")
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
    files_total = models.PositiveIntegerField(null=True, blank=True,
                                              help_text="files to report, when known before the import (progress)")
    options = models.JSONField(default=dict, blank=True,
                               help_text="import defaults and decode options, for the chunks run on workers")

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "import batches"

    @property
    def files_done(self) -> int:
        return self.files_imported + self.files_duplicate + self.files_failed

    def __str__(self) -> str:
        when = f", {self.created_at:%Y-%m-%d %H:%M}" if self.created_at else ""
        return f"Import {self.pk} ({self.source}{when})"


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
    position = models.PositiveIntegerField(null=True, blank=True,
                                           help_text="the file's place in its batch; one result per place")

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["batch", "position"], name="importfileresult_batch_position")]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class ImportChunk(models.Model):
    """A slice of a parallel import's files, imported by one task (`annotation.import_chunk`). Redone
    whole when its worker dies: files whose result is recorded are skipped, so nothing imports twice.
    Sent again by the sweep (`imports_reconcile`) when its message was lost or its worker went silent.
    A retry imports one file at a time and gives up a file that keeps killing its worker
    (`services.ingest_retry`)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"

    batch = models.ForeignKey(ImportBatch, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    entries = models.JSONField(help_text="[position, name, path, display name, ordinal] of each file")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True, help_text="when its message was last sent")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="its worker's last sign of progress")
    current_position = models.PositiveIntegerField(
        null=True, blank=True, help_text="a retry's file being imported (set before each file, from the second "
                                         "attempt on): a death is pinned to it")
    current_deaths = models.PositiveIntegerField(
        default=0, help_text="attempts that died on the file at current_position (ingest_retry)")

    class Meta:
        ordering = ["batch", "index"]
        constraints = [models.UniqueConstraint(fields=["batch", "index"], name="importchunk_batch_index")]
        # the sweep reads only the chunks not done: a small index however many chunks were ever imported
        indexes = [models.Index(fields=["status"], condition=~models.Q(status="done"), name="importchunk_open")]

    def __str__(self) -> str:
        return f"Import {self.batch_id} chunk {self.index} ({self.status})"


class Image(models.Model):
    """One 2-D image (a DICOM frame, a NIfTI slice or a raster file), content-addressed."""

    sha256 = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the source pixel data of this frame")
    file = models.CharField(max_length=200, help_text="rendered PNG, relative to the storage root")
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    modality = models.CharField(max_length=16, blank=True, db_index=True)
    body_region = models.CharField(max_length=64, blank=True, db_index=True)
    source_format = models.CharField(max_length=16)
    source_file = models.CharField(max_length=200, blank=True,
                                   help_text="de-identified source, relative to the storage root")
    source_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    frame_index = models.PositiveIntegerField(null=True, blank=True)
    series_uid = models.CharField(max_length=64, blank=True, db_index=True,
                                  help_text="de-identified (remapped) DICOM Series Instance UID; '' without one")
    series_position = models.FloatField(null=True, blank=True,
                                        help_text="position along the slice normal (else Instance Number): "
                                                  "the order of a one-file-per-slice series")
    source_dataset = models.CharField(max_length=200, blank=True)
    license = models.CharField(max_length=200, blank=True)
    split_group = models.CharField(max_length=64, blank=True, db_index=True,
                                   help_text="patient/study key; splits never divide a group")
    window_center = models.FloatField(null=True, blank=True)
    window_width = models.FloatField(null=True, blank=True)
    window_source = models.CharField(max_length=20, default="none")
    deid = models.JSONField(default=dict, blank=True, help_text="what de-identification did (never the removed values)")
    metadata = models.JSONField(default=dict, blank=True)
    import_batch = models.ForeignKey(ImportBatch, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="images")
    import_file = models.ForeignKey("ImportFileResult", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="images")
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
        ADJUDICATION = "adjudication", "adjudication (corrected gold)"

    class Status(models.TextChoices):
        ACTIVE = "active"
        RETIRED = "retired"

    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="findings")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    label = models.CharField(max_length=100)
    attributes = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
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
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                               related_name="+")
    source = models.CharField(max_length=16, choices=Finding.Source.choices)
    ls_project_id = models.CharField(max_length=32, blank=True)
    ls_task_id = models.CharField(max_length=32, blank=True)
    ls_annotation_id = models.CharField(max_length=32, blank=True)
    ls_result_id = models.CharField(max_length=64, blank=True)
    # Label Studio boxes: drawn by the reader, a pre-annotation accepted unchanged, or one they modified
    provenance = models.CharField(max_length=16, blank=True, default="",
                                  choices=[("drawn", "drawn"), ("accepted", "accepted"), ("modified", "modified")])
    status = models.CharField(max_length=16, choices=Finding.Status.choices, default=Finding.Status.ACTIVE,
                              db_index=True)
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
        verbose_name_plural = "grounding boxes"

    def __str__(self) -> str:
        return f"{self.label} box {self.pk} on image {self.image_id}"

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
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["image", "seed"], name="chain_unique_image_seed")]

    def __str__(self) -> str:
        return f"Chain {self.pk} (image {self.image_id}, seed {self.seed})"


class QAItem(models.Model):
    """One step of a chain. Versioned: an edit creates a new row with version+1 and the same
    `item_key`; the old row stays readable with `is_current=False`."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        IN_REVIEW = "in_review", "in review"
        APPROVED = "approved"
        REJECTED = "rejected"
        AMBIGUOUS = "ambiguous", "ambiguous (adjudicated; excluded from releases)"

    item_key = models.UUIDField(default=uuid.uuid4, db_index=True, help_text="stable identity across versions")
    version = models.PositiveIntegerField(default=1)
    is_current = models.BooleanField(default=True)
    previous = models.OneToOneField("self", null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="next_version")
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
    image_necessary = models.BooleanField(
        null=True, blank=True, db_index=True,
        help_text="set by the latest shortcut audit that covered this version: True when every blind baseline "
                  "failed it; None when never audited (not part of the content hash)")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["chain_id", "step", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["item_key", "version"], name="qaitem_unique_version"),
            models.UniqueConstraint(fields=["item_key"], condition=Q(is_current=True),
                                    name="qaitem_one_current_version"),
        ]
        indexes = [models.Index(fields=["chain", "step"]), models.Index(fields=["stage", "category", "status"])]
        verbose_name = "QA item"
        verbose_name_plural = "QA items"

    def __str__(self) -> str:
        return f"QA item {self.pk} v{self.version} (chain {self.chain_id}, step {self.step})"

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
    TRUE_PREMISE = "true_premise", "true premise (false-premise control)"
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

    def __str__(self) -> str:
        return f"Variant {self.pk} ({self.kind}) of QA item {self.item_id}"
