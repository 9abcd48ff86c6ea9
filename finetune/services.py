"""Fine-tuning jobs: create (every input checked before any training), execute on the `gpu` queue
(resuming from the last checkpoint after a killed worker), cancel, resume; and on completion store
the adapter's hashes, register the fine-tuned model as an endpoint with its lineage and start the
paired evaluation (base vs fine-tuned, test split). Every step is audited."""
from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from audit.services import audit_record
from common.dispatch import send_after_commit
from common.errors import Conflict
from workers.models import ModelEndpoint
from workers.services.endpoints import endpoint_create
from workers.services.runs import run_create

from .core.recipes import RECIPES, build_examples, describe_examples
from .core.trainer import Cancelled, TrainConfig, TrainingError, train
from .models import FineTuneJob
from .selectors import items_by_split, training_chains, unknown_filters

log = logging.getLogger(__name__)

CONFIG_KEYS = ("tokens_per_step", "micro_batch", "lr", "weight_decay", "warmup_steps", "lora_r", "lora_alpha",
               "lora_dropout", "target_modules", "eval_every", "eval_max_examples", "patience", "checkpoint_every",
               "max_length", "device", "answer_style")
CONFIG_DEFAULTS = {"eval_every": 10, "patience": 3, "checkpoint_every": 10}
PROGRESS_EVERY_S = float(getattr(settings, "MEDR2_FINETUNE_PROGRESS_S", 1.0))   # progress writes, cancel checks


LOCK_CLASS = 0x4D52_4654   # "MRFT": the advisory-lock namespace of training jobs


@contextmanager
def training_lock(job_id: int) -> Iterator[bool]:
    """A PostgreSQL session advisory lock held while a worker trains the job. A second delivery of the same
    job (a duplicate message, a redelivery past the visibility timeout, a resume while the first still runs)
    finds it taken and leaves; a killed worker's connection closes and so releases it. Yields whether the
    lock was taken. Other databases (the demo's SQLite: one process, eager tasks): always taken."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_CLASS, job_id])
        taken = bool(cursor.fetchone()[0])
    try:
        yield taken
    finally:
        if taken:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_CLASS, job_id])


def job_is_training(job: FineTuneJob) -> bool:
    """Whether a live worker holds the job's training lock (False on databases without advisory locks)."""
    if connection.vendor != "postgresql":
        return False
    with training_lock(job.pk) as taken:
        return not taken


def check_budget(steps) -> int:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValidationError(f"the budget (steps) must be a positive integer, got {steps!r}")
    return steps


def check_base(endpoint: ModelEndpoint) -> Path:
    """The base model's directory, or a ValidationError saying why it cannot be fine-tuned."""
    if endpoint.backend != "transformers":
        raise ValidationError(f"{endpoint.name} is a {endpoint.backend!r} model; only local transformers models "
                              "(a model directory) can be fine-tuned")
    if endpoint.parameters.get("adapter"):
        raise ValidationError(f"{endpoint.name} is itself fine-tuned (an adapter); fine-tune its base model instead")
    path = Path(str(endpoint.parameters.get("path") or "")).expanduser()
    if not str(endpoint.parameters.get("path") or "") or not path.is_dir():
        raise ValidationError(f"the base model directory {str(path)!r} of {endpoint.name} does not exist")
    config_file = path / "config.json"
    try:
        config = json.loads(config_file.read_text())
    except (OSError, ValueError) as exc:
        raise ValidationError(f"{str(path)!r} is not a saved model: no readable config.json ({exc})") from exc
    if not isinstance(config, dict) or "vision_config" not in config:
        raise ValidationError(f"{str(path)!r} is not a vision-language model (its config.json has no vision_config)")
    return path


def resolve_config(*, steps: int, seed: int, config: dict | None) -> dict:
    config = dict(config or {})
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise ValidationError(f"unknown training settings {unknown}; allowed: {', '.join(CONFIG_KEYS)}")
    try:
        cfg = TrainConfig(steps=steps, seed=seed, **{**CONFIG_DEFAULTS, **config})
    except (TrainingError, TypeError) as exc:
        raise ValidationError(str(exc)) from exc
    return cfg.as_dict()


def job_create(*, actor, base_endpoint: ModelEndpoint, recipe: str, steps, release=None,
               item_filters: dict | None = None, seed: int = 0, config: dict | None = None, name: str = "",
               start: bool = True, evaluate_after: bool = True) -> FineTuneJob:
    """A job whose inputs are all checked: the base is a local VLM, the training set has train items, the
    recipe is known, the budget is a positive integer. With `start`, queued on commit."""
    if recipe not in RECIPES:
        raise ValidationError(f"unknown recipe {recipe!r}; choose one of {', '.join(RECIPES)}")
    check_budget(steps)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValidationError(f"seed must be a non-negative integer, got {seed!r}")
    check_base(base_endpoint)
    item_filters = {k: v for k, v in (item_filters or {}).items() if v not in (None, "", [])}
    if release is not None and item_filters:
        raise ValidationError("give a release or item filters, not both")
    if bad := unknown_filters(item_filters):
        raise ValidationError(f"unknown item filters {bad}")
    splits = items_by_split(release=release, item_filters=item_filters)
    if not splits.get("train"):
        where = f"release {release}" if release is not None else "the selected items"
        raise ValidationError(f"{where} has no train items: nothing to fine-tune on")
    resolved = resolve_config(steps=steps, seed=seed, config=config)
    with transaction.atomic():
        job = FineTuneJob.objects.create(
            name=name or f"{base_endpoint.name} {recipe} seed {seed}", base_endpoint=base_endpoint, release=release,
            item_filters=item_filters, recipe=recipe, steps=steps, seed=seed, config=resolved,
            evaluate_after=evaluate_after,
            data={split: {"items": len(ids)} for split, ids in splits.items()},
            created_by=actor if getattr(actor, "is_authenticated", False) else None)
        job.work_dir = f"job-{job.pk}"
        job.save(update_fields=["work_dir"])
        audit_record(actor=actor, action="finetune.job.create", target=job,
                     after={"base": base_endpoint.name, "recipe": recipe, "steps": steps, "seed": seed,
                            "release": str(release) if release else None, "item_filters": item_filters,
                            "config": resolved})
        if start:
            _send(job)
    return job


def _send(job: FineTuneJob) -> None:
    from .tasks import train_job  # lazy: tasks.py imports this module

    send_after_commit(train_job, job.pk)


def work_path(job: FineTuneJob) -> Path:
    return Path(settings.MEDR2_FINETUNE_ROOT) / job.work_dir


def job_cancel(*, job: FineTuneJob, actor) -> FineTuneJob:
    """Pending: cancelled now. Running: the worker stops after its current step and keeps its checkpoint."""
    with transaction.atomic():
        job = FineTuneJob.objects.select_for_update().get(pk=job.pk)
        if not job.is_active:
            raise Conflict(f"job {job.pk} is {job.status}; only pending or running jobs can be cancelled")
        if job.status == FineTuneJob.Status.PENDING:
            job.status, job.finished_at = FineTuneJob.Status.CANCELLED, timezone.now()
        job.cancel_requested = True
        job.save(update_fields=["status", "finished_at", "cancel_requested"])
        audit_record(actor=actor, action="finetune.job.cancel", target=job, after={"status": job.status})
    return job


def job_resume(*, job: FineTuneJob, actor) -> FineTuneJob:
    """A cancelled or failed job goes back on the queue and goes on from its last checkpoint; so does a
    running job that no live worker holds (its worker died and the broker has not handed it on yet)."""
    with transaction.atomic():
        job = FineTuneJob.objects.select_for_update().get(pk=job.pk)
        stale = job.status == FineTuneJob.Status.RUNNING and not job_is_training(job)
        if job.status not in (FineTuneJob.Status.CANCELLED, FineTuneJob.Status.FAILED) and not stale:
            raise Conflict(f"job {job.pk} is {job.status}; only cancelled or failed jobs, or running jobs whose "
                           "worker is gone, can be resumed")
        job.status, job.cancel_requested, job.error, job.finished_at = FineTuneJob.Status.PENDING, False, "", None
        job.save(update_fields=["status", "cancel_requested", "error", "finished_at"])
        audit_record(actor=actor, action="finetune.job.resume", target=job,
                     after={"from_step": (job.progress or {}).get("step", 0)})
        _send(job)
    return job


def _examples(job: FineTuneJob) -> tuple[list, list, dict]:
    """Train and val examples of the job's recipe. Without val items (a small item set), a seeded tenth of
    the train chains (at least one) is held out for validation, and the data record says so."""
    splits = items_by_split(release=job.release, item_filters=job.item_filters)
    template, mixed = job.base_endpoint.prompt_template, job.recipe == "mixed"
    train_chains, skipped = training_chains(splits.get("train", []), prompt_template=template, with_variants=mixed)
    val_chains, val_skipped = training_chains(splits.get("val", []), prompt_template=template)
    val_source = "val split"
    if not val_chains and job.config.get("eval_every") and len(train_chains) >= 2:
        import random

        held = set(random.Random(job.seed).sample(range(len(train_chains)), max(1, len(train_chains) // 10)))
        val_chains = [c for i, c in enumerate(train_chains) if i in held]
        train_chains = [c for i, c in enumerate(train_chains) if i not in held]
        val_source = "held out from train (no val items)"
    style = job.config.get("answer_style", "letter")
    train_set = build_examples(job.recipe, train_chains, style)
    # validation always measures the same thing whatever the recipe: the stepwise chains without variants
    val_set = build_examples("stepwise" if job.recipe == "mixed" else job.recipe,
                             [c.__class__(c.chain_id, c.image, c.steps) for c in val_chains], style)
    data = {"train": {**describe_examples(train_set), "items_without_clean_variant": skipped},
            "val": {**describe_examples(val_set), "items_without_clean_variant": val_skipped, "source": val_source},
            "test": {"items": len(splits.get("test", []))}}
    return train_set, val_set, data


def _start_running(job_id: int) -> FineTuneJob | None:
    with transaction.atomic():
        job = FineTuneJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.status in (FineTuneJob.Status.COMPLETED, FineTuneJob.Status.CANCELLED,
                                         FineTuneJob.Status.FAILED):
            return None
        resumed = job.status == FineTuneJob.Status.RUNNING    # a redelivery after a killed worker
        job.status, job.attempts = FineTuneJob.Status.RUNNING, job.attempts + 1
        job.started_at = job.started_at or timezone.now()
        job.save(update_fields=["status", "attempts", "started_at"])
        audit_record(actor=None, action="finetune.job.resume_after_loss" if resumed else "finetune.job.start",
                     target=job, after={"attempt": job.attempts, "step": (job.progress or {}).get("step", 0)})
    return job


def _end(job: FineTuneJob, status: str, *, error: str = "", action: str, after: dict | None = None) -> None:
    with transaction.atomic():
        FineTuneJob.objects.filter(pk=job.pk).update(status=status, error=error[:2000], finished_at=timezone.now())
        audit_record(actor=None, action=action, target=job, after={"status": status, **(after or {})})


def job_execute(*, job_id: int, on_progress: Callable[[dict], None] | None = None) -> FineTuneJob | None:
    """Train (or resume) one job; quiet when it is gone, already finished, or trained by another worker right
    now (`training_lock`). Called by the gpu-queue task and by `manage.py finetune` (in-process, with a
    progress bar through `on_progress`)."""
    with training_lock(job_id) as taken:
        if not taken:
            log.info("fine-tuning job %s is being trained by another worker; this delivery leaves it", job_id)
            return None
        return _execute(job_id, on_progress)


def _execute(job_id: int, on_progress: Callable[[dict], None] | None) -> FineTuneJob | None:
    job = _start_running(job_id)
    if job is None:
        return None
    state = {"saved": 0.0, "cancel": False, "checked": 0.0}

    def progress(entry: dict) -> None:
        now = time.monotonic()
        if on_progress is not None:
            on_progress(entry)
        history = job.progress.get("history", []) if job.progress else []
        point = {k: entry[k] for k in ("step", "loss", "val_loss") if k in entry}
        if not history or history[-1].get("step", 0) < point["step"]:
            history.append(point)
            if len(history) > 1000:   # the curve keeps its shape: every other train point; val points all kept
                last = len(history) - 1
                history = [h for n, h in enumerate(history) if "val_loss" in h or n % 2 == 0 or n == last]
        job.progress = {**{k: v for k, v in entry.items() if k not in ("lr",)}, "history": history}
        if now - state["saved"] >= PROGRESS_EVERY_S or "val_loss" in entry or entry["step"] == entry["steps"]:
            FineTuneJob.objects.filter(pk=job.pk).update(progress=job.progress)
            state["saved"] = now

    def should_stop() -> bool:
        now = time.monotonic()
        if now - state["checked"] >= PROGRESS_EVERY_S:
            state["checked"] = now
            state["cancel"] = FineTuneJob.objects.filter(pk=job.pk, cancel_requested=True).exists()
        return state["cancel"]

    try:
        train_set, val_set, data = _examples(job)
        FineTuneJob.objects.filter(pk=job.pk).update(data=data)
        cfg = TrainConfig(**{**job.config, "target_modules": job.config.get("target_modules") or ()})
        cfg.system_prompt = job.base_endpoint.parameters.get("system_prompt") or None
        result = train(check_base(job.base_endpoint), train_set, val_set, cfg, work_path(job),
                       progress=progress, should_stop=should_stop)
    except Cancelled as exc:
        FineTuneJob.objects.filter(pk=job.pk).update(progress=job.progress)
        _end(job, FineTuneJob.Status.CANCELLED, action="finetune.job.cancelled", after={"detail": str(exc)})
        return FineTuneJob.objects.get(pk=job.pk)
    except (TrainingError, ValidationError) as exc:
        message = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        _end(job, FineTuneJob.Status.FAILED, error=message, action="finetune.job.fail")
        return FineTuneJob.objects.get(pk=job.pk)
    return job_complete(job=FineTuneJob.objects.get(pk=job.pk), result=result)


def _hashes(folder: Path) -> dict[str, str]:
    out = {}
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest = hashlib.sha256()
        with open(f, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        out[str(f.relative_to(folder))] = digest.hexdigest()
    return out


def endpoint_name(job: FineTuneJob) -> str:
    base = re.sub(r"[^-a-zA-Z0-9_]+", "-", job.base_endpoint.name)[:40]
    return f"{base}-ft-{job.recipe.replace('_', '-')}-s{job.seed}-j{job.pk}"


def job_complete(*, job: FineTuneJob, result) -> FineTuneJob:
    """Hash the adapter, register the fine-tuned endpoint with its lineage, start the paired evaluation."""
    adapter = Path(result.output)
    hashes = _hashes(adapter)
    base = job.base_endpoint
    lineage = {"job": job.pk, "base": base.name, "recipe": job.recipe, "seed": job.seed, "steps": result.steps,
               "release": str(job.release) if job.release else None, "item_filters": job.item_filters,
               "adapter_sha256": hashes}
    summary = {"status": result.status, "steps": result.steps, "tokens": result.tokens,
               "train_seconds": round(result.train_seconds, 3), "tokens_per_s": round(result.tokens_per_s, 1),
               "best_val_loss": result.best_val_loss, "best_step": result.best_step,
               "peak_rss_bytes": result.peak_rss_bytes, "peak_gpu_bytes": result.peak_gpu_bytes,
               "resumed_from": result.resumed_from}
    with transaction.atomic():
        job = FineTuneJob.objects.select_for_update().get(pk=job.pk)
        if job.status == FineTuneJob.Status.COMPLETED:
            return job
        endpoint = job.result_endpoint or endpoint_create(
            name=endpoint_name(job), backend=base.backend, actor=None, queue=base.queue,
            parameters={**base.parameters, "adapter": str(adapter)}, prompt_template=base.prompt_template,
            box_format=base.box_format, display_name=f"{base.label} + {job.recipe} (seed {job.seed})",
            description=f"LoRA fine-tune of {base.name} ({job.recipe}, seed {job.seed}, {result.steps} steps), "
                        f"job {job.pk}", lineage=lineage)
        test_ids = items_by_split(release=job.release, item_filters=job.item_filters).get("test", [])
        run = None
        if test_ids and job.evaluate_after:
            run = run_create(name=f"{job.name}: base vs fine-tuned", endpoints=[base, endpoint], actor=None,
                             item_filters={"item_ids": test_ids}, split="test")
        job.status, job.finished_at, job.error = FineTuneJob.Status.COMPLETED, timezone.now(), ""
        job.adapter_hashes, job.result, job.result_endpoint, job.evaluation_run = hashes, summary, endpoint, run
        job.save(update_fields=["status", "finished_at", "error", "adapter_hashes", "result", "result_endpoint",
                                "evaluation_run"])
        audit_record(actor=None, action="finetune.job.complete", target=job,
                     after={**summary, "endpoint": endpoint.name, "adapter_sha256": hashes,
                            "evaluation_run": run.pk if run else None})
    return job
