"""Fine-tuning jobs: a base model, a training set (a release's train split, or an item set), a recipe
and a budget; LoRA adapters trained on the `gpu` queue; the fine-tuned model registered as a new
endpoint with its lineage, and a paired evaluation (base vs fine-tuned, test split) started by itself.

Written only through `finetune/services.py`, read through `finetune/selectors.py`.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models

from releases.models import Release
from workers.models import EvaluationRun, ModelEndpoint


class Recipe(models.TextChoices):
    STEPWISE = "stepwise", "stepwise (stages in order, answers with evidence boxes)"
    ANSWER_ONLY = "answer_only", "answer only (same items, answers alone)"
    MIXED = "mixed", "mixed (stepwise + adversarial variants)"


class FineTuneJob(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLED = "cancelled"

    name = models.CharField(max_length=200)
    base_endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="finetune_jobs")
    release = models.ForeignKey(Release, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                                help_text="train on this release's train split (or on item_filters when empty)")
    item_filters = models.JSONField(default=dict, blank=True,
                                    help_text="without a release: stage / category / modality / status / item_ids")
    recipe = models.CharField(max_length=16, choices=Recipe.choices)
    steps = models.PositiveIntegerField(help_text="the budget: optimizer steps of tokens_per_step tokens each")
    seed = models.PositiveIntegerField(default=0)
    config = models.JSONField(default=dict, blank=True,
                              help_text="training settings (finetune.core.trainer.TrainConfig), as resolved")
    data = models.JSONField(default=dict, blank=True, help_text="examples, items and sources per split")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING, db_index=True)
    cancel_requested = models.BooleanField(default=False)
    progress = models.JSONField(default=dict, blank=True,
                                help_text="live: step, loss and val-loss curve, tokens/s, ETA, peak memory")
    work_dir = models.CharField(max_length=300, blank=True, help_text="checkpoints and adapter, under the root")
    adapter_hashes = models.JSONField(default=dict, blank=True, help_text="SHA-256 of every adapter file")
    result = models.JSONField(default=dict, blank=True, help_text="steps, tokens, best val loss, time, memory")
    result_endpoint = models.OneToOneField(ModelEndpoint, null=True, blank=True, on_delete=models.PROTECT,
                                           related_name="finetune_source")
    evaluate_after = models.BooleanField(default=True,
                                         help_text="start the paired evaluation (base vs fine-tuned, test) when done")
    evaluation_run = models.ForeignKey(EvaluationRun, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="+", help_text="the paired base vs fine-tuned run")
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "fine-tuning job"

    def __str__(self) -> str:
        return f"fine-tune {self.pk}: {self.name}"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.PENDING, self.Status.RUNNING)
