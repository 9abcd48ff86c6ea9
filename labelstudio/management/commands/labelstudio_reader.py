"""manage.py labelstudio_reader — give a reader their own Label Studio organization (docs/labelstudio.md,
"Independent readers"): created through Label Studio's own Django in its virtualenv, the reader alone in
it with the platform's service account, whose token is stored here. A push does the same for readers
without one; run this where Label Studio is installed, or to set the reader's Label Studio password."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_find
from labelstudio.client import LabelStudioError
from labelstudio.services.readers import reader_workspace_ensure


class Command(BaseCommand):
    help = "Create (once) a reader's own Label Studio organization and store its service token."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="the reader's Med-R2 username")
        parser.add_argument("--password", help="their Label Studio password (set or reset)")

    def handle(self, *args, user, password, **opts):
        reader = user_find(username=user)
        if reader is None:
            raise CommandError(f"no user {user!r}")
        try:
            workspace = reader_workspace_ensure(reader=reader, actor=None, password=password)
        except LabelStudioError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{workspace.ls_email}: Label Studio organization {workspace.ls_organization_id} "
                          f"(user {workspace.ls_user_id})")
