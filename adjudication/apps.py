from django.apps import AppConfig

from audit.links import register_object_link
from common.titles import register_titles


class AdjudicationConfig(AppConfig):
    """Adjudication: disagreements found by the rules become cases, radiologists read them, the
    deciding verdict corrects the benchmark and rescores the predictions it touched."""

    name = "adjudication"
    verbose_name = "Adjudication"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (subscribes to workers' run_scored)
        from .rules import RULES
        from .rules.titles import rule_titles

        register_titles("rule", rule_titles(RULES))   # rule names on pages, filters and the API (common/titles.py)

        # audit events link to the case page (bulk events name cases "adjudication.case")
        register_object_link("adjudication.adjudicationcase", "adjudication:case-detail")
        register_object_link("adjudication.case", "adjudication:case-detail")
