"""Reads for the dashboard: each role's next steps (dashboard/next_steps.py) and the content the user
may see, each through its domain's reads."""
from __future__ import annotations

from accounts.roles import Capability, user_can
from adjudication.selectors import cases_waiting_for
from annotation.selectors import dashboard_counts, gold_visible_to

from .next_steps import next_steps


def dashboard(*, user) -> dict:
    """The user's next steps per role, the benchmark content they may see (without findings and boxes
    for annotators, who annotate blind) and the adjudication cases waiting for them."""
    waiting = cases_waiting_for(user=user) if user_can(user, Capability.ADJUDICATE) else None
    return {"panels": next_steps(user=user, waiting=waiting), "counts": dashboard_counts(user=user),
            "sees_gold": gold_visible_to(user), "waiting": waiting}
