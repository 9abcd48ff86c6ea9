"""The Celery app. Queues: `gpu` (model inference), `cpu` (scoring, exports), `sync` (Label Studio push and pull).

Eager mode is never implicit: it is on only when no broker is configured or when
CELERY_TASK_ALWAYS_EAGER=true is set explicitly; see medr2/settings.py. The broker is Redis in production
and the tests, or the embedded one (`CELERY_BROKER_URL=filesystem://`, medr2/embedded_broker.py) that
`make demo` runs its worker on.
"""
import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "medr2.settings")

app = Celery("medr2")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def preload_model_libraries(sender, **kwargs) -> None:
    """A worker that serves the `gpu` queue imports torch and transformers once, before it forks its pool:
    each pool process, and one started again after a crash, then runs its first batch without paying for
    the imports (several seconds of CPU; the model's weights are still loaded by the first batch)."""
    if "gpu" not in sender.app.amqp.queues.consume_from:
        return
    import torch  # noqa: F401
    from transformers import AutoModelForImageTextToText, AutoProcessor  # noqa: F401
