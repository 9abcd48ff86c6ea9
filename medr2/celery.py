"""The Celery app. Queues: `gpu` (model inference), `cpu` (scoring, exports), `sync` (Label Studio push and pull).

Eager mode is never implicit: it is on only when no broker is configured (the demo) or when
CELERY_TASK_ALWAYS_EAGER=true is set explicitly; see medr2/settings.py.
"""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "medr2.settings")

app = Celery("medr2")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
