from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from audit.services import audit_verify


class Command(BaseCommand):
    help = ("Verify the audit trail's hash chain and its signed checkpoints. Exits non-zero and names the first "
            "broken event, or the checkpoint that does not hold (a checkpoint beyond the chain's end: the tail "
            "was truncated).")

    def add_arguments(self, parser):
        parser.add_argument("--public-key", default=None,
                            help="Ed25519 public key (64 hex characters) that every checkpoint must be signed by")

    def handle(self, *args, public_key=None, **options):
        try:
            result = audit_verify(public_key=public_key)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        if not result.chain_ok:
            raise CommandError(
                f"audit chain BROKEN at event #{result.first_bad_seq}: {result.reason} "
                f"({result.checked} events verified before it)"
            )
        if not result.ok:
            raise CommandError(f"audit chain BROKEN: {result.reason} ({result.checked} events verified)")
        self.stdout.write(self.style.SUCCESS(
            f"audit chain intact: {result.checked} events; head hash {result.head_hash}"
        ))
        if result.checkpoints:
            last = result.checkpoints[-1]
            keys = sorted({c.public_key for c in result.checkpoints})
            self.stdout.write(f"{len(result.checkpoints)} signed checkpoint(s) hold; the latest at event #{last.seq} "
                              f"({last.reason}); signed by {', '.join(keys)}")
            if public_key is None:
                self.stdout.write("Pass --public-key with the platform's published key to require its signature.")
        else:
            self.stdout.write("No checkpoints: write one (manage.py audit_checkpoint) or record the head hash outside "
                              "this database to detect truncation of the tail later.")
