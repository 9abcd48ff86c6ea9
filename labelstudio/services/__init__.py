"""Label Studio sync: create batches, push them as projects and tasks, pull annotations back.

Parts: `batches` (batches, sync log, signed image links), `push`, `pull` (apply tasks, agreement,
reconciliation), `webhooks`. Guarantees (docs/labelstudio.md):
- Push is idempotent and resumable: tasks are imported in chunks and each chunk's Label Studio ids
  are saved at once; a retry after a failure first recovers ids of tasks that did land.
- Pull never trusts a webhook body: webhooks only say *which* task to fetch; reconciliation pulls
  every task changed since the last successful sync (the cursor moves only on success), so an
  annotation is never lost while Label Studio or we were down.
- Re-pulling never duplicates: an annotation is applied again only when its content hash changed;
  a changed or deleted annotation retires (never deletes) its old boxes, with audit events.
- Bad regions (rotated, out of bounds, malformed) are rejected with a clear sync-log entry, never clipped.
"""
from labelstudio.services.agreement import pooled_agreement, task_refresh_agreement
from labelstudio.services.batches import (
    batch_create,
    batch_set_readers,
    image_id_from_token,
    image_token,
    image_url,
    sync_log,
    webhook_url,
)
from labelstudio.services.pull import (
    SyncResult,
    UserMap,
    apply_ls_task,
    batch_sync,
    reconcile_all,
    task_retire_all,
    tasks_sync,
)
from labelstudio.services.push import (
    PushResult,
    batch_label_config,
    batch_push,
    batch_refresh_urls,
    batch_vocabulary,
    task_payloads,
)
from labelstudio.services.readers import reader_workspace_ensure
from labelstudio.services.webhooks import WebhookOutcome, webhook_receive

__all__ = [
    "PushResult", "SyncResult", "UserMap", "WebhookOutcome", "apply_ls_task", "batch_create", "batch_label_config",
    "batch_push", "batch_refresh_urls", "batch_set_readers", "batch_sync", "batch_vocabulary", "image_id_from_token",
    "image_token", "image_url", "pooled_agreement", "reader_workspace_ensure", "reconcile_all", "sync_log",
    "task_payloads", "task_refresh_agreement", "task_retire_all", "tasks_sync", "webhook_receive", "webhook_url",
]
