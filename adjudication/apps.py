from django.apps import AppConfig


class AdjudicationConfig(AppConfig):
    """Adjudication: disagreements found by the rules become cases, radiologists read them, the
    deciding verdict corrects the benchmark and rescores the predictions it touched."""

    name = "adjudication"
    verbose_name = "Adjudication"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (subscribes to workers' run_scored)
