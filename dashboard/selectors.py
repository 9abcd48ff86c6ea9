"""Reads for the dashboard: one call per domain, each through that domain's own selectors."""
from __future__ import annotations

from accounts.roles import Capability, user_can
from adjudication.selectors import cases_waiting_for
from annotation.selectors import dashboard_counts


def dashboard(*, user) -> dict:
    """The benchmark content the user may see, and the adjudication cases waiting for them."""
    waiting = cases_waiting_for(user=user) if user_can(user, Capability.ADJUDICATE) else None
    return {"counts": dashboard_counts(user=user), "waiting": waiting}
