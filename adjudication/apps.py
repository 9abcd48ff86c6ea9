from django.apps import AppConfig

from audit.links import register_object_link


class AdjudicationConfig(AppConfig):
    """Adjudication: disagreements found by the rules become cases, radiologists read them, the
    deciding verdict corrects the benchmark and rescores the predictions it touched."""

    name = "adjudication"
    verbose_name = "Adjudication"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (subscribes to workers' run_scored)

        # audit events link to the case page (bulk events name cases "adjudication.case")
        register_object_link("adjudication.adjudicationcase", "adjudication:case-detail")
        register_object_link("adjudication.case", "adjudication:case-detail")
