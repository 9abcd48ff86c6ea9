"""The one place that talks to Label Studio (label-studio-sdk 2.x). Every failure becomes one of
three errors so callers can decide: retry later (`LabelStudioUnavailable`), give up with a clear
message (`LabelStudioRejected`), or tell the operator to configure it (`LabelStudioNotConfigured`).
The first and the last are also `common.errors` refusals (503 and 409 in an API answer).

The SDK and httpx are imported where they are used: loading the SDK takes a second, and most
processes (the web pages, the migrations) never talk to Label Studio."""
from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from common.errors import Conflict, Unavailable

WEBHOOK_HEADER = "X-Medr2-Webhook-Secret"
WEBHOOK_ACTIONS = ["ANNOTATION_CREATED", "ANNOTATIONS_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED"]


class LabelStudioError(Exception):
    pass


class LabelStudioNotConfigured(LabelStudioError, Conflict):
    """LABEL_STUDIO_URL / LABEL_STUDIO_API_KEY are not set: nothing can be pushed or pulled."""


class LabelStudioUnavailable(LabelStudioError, Unavailable):
    """Down, slow, overloaded (timeouts, refused connections, 5xx, 429): try again later."""


class LabelStudioRejected(LabelStudioError):
    """A 4xx answer: retrying the same request will not help."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def _classify(exc: Exception, what: str) -> LabelStudioError:
    import httpx
    from label_studio_sdk.core.api_error import ApiError

    if isinstance(exc, LabelStudioError):
        return exc
    if isinstance(exc, httpx.TimeoutException):
        return LabelStudioUnavailable(f"{what}: Label Studio timed out ({type(exc).__name__})")
    if isinstance(exc, httpx.TransportError | ConnectionError | OSError):
        return LabelStudioUnavailable(f"{what}: Label Studio unreachable ({type(exc).__name__}: {exc})")
    if isinstance(exc, ApiError):
        status = exc.status_code or 0
        body = exc.body if isinstance(exc.body, str) else json.dumps(exc.body, default=str)
        if status >= 500 or status in (408, 429):
            return LabelStudioUnavailable(f"{what}: Label Studio answered {status}")
        return LabelStudioRejected(f"{what}: Label Studio answered {status}: {body[:500]}", status=status)
    return LabelStudioRejected(f"{what}: {type(exc).__name__}: {exc}")


class LabelStudioClient:
    def __init__(self, *, url: str, api_key: str, timeout_s: float = 15.0):
        if not url or not api_key:
            raise LabelStudioNotConfigured(
                "Label Studio is not configured: set LABEL_STUDIO_URL and LABEL_STUDIO_API_KEY (docs/labelstudio.md)")
        import httpx
        from label_studio_sdk import LabelStudio

        self.url = url.rstrip("/")
        self._http = httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 5.0)))
        self.sdk = LabelStudio(base_url=self.url, api_key=api_key, httpx_client=self._http)

    @classmethod
    def from_settings(cls) -> LabelStudioClient:
        return cls(url=settings.LABEL_STUDIO_URL, api_key=settings.LABEL_STUDIO_API_KEY,
                   timeout_s=settings.LABEL_STUDIO_TIMEOUT_S)

    def close(self) -> None:
        self._http.close()

    def _call(self, what: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs, request_options={"max_retries": 0})
        except Exception as exc:  # noqa: BLE001 - classified, never swallowed
            raise _classify(exc, what) from exc

    # --- projects -------------------------------------------------------------------------------
    def create_project(self, *, title: str, description: str, label_config: str, maximum_annotations: int,
                       prefill: bool = False) -> int:
        # an independent read (prefill False) gets no pre-annotation at all and Label Studio is told not to
        # pre-fill; a correction batch pre-fills its tasks' predictions on purpose
        project = self._call("create project", self.sdk.projects.create, title=title, description=description,
                              label_config=label_config, maximum_annotations=maximum_annotations,
                              overlap_cohort_percentage=100, show_skip_button=True, enable_empty_annotation=True,
                              show_collab_predictions=prefill)
        return int(project.id)

    def update_project(self, project_id: int, **fields: Any) -> None:
        self._call("update project", self.sdk.projects.update, id=project_id, **fields)

    def find_project(self, title: str) -> int | None:
        """The id of a project with exactly this title (a create whose answer was lost), if any."""
        try:
            for project in self.sdk.projects.list(title=title, request_options={"max_retries": 0}):
                if project.title == title:
                    return int(project.id)
        except Exception:  # noqa: BLE001 - a lookup only; creating is the fallback
            return None
        return None

    # --- tasks ----------------------------------------------------------------------------------
    def import_tasks(self, project_id: int, tasks: list[dict]) -> list[int]:
        """Label Studio creates the tasks in the order given and returns their ids in that order."""
        response = self._call("import tasks", self.sdk.projects.import_tasks, id=project_id, request=tasks,
                              return_task_ids=True)
        ids = list(response.task_ids or [])
        if len(ids) != len(tasks):
            raise LabelStudioRejected(f"import tasks: sent {len(tasks)} tasks, Label Studio created {len(ids)}")
        return [int(i) for i in ids]

    def update_task_data(self, task_id: int, data: dict) -> None:
        self._call("update task", self.sdk.tasks.update, id=task_id, data=data)

    def get_task(self, task_id: int) -> dict | None:
        """The task with all its annotations, or None when Label Studio no longer has it."""
        try:
            task = self._call("get task", self.sdk.tasks.get, id=task_id)
        except LabelStudioRejected as exc:
            if exc.status == 404:
                return None
            raise
        return _plain(task)

    def iter_tasks(self, project_id: int, *, updated_after: datetime | None = None, fields: str = "all",
                   page_size: int = 100) -> Iterator[dict]:
        """Every task of the project (with annotations when fields='all'), optionally only those
        whose updated_at (bumped by any annotation create/update/delete) is after the given time."""
        query = None
        if updated_after is not None:
            query = json.dumps({"filters": {"conjunction": "and", "items": [{
                "filter": "filter:tasks:updated_at", "operator": "greater", "type": "Datetime",
                # Label Studio parses exactly this format (UTC, microseconds, 'Z')
                "value": updated_after.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")}]}})
        try:
            pager = self.sdk.tasks.list(project=project_id, fields=fields, query=query, page_size=page_size,
                                        resolve_uri=False, request_options={"max_retries": 0})
            for task in pager:
                yield _plain(task)
        except Exception as exc:  # noqa: BLE001
            raise _classify(exc, "list tasks") from exc

    # --- users, webhooks ------------------------------------------------------------------------
    def user_emails(self) -> dict[int, str]:
        users = self._call("list users", self.sdk.users.list)
        return {int(u.id): (u.email or "") for u in users}

    def ensure_webhook(self, project_id: int, *, url: str, secret: str) -> int:
        """One active webhook per project to `url`, carrying the shared secret header."""
        headers = {WEBHOOK_HEADER: secret}
        existing = self._call("list webhooks", self.sdk.webhooks.list, project=str(project_id))
        for hook in existing:
            if hook.url == url:
                self._call("update webhook", self.sdk.webhooks.update, id=hook.id, url=url, headers=headers,
                           send_payload=True, actions=WEBHOOK_ACTIONS, is_active=True)
                return int(hook.id)
        hook = self._call("create webhook", self.sdk.webhooks.create, url=url, project=project_id, headers=headers,
                          send_payload=True, send_for_all_actions=False, actions=WEBHOOK_ACTIONS)
        return int(hook.id)


def _plain(obj: Any) -> dict:
    if isinstance(obj, dict):
        return obj
    dump = getattr(obj, "model_dump", None) or obj.dict
    return json.loads(json.dumps(dump(), default=str))
