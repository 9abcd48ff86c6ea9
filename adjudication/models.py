"""Adjudication: cases found by the detection rules and the radiologists' readings of them."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Image, QAItem, Stage, TaskCategory
from workers.models import Prediction


class Verdict(models.TextChoices):
    CONFIRMED = "confirmed", "gold confirmed"
    CORRECTED = "corrected", "gold corrected"
    AMBIGUOUS = "ambiguous", "ambiguous (excluded from releases)"
    FLAWED = "flawed", "item flawed (rejected)"


class AdjudicationCase(models.Model):
    """An item (all its versions: one `item_key`) or an image where models, gold and annotators
    disagree, found by the detection rules (adjudication/rules/). One case per key:
    re-running detection updates an open case and never duplicates it."""

    class Status(models.TextChoices):
        OPEN = "open"
        IN_PROGRESS = "in_progress", "in progress"
        TIE = "tie", "awaiting third reader"
        RESOLVED = "resolved"
        WITHDRAWN = "withdrawn", "withdrawn (no reference run raises it)"

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
    version = models.PositiveIntegerField(default=1,
                                          help_text="optimistic locking: bumped by every decision and assignment")
    double_read = models.BooleanField(default=False, help_text="two independent readings; a third reader breaks ties")
    outcome = models.CharField(max_length=16, choices=Verdict.choices, blank=True)
    outcome_answer = models.JSONField(null=True, blank=True, help_text="the corrected gold answer")
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="+")
    result_item = models.ForeignKey(QAItem, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                                    help_text="the item version a correction created")
    rescore = models.JSONField(null=True, blank=True, help_text="what rescoring the corrected item changed")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "annotation_adjudicationcase"   # kept from before the app split
        ordering = ["-priority", "id"]
        indexes = [models.Index(fields=["status", "-priority", "id"]), models.Index(fields=["-priority", "id"]),
                   models.Index(fields=["stage", "status"]),
                   models.Index(fields=["category", "status"])]

    def __str__(self) -> str:
        return f"Case {self.pk} ({self.status}, priority {self.priority:.2f})"

    @property
    def rule_names(self) -> list[str]:
        return [r for r in self.rules.split(",") if r]

    def role_open_to(self, user_id: int, readings) -> str | None:
        """The role in which `user_id` may give a verdict now, given all the case's `readings`: the
        role of their pending reading, else a free one (primary, second, tie-break); None when the
        case is decided or withdrawn, they already gave theirs, or the readers the case needs are all there."""
        if self.status in (self.Status.RESOLVED, self.Status.WITHDRAWN):
            return None
        mine = next((r for r in readings if r.reader_id == user_id and r.status != CaseReading.Status.WITHDRAWN),
                    None)
        if mine is not None:
            return mine.role if mine.status == CaseReading.Status.ASSIGNED else None
        active = [r for r in readings if r.status in ACTIVE_READING_STATUSES]
        if self.status == self.Status.TIE:
            return None if any(r.role == CaseReading.Role.TIEBREAK for r in active) else CaseReading.Role.TIEBREAK
        if len(active) >= (2 if self.double_read else 1):
            return None
        return CaseReading.Role.SECOND if active else CaseReading.Role.PRIMARY


class CaseReading(models.Model):
    """One radiologist's reading of a case: assigned (by a curator or round-robin, or claimed by
    opening an unassigned case), then submitted once with a verdict. Readings are independent:
    a reader never sees another reader's verdict before the case is resolved."""

    class Role(models.TextChoices):
        PRIMARY = "primary"
        SECOND = "second", "second reader"
        TIEBREAK = "tiebreak", "third reader (tie-break)"

    class Status(models.TextChoices):
        ASSIGNED = "assigned"
        SUBMITTED = "submitted"
        WITHDRAWN = "withdrawn"

    case = models.ForeignKey(AdjudicationCase, on_delete=models.CASCADE, related_name="readings")
    reader = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="case_readings")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.PRIMARY)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ASSIGNED)
    assigned_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="+",
                                    help_text="empty: claimed by the reader or assigned by the system")
    assigned_at = models.DateTimeField(auto_now_add=True)
    verdict = models.CharField(max_length=16, choices=Verdict.choices, blank=True)
    answer = models.JSONField(null=True, blank=True, help_text="corrected: the new gold (option text(s) or box)")
    comment = models.TextField(blank=True)
    time_spent_s = models.FloatField(null=True, blank=True, help_text="seconds the case page was visible")
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "annotation_casereading"   # kept from before the app split
        ordering = ["case_id", "assigned_at", "id"]
        constraints = [models.UniqueConstraint(fields=["case", "reader"], name="reading_one_per_reader")]
        indexes = [models.Index(fields=["reader", "status"])]

    def __str__(self) -> str:
        return f"{self.role} reading of case {self.case_id} by user {self.reader_id} ({self.status})"


UNDECIDED_STATUSES = (AdjudicationCase.Status.OPEN, AdjudicationCase.Status.IN_PROGRESS, AdjudicationCase.Status.TIE)
ACTIVE_READING_STATUSES = (CaseReading.Status.ASSIGNED, CaseReading.Status.SUBMITTED)


class PredictionRescore(models.Model):
    """Append-only history of a prediction's score: one row each time a corrected gold answer
    (a new QAItem version, usually from adjudication) changed whether it is correct or its IoU.
    The prediction keeps its item (the version it was asked); the row names the gold it was rescored
    against, and what the score was before and after."""

    prediction = models.ForeignKey(Prediction, on_delete=models.CASCADE, related_name="rescores")
    gold_item = models.ForeignKey(QAItem, on_delete=models.PROTECT, related_name="+")
    correct_before = models.BooleanField()
    correct_after = models.BooleanField()
    iou_before = models.FloatField(null=True, blank=True)
    iou_after = models.FloatField(null=True, blank=True)
    reason = models.CharField(max_length=300)
    case = models.ForeignKey(AdjudicationCase, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "workers_predictionrescore"   # kept from before the app split
        ordering = ["id"]

    def __str__(self) -> str:
        verdict = {True: "correct", False: "wrong"}
        return (f"Rescore of prediction {self.prediction_id}: {verdict[self.correct_before]} → "
                f"{verdict[self.correct_after]}")
