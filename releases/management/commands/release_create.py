from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.selectors import user_find
from releases.package.files import generate_signing_key
from releases.selectors import INCLUDABLE, release_find
from releases.services import release_build, release_create, release_publish


class Command(BaseCommand):
    help = ("Create a benchmark release of the current approved items (docs/releases.md): freeze the item versions, "
            "the changelog and the version; with --build, write and sign the files here with a progress bar.")

    def add_arguments(self, parser):
        parser.add_argument("version", nargs="?", default="",
                            help="semver, e.g. 1.2.0; default: what the rule asks for after the latest release")
        parser.add_argument("--user", default="", help="an admin username, recorded in the audit trail")
        parser.add_argument("--title", default="")
        parser.add_argument("--description", default="")
        parser.add_argument("--license", default="", help="SPDX id (default CC-BY-4.0)")
        for name in ("stage", "category", "modality", "source-dataset"):
            parser.add_argument(f"--{name}", default="")
        parser.add_argument("--include", default="", help=f"include anyway, comma-separated: {', '.join(INCLUDABLE)}")
        parser.add_argument("--build", action="store_true", help="build it now (signing key from the environment)")
        parser.add_argument("--publish", action="store_true", help="publish it after building")
        parser.add_argument("--skip-if-exists", action="store_true", help="a release of this version exists: reuse it")
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument("--generate-key", action="store_true",
                            help="print a new Ed25519 signing key (hex) for MEDR2_RELEASE_SIGNING_KEY and exit")

    def handle(self, *args, **o):
        if o["generate_key"]:
            self.stdout.write(generate_signing_key())
            return
        actor = user_find(username=o["user"]) if o["user"] else None
        if o["user"] and actor is None:
            raise CommandError(f"no user {o['user']!r}")
        release = release_find(version=o["version"]) if (o["version"] and o["skip_if_exists"]) else None
        try:
            if release is None:
                filters = {"stage": o["stage"], "category": o["category"], "modality": o["modality"],
                           "source_dataset": o["source_dataset"]}
                release = release_create(actor=actor, version=o["version"], filters=filters,
                                         include=tuple(x for x in o["include"].split(",") if x),
                                         title=o["title"], description=o["description"], license=o["license"])
                left = release.excluded.get("left_out") or {}
                self.stdout.write(f"Release {release.version} ({release.bump} by the semver rule): "
                                  f"{release.counts.get('items', 0)} items, {release.counts.get('variants', 0)} "
                                  f"variants; left out: {left or 'none'}")
            if o["build"]:
                bar = None if o["no_progress"] else tqdm(desc="build", unit="step")

                def progress(step: str, done: int, total: int) -> None:
                    if bar is not None:
                        bar.set_description(step)
                        bar.total = total or None
                        bar.n = done
                        bar.refresh()

                release = release_build(release_id=release.pk, actor=actor, progress=progress)
                if bar is not None:
                    bar.close()
                self.stdout.write(f"Built {release.folder} (digest {release.digest}, archive sha256 "
                                  f"{release.archive_sha256})")
            if o["publish"] and release.status != release.Status.PUBLISHED:
                release = release_publish(release=release, actor=actor)
                self.stdout.write(f"Published {release.version}.")
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(self.style.SUCCESS(f"{release} is {release.get_status_display()}."))
