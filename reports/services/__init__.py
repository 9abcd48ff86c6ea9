"""Writes of the report's lifecycle (docs/reports.md), every one audited in its own transaction:
`lifecycle` (create a report, set its acceptance criteria, generate a version on a worker, build it),
`signing` (electronic signatures, password re-entered; the signed copy of the PDF) and `verify` (does a
file match a stored version, and do its signatures hold). Import from here."""
from .lifecycle import (
    BUILD_STEPS,
    criteria_set,
    report_create,
    report_generate,
    report_version_build,
    report_version_requeue,
)
from .signing import MAX_REFUSALS, REFUSAL_WINDOW, TooManyAttempts, report_sign, signed_copy_build
from .verify import FileCheck, report_file_verify

__all__ = ["BUILD_STEPS", "MAX_REFUSALS", "REFUSAL_WINDOW", "FileCheck", "TooManyAttempts", "criteria_set",
           "report_create", "report_file_verify", "report_generate", "report_sign", "report_version_build",
           "report_version_requeue", "signed_copy_build"]
