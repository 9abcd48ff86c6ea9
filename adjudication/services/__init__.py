"""Adjudication services (docs/adjudication.md): the queue fills itself (`cases`), cases are
assigned to readers (`assignment`), readers give verdicts and the deciding verdict changes the
benchmark (`verdicts`)."""
from adjudication.services.assignment import (
    RoundRobinSummary,
    adjudicators,
    case_assign,
    cases_assign_round_robin,
    conflicted_readers,
    reading_withdraw,
)
from adjudication.services.cases import CasesSyncSummary, cases_sync
from adjudication.services.verdicts import CaseConflict, case_verdict_submit, clean_answer, current_item

__all__ = [
    "CaseConflict", "CasesSyncSummary", "RoundRobinSummary", "adjudicators", "case_assign", "case_verdict_submit",
    "cases_assign_round_robin", "cases_sync", "clean_answer", "conflicted_readers", "current_item",
    "reading_withdraw",
]
