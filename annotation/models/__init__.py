"""Benchmark content: images and their import, taxonomy, findings and boxes, chains, items, variants
(see docs/domain.md). Label Studio's models live in `labelstudio.models`, adjudication's in
`adjudication.models`.

Rows are written only through `annotation.services` (which also write the audit trail)."""
from .content import (
                      AnswerType,
                      Chain,
                      Finding,
                      GroundingBox,
                      Image,
                      ImportBatch,
                      ImportFileResult,
                      QAItem,
                      Stage,
                      TaskCategory,
                      Variant,
                      VariantKind,
)

__all__ = [
    "AnswerType", "Chain", "Finding", "GroundingBox", "Image", "ImportBatch", "ImportFileResult", "QAItem", "Stage",
    "TaskCategory", "Variant", "VariantKind",
]
