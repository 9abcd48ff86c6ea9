"""manage.py assign_cases — give the open, unassigned adjudication cases readers, round-robin
(least loaded adjudicator first, in turn; never a reader who annotated the item or image)."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_find, users_by_username
from adjudication.services import cases_assign_round_robin


class Command(BaseCommand):
    help = "Assign open, unassigned adjudication cases round-robin to the adjudicators (highest priority first)."

    def add_arguments(self, parser):
        parser.add_argument("--double-read", action="store_true", help="two independent readers per case")
        parser.add_argument("--limit", type=int, default=500, help="at most this many cases (default 500)")
        parser.add_argument("--readers", default="", help="usernames, comma-separated (default: every adjudicator)")
        parser.add_argument("--actor", default="", help="username recorded in the audit trail")

    def handle(self, *args, double_read, limit, readers, actor, **opts):
        chosen = None
        if readers:
            names = [n.strip() for n in readers.split(",") if n.strip()]
            chosen, missing = users_by_username(usernames=names)
            if missing:
                raise CommandError(f"no such users: {', '.join(missing)}")
        actor_user = user_find(username=actor) if actor else None
        if actor and actor_user is None:
            raise CommandError(f"no such user: {actor}")
        try:
            summary = cases_assign_round_robin(actor=actor_user, readers=chosen, double_read=double_read, limit=limit)
        except ValidationError as e:
            raise CommandError("; ".join(e.messages)) from None
        per = ", ".join(f"{k} {v}" for k, v in sorted(summary.per_reader.items())) or "nobody"
        self.stdout.write(f"assigned {summary.cases} case(s), {summary.readings} reading(s): {per}; "
                          f"{summary.skipped_conflicted} skipped (every eligible reader annotated them)")
