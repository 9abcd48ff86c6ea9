"""manage.py run_reference RUN --user NAME [--unset] [--reason TEXT] — mark an evaluation run as a
reference run (only reference runs open or re-prioritise adjudication cases) or unmark it. Audited as
--user, a curator or admin (docs/adjudication.md)."""
from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_find
from common.errors import ServiceError
from workers.selectors import run_find, run_latest_scored
from workers.services.reference import run_set_reference


class Command(BaseCommand):
    help = ("Mark a scored evaluation run as a reference run (its models' disagreements open adjudication cases) "
            "or unmark it with --unset.")

    def add_arguments(self, parser):
        parser.add_argument("run", help="the run id, or 'latest' (the newest scored run)")
        parser.add_argument("--user", required=True, help="a curator or admin; recorded in the audit trail")
        parser.add_argument("--unset", action="store_true", help="unmark: the run stops feeding the queue")
        parser.add_argument("--reason", default="", help="why (kept in the audit trail)")

    def handle(self, *args, run, user, unset, reason, **opts):
        actor = user_find(username=user)
        if actor is None:
            raise CommandError(f"no user named {user!r}")
        found = run_latest_scored() if run == "latest" else (run_find(pk=int(run)) if run.isdigit() else None)
        if found is None:
            raise CommandError("no scored run" if run == "latest" else f"no run {run!r}")
        try:
            found = run_set_reference(run=found, reference=not unset, actor=actor, reason=reason)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        except (PermissionDenied, ServiceError) as exc:
            raise CommandError(str(exc)) from exc
        state = "a reference run: its cases open in the adjudication queue" if found.is_reference else \
            "not a reference run: it never changes the adjudication queue"
        self.stdout.write(f"Run {found.pk} ({found.name}) is {state}.")
