"""Pages for fine-tuning jobs: the list, the new-job form, a job's page (live progress and loss curve while it
trains; settings, data, result, adapter and the paired evaluation after), its progress JSON and its cancel /
resume actions. Thin: parse, call one service or selector, render."""
from __future__ import annotations

from pathlib import PurePath

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import filesizeformat
from django.views import View

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability, user_can
from common.errors import Conflict
from common.pagination import page_of

from . import selectors
from .core.recipes import RECIPE_LABELS
from .forms import JobForm
from .models import FineTuneJob
from .services import job_cancel, job_create, job_resume


def _job(pk: int) -> FineTuneJob:
    job = selectors.job_find(pk=pk)
    if job is None:
        raise Http404(f"no fine-tuning job {pk}")
    return job


class JobListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_RESULTS

    def get(self, request):
        status = request.GET.get("status", "")
        page = page_of(request, selectors.job_list_by_status(status=status))
        return render(request, "finetune/job_list.html", {
            "page": page, "rows": [(job, item_set(job.item_filters)) for job in page], "status": status,
            "statuses": FineTuneJob.Status.choices, "can_run": user_can(request.user, Capability.RUN_EVALUATIONS)})


class JobCreateView(CapabilityRequiredMixin, View):
    required_capability = Capability.RUN_EVALUATIONS

    def get(self, request):
        return render(request, "finetune/job_form.html", {"form": JobForm()})

    def post(self, request):
        form = JobForm(request.POST)
        if form.is_valid():
            d = form.cleaned_data
            try:
                job = job_create(actor=request.user, base_endpoint=d["base_endpoint"], recipe=d["recipe"],
                                 steps=d["steps"], release=d["release"], item_filters=form.item_filters(),
                                 seed=d["seed"], config=form.config(), name=d["name"])
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, f"Fine-tuning job {job.pk} queued: {job.steps} steps of "
                                          f"{job.config.get('tokens_per_step')} tokens on the gpu queue.")
                return redirect("finetune:job-detail", pk=job.pk)
        return render(request, "finetune/job_form.html", {"form": form}, status=400)


class JobDetailView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_RESULTS

    def get(self, request, pk: int):
        job = _job(pk)
        progress = selectors.job_progress(job=job)
        return render(request, "finetune/job_detail.html", {
            "job": job, "progress": progress, "live": progress["progress"],
            "recipe_label": RECIPE_LABELS.get(job.recipe, job.recipe),
            "work_folder": PurePath(job.work_dir).name if job.work_dir else "",
            "item_set": item_set(job.item_filters),
            "settings_rows": settings_rows(job.config or {}), "data_rows": data_rows(job.data or {}),
            "result_rows": result_rows(job.result or {}),
            "hashes": sorted((job.adapter_hashes or {}).items()),
            "stats": live_stats(progress["progress"]),
            "can_run": user_can(request.user, Capability.RUN_EVALUATIONS)})


class JobProgressView(CapabilityRequiredMixin, View):
    """JSON polled by the job page every two seconds while the job is pending or running."""

    required_capability = Capability.VIEW_RESULTS

    def get(self, request, pk: int):
        return JsonResponse(selectors.job_progress(job=_job(pk)))


class JobActionView(CapabilityRequiredMixin, View):
    required_capability = Capability.RUN_EVALUATIONS

    def post(self, request, pk: int, action: str):
        job = _job(pk)
        service = {"cancel": job_cancel, "resume": job_resume}.get(action)
        if service is None:
            return HttpResponse(status=404)
        try:
            job = service(job=job, actor=request.user)
        except (ValidationError, Conflict) as exc:
            messages.error(request, exc.message if isinstance(exc, Conflict) else "; ".join(exc.messages))
        else:
            if action == "cancel":
                messages.info(request, "Job cancelled." if job.status == FineTuneJob.Status.CANCELLED else
                              "Cancelling: the worker stops after its current step and keeps its checkpoint.")
            else:
                messages.success(request, "Job resumed: it goes on from its last checkpoint.")
        return redirect("finetune:job-detail", pk=pk)


# --- what the job page shows, as readable rows (no Python reprs) --------------------------------------------------

def item_set(item_filters: dict | None) -> str:
    """A job's item filters in words: "current approved items · stage S1, S2 · category margin"."""
    words = {"stage": "stage", "category": "category", "modality": "modality", "status": "status",
             "item_ids": "items"}
    parts = [f"{words.get(k, k)} {_number(v if isinstance(v, (list, tuple)) else [v])}"
             for k, v in sorted((item_filters or {}).items())]
    status = "" if "status" in (item_filters or {}) else "approved "
    return " · ".join([f"current {status}items", *parts])


def duration(seconds) -> str:
    if seconds is None:
        return "—"
    seconds = max(int(round(float(seconds))), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def _number(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "—"
    return "—" if value in (None, "") else str(value)


def _bytes(value) -> str:
    return filesizeformat(value) if value else "—"


SETTING_LABELS = {
    "tokens_per_step": ("Tokens per step",
                        lambda c: f"at least {_number(c['tokens_per_step'])} tokens of whole examples (image, prompt, "
                                  "answer)"),
    "micro_batch": ("Micro-batch", lambda c: f"at most {_number(c['micro_batch'])} examples; gradients accumulate "
                                             "into one step"),
    "lr": ("Learning rate", lambda c: f"{_number(c['lr'])} (linear warm-up, cosine decay to a tenth)"),
    "warmup_steps": ("Warm-up", lambda c: f"{_number(c['warmup_steps'])} steps" if c["warmup_steps"] else "none"),
    "weight_decay": ("Weight decay", lambda c: _number(c["weight_decay"])),
    "full": ("Trained weights", lambda c: "every weight (no adapter)" if c["full"] else "a LoRA adapter"),
    "lora_r": ("LoRA rank", lambda c: _number(c["lora_r"])),
    "lora_alpha": ("LoRA alpha", lambda c: _number(c["lora_alpha"])),
    "lora_dropout": ("LoRA dropout", lambda c: _number(c["lora_dropout"])),
    "target_modules": ("LoRA target modules", lambda c: _number(c["target_modules"])),
    "eval_every": ("Validation", lambda c: f"every {_number(c['eval_every'])} steps, on at most "
                                           f"{_number(c.get('eval_max_examples', 0))} val examples"
                   if c["eval_every"] else "never"),
    "patience": ("Early stopping", lambda c: f"after {_number(c['patience'])} evaluations without a better val loss"
                 if c["patience"] else "never"),
    "checkpoint_every": ("Checkpoints", lambda c: f"every {_number(c['checkpoint_every'])} steps"
                         if c["checkpoint_every"] else "only at the end"),
    "max_length": ("Longest sequence", lambda c: f"{_number(c['max_length'])} tokens (longer examples are left out)"),
    "device": ("Device", lambda c: "GPU when there is one, else CPU" if c["device"] == "auto" else str(c["device"])),
    "answer_style": ("Choice answers", lambda c: "the option text (scored like the letter)"
                     if c["answer_style"] == "text" else "the option letter, as the prompt asks"),
}
NOT_SETTINGS = ("steps", "seed", "eval_max_examples", "system_prompt")   # shown elsewhere, or part of a row above


def settings_rows(config: dict) -> list[tuple[str, str]]:
    """(label, value) per training setting, in a reading order; settings without a label shown as they are."""
    rows = [(label, show(config)) for key, (label, show) in SETTING_LABELS.items() if key in config]
    rows += [(key.replace("_", " "), _number(value)) for key, value in sorted(config.items())
             if key not in SETTING_LABELS and key not in NOT_SETTINGS]
    return rows


def _sources(by_source: dict) -> str:
    names = {"chain": "chains", "item": "items", "variant": "variants"}
    return ", ".join(f"{_number(n)} {names.get(k, k)}" for k, n in sorted(by_source.items())) or "—"


def data_rows(data: dict) -> list[dict]:
    """One row per split: items, and once the worker has built them, examples, turns and their sources."""
    rows = []
    for split in ("train", "val", "test"):
        d = data.get(split)
        if d is None:
            continue
        rows.append({"split": split, "items": d.get("items"), "examples": d.get("examples"), "turns": d.get("turns"),
                     "sources": _sources(d["by_source"]) if "by_source" in d else "",
                     "skipped": d.get("items_without_clean_variant"),
                     "note": d["source"] if d.get("source", "val split") != "val split" else ""})
    return rows


def result_rows(result: dict) -> list[tuple[str, str]]:
    if not result:
        return []
    best = result.get("best_val_loss")
    status = {"completed": "completed the budget", "stopped_early": "stopped early (no better val loss)"}
    return [
        ("Outcome", status.get(result.get("status"), _number(result.get("status")))),
        ("Steps", _number(result.get("steps"))),
        ("Tokens", _number(result.get("tokens"))),
        ("Training time", duration(result.get("train_seconds"))),
        ("Throughput", f"{_number(result.get('tokens_per_s'))} tokens/s"),
        ("Best val loss", f"{best:.4f} at step {_number(result.get('best_step'))}" if best is not None else "—"),
        ("Peak memory (process)", _bytes(result.get("peak_rss_bytes"))),
        ("Peak GPU memory", _bytes(result.get("peak_gpu_bytes"))),
        ("Resumed from", f"step {_number(result['resumed_from'])} (a checkpoint)" if result.get("resumed_from")
         else "no: one uninterrupted run"),
    ]


def live_stats(progress: dict) -> dict[str, str]:
    """The live numbers under the progress bar, as the page first shows them (static/js/finetune.js updates them)."""
    loss, val = progress.get("loss"), progress.get("val_loss")
    return {"loss": f"{loss:.4f}" if loss is not None else "—", "val_loss": f"{val:.4f}" if val is not None else "—",
            "tokens": _number(progress.get("tokens")) if progress.get("tokens") is not None else "—",
            "rate": f"{progress['tokens_per_s']:,.0f} tokens/s" if progress.get("tokens_per_s") else "—",
            "eta": duration(progress.get("eta_s")) if progress.get("eta_s") is not None else "—",
            "memory": _bytes(progress.get("peak_rss_bytes"))}
