"""One demo user per role, with printed credentials. For the local demo only."""
import os

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from accounts.roles import Role
from accounts.selectors import user_find
from accounts.services import user_create


class Command(BaseCommand):
    help = "Create one demo user per role (annotator, adjudicator, curator, auditor, admin) and print the credentials."

    def add_arguments(self, parser):
        parser.add_argument("--password", default=os.environ.get("MEDR2_DEMO_PASSWORD", "medr2-demo-pass"))

    def handle(self, *args, password, **options):
        if not settings.DEBUG:
            raise CommandError("demo users are for the local demo only (MEDR2_DEBUG=1)")
        self.stdout.write("Demo users (username / password / role):")
        for role in Role:
            username = f"demo-{role.value}"
            if user_find(username=username) is None:
                user_create(username=username, email=f"{username}@example.org", password=password,
                            roles=[role], actor=None)
            self.stdout.write(f"  {username:18s} {password}  {role.value}")
