"""Celery adapter for fine-tuning: one job per task on the `gpu` queue (CELERY_TASK_ROUTES). Acked late
and redelivered when the worker dies: the job then resumes from its last checkpoint."""
from __future__ import annotations

from celery import shared_task

from .services import job_execute


@shared_task(name="finetune.train", acks_late=True, reject_on_worker_lost=True)
def train_job(job_id: int) -> str | None:
    job = job_execute(job_id=job_id)
    return None if job is None else job.status
