from django.apps import AppConfig


class LabelStudioConfig(AppConfig):
    """Label Studio sync: batches pushed as projects and tasks, annotations pulled back, webhooks,
    reconciliation and inter-reader agreement. Tasks run on the `sync` queue."""

    name = "labelstudio"
    verbose_name = "Label Studio"
