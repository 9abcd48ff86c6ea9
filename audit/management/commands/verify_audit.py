from django.core.management.base import BaseCommand, CommandError

from audit.services import audit_verify


class Command(BaseCommand):
    help = "Verify the audit trail's hash chain. Exits non-zero and names the first broken event."

    def handle(self, *args, **options):
        result = audit_verify()
        if not result.ok:
            raise CommandError(
                f"audit chain BROKEN at event #{result.first_bad_seq}: {result.reason} "
                f"({result.checked} events verified before it)"
            )
        self.stdout.write(self.style.SUCCESS(
            f"audit chain intact: {result.checked} events; head hash {result.head_hash}"
        ))
        self.stdout.write("Record the head hash outside this database to detect truncation of the tail later.")
