from django.apps import AppConfig
from django.core import checks

from audit.links import register_object_link


class WorkersConfig(AppConfig):
    """Model registry, VLM backends, evaluation runs, answer parsing and scoring. Batch tasks run
    on the `gpu` / `cpu` queues."""

    name = "workers"
    verbose_name = "Models and evaluation"

    def ready(self) -> None:
        checks.register(check_visibility_timeout, checks.Tags.compatibility)
        register_object_link("workers.evaluationrun", "workers:run-detail")   # audit events link to the run page


def check_visibility_timeout(app_configs=None, **kwargs):
    """A Redis broker redelivers a task not acked within `visibility_timeout`; with acks_late a
    batch still running past it would run twice (harmless, but wasted GPU time)."""
    from django.conf import settings

    timeout = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600)
    longest = settings.MEDR2_EVAL_MAX_BATCH_SECONDS
    if settings.CELERY_BROKER_URL.startswith("redis") and timeout <= longest:
        return [checks.Warning(
            f"CELERY_VISIBILITY_TIMEOUT ({timeout}s) does not exceed MEDR2_EVAL_MAX_BATCH_SECONDS ({longest}s)",
            hint="raise CELERY_VISIBILITY_TIMEOUT above the longest batch, or use smaller batches",
            id="workers.W001")]
    return []
