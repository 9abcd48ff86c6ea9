from django.apps import AppConfig

from audit.links import register_object_link


class LabelStudioConfig(AppConfig):
    """Label Studio sync: batches pushed as projects and tasks, annotations pulled back, webhooks,
    reconciliation and inter-reader agreement. Tasks run on the `sync` queue."""

    name = "labelstudio"
    verbose_name = "Label Studio"

    def ready(self) -> None:
        register_object_link("labelstudio.annotationbatch", "labelstudio:batch-detail")   # audit events link here
