import json

from django.core.management.base import BaseCommand, CommandError

from releases.selectors import release_diff, release_find


class Command(BaseCommand):
    help = "What changed between two releases (by version): items added, removed and changed, with reasons."

    def add_arguments(self, parser):
        parser.add_argument("a", help="the older version, e.g. 1.0.0")
        parser.add_argument("b", help="the newer version")
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *args, a, b, as_json: bool = False, **options):
        older, newer = release_find(version=a), release_find(version=b)
        for version, release in ((a, older), (b, newer)):
            if release is None:
                raise CommandError(f"no release {version}")
        diff = release_diff(older=older, newer=newer)
        if as_json:
            self.stdout.write(json.dumps(diff, indent=2, sort_keys=True))
            return
        counts = diff["counts"]
        self.stdout.write(f"{a} → {b}: {counts['added']} added, {counts['removed']} removed, "
                          f"{counts['changed']} changed ({counts['gold_changed']} gold changes); "
                          f"the semver rule asks for a {diff['bump']} version")
        for change in diff["changes"]:
            versions = f"v{change['from_version'] or '-'} → v{change['to_version'] or '-'}"
            self.stdout.write(f"  {change['kind']:8} {change['item_key']}  {versions}  {change['reason']}")

