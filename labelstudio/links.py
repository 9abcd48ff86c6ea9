"""Links into the Label Studio web app (its public URL), for the pages and the API alike."""
from __future__ import annotations

from django.conf import settings


def label_studio_project_url(batch, reader=None) -> str:
    """The batch's project data manager in Label Studio (a reader's own copy when `reader` reads a
    per-reader batch); "" before the push or without a public URL."""
    project_id = batch.ls_project_id
    if reader is not None and batch.per_reader:
        project_id = batch.reader_projects.filter(reader=reader).values_list(
            "ls_project_id", flat=True).first() or batch.ls_project_id
    if not (settings.LABEL_STUDIO_PUBLIC_URL and project_id):
        return ""
    return f"{settings.LABEL_STUDIO_PUBLIC_URL}/projects/{project_id}/data"


def label_studio_task_url(batch, task, reader=None) -> str:
    """One task in its project's data manager (the reader's copy, see above); "" until it is in Label Studio."""
    ls_task_id = task.ls_task_id
    if reader is not None and batch.per_reader:
        ls_task_id = task.reader_copies.filter(reader_project__reader=reader).values_list(
            "ls_task_id", flat=True).first() or task.ls_task_id
    project = label_studio_project_url(batch, reader)
    if not (project and ls_task_id):
        return ""
    return f"{project}?task={ls_task_id}"
