"""Models under evaluation, evaluation runs, their batches and predictions.

Written only through `workers/services/*`, read through `workers/selectors.py`.
"""
from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models

from annotation.models import QAItem, Variant

from .backends import is_baseline_backend


def template_hash(template: str) -> str:
    return hashlib.sha256(template.encode()).hexdigest()


class Queue(models.TextChoices):
    GPU = "gpu"
    CPU = "cpu"


class ModelEndpoint(models.Model):
    """A VLM (or a baseline) to evaluate: which backend loads it, with which parameters, on which
    queue, and how our prompt is wrapped. API keys are never stored here (`api_key_env` names an
    environment variable)."""

    name = models.SlugField(max_length=80, unique=True)
    display_name = models.CharField(max_length=120, blank=True)
    description = models.TextField(blank=True)
    backend = models.CharField(max_length=40)
    parameters = models.JSONField(default=dict, blank=True)
    queue = models.CharField(max_length=8, choices=Queue.choices, default=Queue.CPU)
    prompt_template = models.TextField(default="{prompt}", help_text="`{prompt}` is replaced by the variant's prompt")
    prompt_template_hash = models.CharField(max_length=64, editable=False)
    box_format = models.CharField(
        max_length=12, default="auto", choices=[(v, v) for v in ("auto", "pixel", "unit", "norm1000")],
        help_text="how this model writes boxes (workers/parsing: auto-detect, pixels, 0-1, 0-1000)")
    is_active = models.BooleanField(default=True)
    lineage = models.JSONField(default=dict, blank=True,
                               help_text="for a fine-tuned model: base model, recipe, release, seed, job, adapter hash")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.display_name or self.name

    @property
    def label(self) -> str:
        return self.display_name or self.name

    @property
    def is_baseline(self) -> bool:
        """A chance-level baseline (random, prior, null backends), not a model: scored like one, never
        counted as a model by the adjudication rules (workers.backends.is_baseline_backend)."""
        return is_baseline_backend(self.backend)


class RunSplit(models.TextChoices):
    """Which patient-level split a run evaluates (annotation/splits.py: by the image's split group)."""

    TEST = "test", "test (held out; the benchmark default)"
    VAL = "val", "val"
    TRAIN = "train", "train (what baselines are fitted on)"
    ALL = "all", "all splits (results broken down per split)"


class EvaluationRun(models.Model):
    """One evaluation: selected items × variant kinds × models, fanned out in batches."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        COMPLETED = "completed"
        FAILED = "failed", "failed (some batches)"
        CANCELLED = "cancelled"

    name = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    endpoints = models.ManyToManyField(ModelEndpoint, related_name="runs")
    item_filters = models.JSONField(default=dict, blank=True,
                                    help_text="stage / category / modality / status / item_ids")
    variant_kinds = models.JSONField(default=list, blank=True, help_text="empty = every kind")
    split = models.CharField(max_length=8, choices=RunSplit.choices, default=RunSplit.TEST, db_index=True,
                             help_text="patient-level split evaluated: only variants of items whose image's split "
                                       "group falls in it (benchmark runs: test)")
    batch_size = models.PositiveIntegerField(default=64)
    n_variants = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0, help_text="variants × models")
    provenance = models.JSONField(default=dict, blank=True,
                                  help_text="endpoint parameters and template hashes at start")
    metrics = models.JSONField(null=True, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # reference runs (docs/adjudication.md): only their predictions open or re-prioritise adjudication cases
    is_reference = models.BooleanField(default=False, db_index=True,
                                       help_text="a curator's choice: this run's models feed the adjudication queue")
    reference_set_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                         related_name="+", help_text="who last marked or unmarked it")
    reference_set_at = models.DateTimeField(null=True, blank=True)
    reference_reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"run {self.pk}: {self.name}"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.PENDING, self.Status.RUNNING)


class RunBatch(models.Model):
    """A fixed slice of one run's variants for one model: the unit of work of a Celery task."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="batches")
    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="+")
    index = models.PositiveIntegerField()
    variant_ids = models.JSONField()
    size = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    n_done = models.PositiveIntegerField(default=0)
    n_errors = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # when the batch was last sent to the broker (NULL: not sent since the run started or resumed), and the
    # last sign of life of the worker running it; workers/services/dispatch.py reads both to find lost batches
    dispatched_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "endpoint_id", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "endpoint", "index"], name="runbatch_unique_index")]
        indexes = [models.Index(fields=["run", "status"])]
        verbose_name = "run batch"
        verbose_name_plural = "run batches"

    def __str__(self) -> str:
        return f"Batch {self.index} of run {self.run_id} (model {self.endpoint_id}, {self.status})"


class Prediction(models.Model):
    """One model's answer to one variant in one run: raw output, how it was parsed, its score.
    Unique per (run, model, variant): a redelivered batch writes nothing twice."""

    class Outcome(models.TextChoices):
        ANSWERED = "answered"
        ABSTAINED = "abstained"
        UNPARSEABLE = "unparseable"
        ERROR = "error"

    # indexed with `id` (Meta): a run's predictions in page order, which also serves every run_id look-up
    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="predictions", db_index=False)
    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="predictions")
    variant = models.ForeignKey(Variant, on_delete=models.PROTECT, related_name="predictions")
    item = models.ForeignKey(QAItem, on_delete=models.PROTECT, related_name="predictions")
    raw_output = models.TextField(blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    parsed = models.JSONField(null=True, blank=True)
    parse_method = models.CharField(max_length=32)
    parse_detail = models.CharField(max_length=300, blank=True)
    correct = models.BooleanField(default=False)
    iou = models.FloatField(null=True, blank=True)
    box = models.JSONField(null=True, blank=True,
                           help_text="the box the model gave, [x0, y0, x1, y1] pixels: box items and joint "
                                     "answer + box items")
    cue_adopted = models.BooleanField(null=True, blank=True)
    latency_ms = models.FloatField(default=0)
    tokens_in = models.PositiveIntegerField(null=True, blank=True)
    tokens_out = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["run", "endpoint", "variant"],
                                               name="prediction_unique_run_model_variant")]
        # (run, id): the predictions page reads a run's ids in order with OFFSET (common/pagination.py: ids
        # first, then the rows); a plain run_id index left it to walk the primary key, every run's rows, and
        # filter (66 ms for page 2,000 of 1.4M). It replaces that index: no extra write per row.
        indexes = [models.Index(fields=["run", "endpoint", "outcome"]),
                   models.Index(fields=["run", "id"], name="prediction_run_id_order")]

    def __str__(self) -> str:
        return f"Prediction {self.pk} (run {self.run_id}, model {self.endpoint_id}, variant {self.variant_id})"
