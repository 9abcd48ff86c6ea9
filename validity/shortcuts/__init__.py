"""Shortcut audit core (no Django): can a model that never sees the image answer the items?

Input: item rows (id, category, stage, answer type, question, options, gold, split, patient).
Output: statistics per category / stage / overall with cluster-bootstrap intervals and a per-item
image-necessary verdict. See docs/validity.md.
"""
from .audit import EVALUABLE_SPLITS, AuditParams, AuditResult, run_audit, validate_split
from .baselines import BASELINES, BIT, CODES
from .table import AuditInputError, ItemRow, ItemTable

__all__ = ["AuditInputError", "AuditParams", "AuditResult", "BASELINES", "BIT", "CODES", "EVALUABLE_SPLITS",
           "ItemRow", "ItemTable", "run_audit", "validate_split"]
