from django.apps import AppConfig

from audit.links import register_object_link


class ReleasesConfig(AppConfig):
    """Benchmark releases: immutable, signed, reproducible exports of approved items. Builds run on
    the `cpu` queue."""

    name = "releases"
    verbose_name = "Releases"

    def ready(self) -> None:
        register_object_link("releases.release", "releases:release-detail")
