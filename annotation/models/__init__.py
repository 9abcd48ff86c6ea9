"""Benchmark content, Label Studio annotation and adjudication (see docs/domain.md).

Rows are written only through `annotation.services` (which also write the audit trail)."""
from .adjudication import ACTIVE_READING_STATUSES, UNDECIDED_STATUSES, AdjudicationCase, CaseReading, Verdict
from .content import (AnswerType, Chain, Finding, GroundingBox, Image, ImportBatch, ImportFileResult, QAItem, Stage,
                      TaskCategory, Variant, VariantKind)
from .labelstudio import (AnnotationBatch, AnnotationTask, AnnotatorDisagreement, LabelStudioAnnotation, SyncLogEntry,
                          WebhookDelivery)

__all__ = [
    "ACTIVE_READING_STATUSES", "UNDECIDED_STATUSES", "AdjudicationCase", "AnnotationBatch", "AnnotationTask",
    "AnnotatorDisagreement", "AnswerType", "CaseReading", "Chain", "Finding", "GroundingBox", "Image", "ImportBatch",
    "ImportFileResult", "LabelStudioAnnotation", "QAItem", "Stage", "SyncLogEntry", "TaskCategory", "Variant",
    "VariantKind", "Verdict", "WebhookDelivery",
]
