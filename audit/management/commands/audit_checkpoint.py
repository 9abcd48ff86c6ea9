"""manage.py audit_checkpoint — sign the audit chain's head now with the platform key (MEDR2_SIGNING_KEY)."""
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.selectors import user_find
from audit.services import audit_checkpoint
from common.signing import generate_signing_key


class Command(BaseCommand):
    help = ("Write a signed checkpoint of the audit chain's head (releases and reports write their own). "
            "Needs MEDR2_SIGNING_KEY. A later verify_audit reports a checkpoint beyond the chain's end as a "
            "truncated tail.")

    def add_arguments(self, parser):
        parser.add_argument("--reason", default="", help='why, e.g. "quarterly board review 2026-Q4"')
        parser.add_argument("--user", help="username recorded as the actor (default: system)")
        parser.add_argument("--generate-key", action="store_true",
                            help="print a new Ed25519 private key (hex) for MEDR2_SIGNING_KEY and exit")

    def handle(self, *args, reason, user, generate_key, **options):
        if generate_key:
            self.stdout.write(generate_signing_key())
            return
        actor = None
        if user:
            actor = user_find(username=user)
            if actor is None:
                raise CommandError(f"no user named {user!r}")
        try:
            checkpoint = audit_checkpoint(reason=reason, actor=actor)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(self.style.SUCCESS(
            f"checkpoint #{checkpoint.pk} at event #{checkpoint.seq}: head hash {checkpoint.head_hash}"))
        self.stdout.write(f"public key {checkpoint.public_key}; signature {checkpoint.signature}")
