from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    """Benchmark releases: immutable, signed, reproducible exports of approved items. Builds run on
    the `cpu` queue."""

    name = "releases"
    verbose_name = "Releases"
