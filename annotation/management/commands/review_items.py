"""manage.py review_items — set the review status of current items in bulk, as a named curator."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from accounts.roles import Capability, user_can
from accounts.selectors import user_find
from annotation import selectors
from annotation.services.chains import chunked
from annotation.services.checks import items_check
from annotation.services.qa import REVIEW_STATUSES, qa_items_review


class Command(BaseCommand):
    help = "Approve / reject / send to review the current items matching the filters (audited, as --user)."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="a curator or admin; recorded in the audit trail")
        parser.add_argument("--set", dest="status", required=True, choices=REVIEW_STATUSES)
        parser.add_argument("--from-status", default="draft", help="only items in this status ('any' for all)")
        parser.add_argument("--source-dataset", default="")
        parser.add_argument("--stage", default="")
        parser.add_argument("--skip-invalid", action="store_true", help="leave items with check_items violations alone")
        parser.add_argument("--note", default="")

    def handle(self, *args, user, status, from_status, source_dataset, stage, skip_invalid, note, **opts):
        actor = user_find(username=user)
        if actor is None:
            raise CommandError(f"no user named {user!r}")
        if not user_can(actor, Capability.EDIT_ITEMS):
            raise CommandError(f"{user} is not a curator or admin")
        ids = set(selectors.item_id_list(status="" if from_status == "any" else from_status,
                                         source_dataset=source_dataset, stage=stage))
        if skip_invalid:
            ids -= {item_id for item_id, _ in items_check()[1]}
        changed = sum(qa_items_review(item_ids=batch, status=status, actor=actor, note=note)
                      for batch in chunked(sorted(ids), 1000))
        self.stdout.write(f"{changed} item(s) set to {status} by {user}.")
