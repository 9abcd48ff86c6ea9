from django.apps import AppConfig


class WorkersConfig(AppConfig):
    """Model registry, VLM backends, evaluation runs (issue: evaluation engine). Celery tasks
    of this app run on the `gpu` / `cpu` queues."""

    name = "workers"
    verbose_name = "Models and evaluation"
