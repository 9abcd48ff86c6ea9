from django.apps import AppConfig

from audit.links import register_object_link


class ReportsConfig(AppConfig):
    """Model reports: the document of every number, its figures, its HTML and PDF, and their lifecycle:
    versions built on the `cpu` queue, acceptance criteria, electronic signatures (docs/reports.md)."""

    name = "reports"
    verbose_name = "Model reports"

    def ready(self) -> None:
        # audit events link to the report and version pages
        register_object_link("reports.report", "reports:report-detail")
        register_object_link("reports.reportversion", "reports:version-detail")
