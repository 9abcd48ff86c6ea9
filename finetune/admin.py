from django.contrib import admin

from audit.admin import ReadOnlyModelAdmin

from .models import FineTuneJob


@admin.register(FineTuneJob)
class FineTuneJobAdmin(ReadOnlyModelAdmin):
    """Jobs are written only by finetune.services (create, cancel, resume, the worker): visible, never edited here."""

    list_display = ("id", "name", "base_endpoint", "training_set", "recipe", "steps", "seed", "status", "step",
                    "best_val_loss", "result_endpoint", "evaluation_run", "created_by", "created_at")
    list_filter = ("status", "recipe")
    list_select_related = ("base_endpoint", "release", "result_endpoint", "evaluation_run", "created_by")
    search_fields = ("name", "base_endpoint__name")
    date_hierarchy = "created_at"

    @admin.display(description="training set")
    def training_set(self, job: FineTuneJob) -> str:
        if job.release_id:
            return f"release {job.release.version}"
        parts = [f"{k} {', '.join(map(str, v)) if isinstance(v, list) else v}"
                 for k, v in sorted((job.item_filters or {}).items())]
        return "items: " + ("; ".join(parts) or "every approved")

    @admin.display(description="step")
    def step(self, job: FineTuneJob) -> str:
        return f"{(job.progress or {}).get('step', 0)} / {job.steps}"

    @admin.display(description="best val loss")
    def best_val_loss(self, job: FineTuneJob) -> str:
        best = (job.result or {}).get("best_val_loss")
        return "—" if best is None else f"{best:.4f}"
