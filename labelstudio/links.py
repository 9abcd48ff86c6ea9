"""Links into the Label Studio web app (its public URL), for the pages and the API alike."""
from __future__ import annotations

from django.conf import settings


def label_studio_project_url(batch) -> str:
    """The batch's project data manager in Label Studio; "" before the push or without a public URL."""
    if not (settings.LABEL_STUDIO_PUBLIC_URL and batch.ls_project_id):
        return ""
    return f"{settings.LABEL_STUDIO_PUBLIC_URL}/projects/{batch.ls_project_id}/data"


def label_studio_task_url(batch, task) -> str:
    """One task in its project's data manager; "" until the task is in Label Studio."""
    if not (settings.LABEL_STUDIO_PUBLIC_URL and batch.ls_project_id and task.ls_task_id):
        return ""
    return f"{label_studio_project_url(batch)}?task={task.ls_task_id}"
