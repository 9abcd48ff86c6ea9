from django.core.management.base import BaseCommand, CommandError

from releases.package.files import verify_release


class Command(BaseCommand):
    help = ("Verify a built release (folder or .tar.gz): every file against MANIFEST.sha256 and the manifest's "
            "Ed25519 signature. Exit 0 when everything matches; otherwise exit 1 naming the first mismatch.")

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--public-key", default="", help="the publisher's key (hex); default: release.pub")

    def handle(self, *args, path, public_key, **options):
        result = verify_release(path, public_key_hex=public_key or None)
        if not result.ok:
            raise CommandError(f"release does not verify: {result.first_mismatch}")
        self.stdout.write(self.style.SUCCESS(f"release verifies: {result.checked} files and the signature match"))
