"""A small but complete platform, built once for the every-page browser test (tests/e2e/test_every_page.py):
every kind of object a page shows exists, made by the services people's actions call.

- the demo's images (`demo_load`: synthetic phantoms with ground-truth findings, plus the real CT, MR and
  NIfTI volume that ship with pydicom and nibabel), assigned to the annotator and the adjudicator;
- chains on the phantoms, approved, with every variant kind;
- five models (four planted ones whose behaviour is known and a blind baseline) in a run executed by the real
  batch code and scored (`run_score` through `run_finalize`), marked as the reference run by the curator,
  then the adjudication cases it raises (`cases_sync`): one assigned to the adjudicator, one resolved by
  them, the rest open;
- a Label Studio batch read by the annotator and the adjudicator, with two readers' boxes on a task and a
  sync-log line (what a pull writes: Label Studio itself is not started);
- a shortcut audit, a built and published release, a fine-tuning job on the tiny VLM (queued, and a second
  one completed with its loss curve) and a model report generated, built and signed by the auditor.

Work a page would send to Celery is recorded instead of sent (`sent`): this test has no worker, and the
objects are built here directly by the same services the workers call.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from accounts.roles import Role

PASSWORD = "pw-Secret-123"      # the `make_user` fixture's password
# planted models whose behaviour is known (workers/backends/planted.py) and a blind baseline: a strong one, a
# cue follower, one that decays with the stage and one right with the wrong box, so the rules raise cases
MODELS = (("oracle", "oracle", {}, "Oracle (reads the gold)"),
          ("cue-follower", "cue_follower", {"p": 0.6, "accuracy": 0.7, "seed": 1}, "Cue follower"),
          ("stage-decay", "stage_decay", {"accuracies": [0.9, 0.7, 0.5, 0.3], "seed": 3}, "Stage decay"),
          ("box-shifter", "box_shifter", {"iou": 0.3, "seed": 4}, "Box shifter"),
          ("random-baseline", "random", {"seed": 2}, "Random baseline"))
REPORT_CRITERIA = [{"metric": "step_accuracy", "model": "*", "op": ">=", "threshold": 0.5},
                   {"metric": "chain_accuracy", "model": "oracle", "op": ">=", "threshold": 0.9, "on": "lo"}]


@dataclass
class World:
    """The ids the page list needs (keys of `ids`: see tests/e2e/pages.py) and what was sent to Celery."""

    users: dict
    ids: dict = field(default_factory=dict)
    sent: list = field(default_factory=list)
    took: dict = field(default_factory=dict)        # step -> seconds (printed by the test)


def make_users(make_user) -> dict:
    """One user per role, named after it (the names show in the screenshots' header)."""
    return {role: make_user(role, f"{role.value}") for role in Role}


def _record_sends(monkeypatch, sent: list) -> None:
    """Every Celery send goes through common.dispatch.send (docs/architecture.md): record it instead."""
    def fake_send(task, *args, **kwargs):
        sent.append((task.name, args))
        return True

    monkeypatch.setattr("common.dispatch.send", fake_send)


def build_world(*, users: dict, monkeypatch, settings, base_model_dir: Path, phantoms: int = 6) -> World:
    from common.signing import generate_signing_key

    world = World(users=users)
    _record_sends(monkeypatch, world.sent)
    settings.MEDR2_SIGNING_KEY = generate_signing_key()
    settings.MEDR2_RELEASE_SIGNING_KEY = ""
    steps = [("content", lambda: _content(world, phantoms)), ("evaluation", lambda: _evaluation(world)),
             ("cases", lambda: _cases(world)), ("annotation", lambda: _annotation(world)),
             ("validity", lambda: _validity(world)), ("release", lambda: _release(world)),
             ("finetune", lambda: _finetune(world, base_model_dir)), ("report", lambda: _report(world))]
    for name, step in steps:
        started = time.perf_counter()
        step()
        world.took[name] = time.perf_counter() - started
    return world


def _split_groups(splits: list[str]) -> list[str]:
    """One patient key per wanted split ("train", "val" or "test"), found by trying keys in order."""
    from annotation.splits import split_for_group

    out, k = [], 0
    for want in splits:
        while split_for_group(f"world-patient-{k}") != want:
            k += 1
        out.append(f"world-patient-{k}")
        k += 1
    return out


def _content(world: World, phantoms: int) -> None:
    from annotation.models import Image, ImportBatch, QAItem
    from annotation.services.chains import chains_generate
    from annotation.services.demo import PHANTOM_DATASET, demo_load
    from annotation.services.variants import variants_generate

    curator = world.users[Role.CURATOR]
    readers = [world.users[Role.ANNOTATOR].username, world.users[Role.ADJUDICATOR].username]
    demo_load(phantoms=phantoms, seed=0, actor=curator, assign_to=readers)
    images = list(Image.objects.filter(source_dataset=PHANTOM_DATASET).order_by("pk"))
    # patient groups chosen so every split has images whatever the deployment's de-identification salt is
    for image, group in zip(images, _split_groups(["test", "test", "val"] + ["train"] * (len(images) - 3))):
        Image.objects.filter(pk=image.pk).update(split_group=group)
    chains_generate(image_ids=[i.pk for i in images], actor=curator, seed=0)
    QAItem.objects.filter(is_current=True).update(status=QAItem.Status.APPROVED)
    variants_generate(items=list(QAItem.objects.filter(is_current=True).values_list("pk", flat=True)),
                      actor=curator, seed=0)
    # the last chain stays to be reviewed, as a curator finds new chains
    pending = images[-1].chains.order_by("pk").first()
    QAItem.objects.filter(chain=pending, is_current=True).update(status=QAItem.Status.DRAFT)
    item = (QAItem.objects.filter(is_current=True, status=QAItem.Status.APPROVED, category__answer_type="single_choice")
            .order_by("pk").first())
    series = Image.objects.exclude(source_dataset=PHANTOM_DATASET).filter(source_format="nifti").order_by("pk").first()
    world.ids.update(image=images[0].pk, series_image=(series or images[0]).pk, item=item.pk, chain=item.chain_id,
                     pending_chain=pending.pk, category=item.category.code,
                     import_batch=ImportBatch.objects.order_by("pk").first().pk)


def _evaluation(world: World) -> None:
    from django.utils import timezone

    from workers.models import EvaluationRun
    from workers.services.endpoints import endpoint_create
    from workers.services.execution import batch_execute
    from workers.services.runs import run_create, run_finalize

    curator = world.users[Role.CURATOR]
    endpoints = [endpoint_create(name=name, backend=backend, parameters=params, display_name=shown, actor=curator)
                 for name, backend, params, shown in MODELS]
    run = run_create(name="Phantom evaluation", endpoints=endpoints, actor=curator, split="all", batch_size=1000,
                     start=False)
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
    for batch_id in run.batches.order_by("pk").values_list("pk", flat=True):
        batch_execute(batch_id=batch_id)
    run_finalize(run_id=run.pk)
    world.ids["run"] = run.pk


def _cases(world: World) -> None:
    from adjudication.models import AdjudicationCase
    from adjudication.services import case_assign, case_verdict_submit, cases_sync
    from workers.models import EvaluationRun
    from workers.services.reference import run_set_reference

    # only a reference run opens cases: the curator marks it (the task this sends is recorded, not run)
    run = run_set_reference(run=EvaluationRun.objects.get(pk=world.ids["run"]), reference=True,
                            actor=world.users[Role.CURATOR], reason="the planted models the benchmark is audited with")
    cases_sync(run_ids=[run.pk], actor=world.users[Role.CURATOR])
    cases = list(AdjudicationCase.objects.filter(item__isnull=False).order_by("-priority", "pk"))
    assert len(cases) >= 3, f"the run raised {len(cases)} case(s); the pages need at least three"
    adjudicator, curator = world.users[Role.ADJUDICATOR], world.users[Role.CURATOR]
    resolved, assigned = cases[-1], cases[0]
    case_verdict_submit(case_id=resolved.pk, reader=adjudicator, verdict="confirmed",
                        expected_version=resolved.version, comment="The gold is right: the lesion is in the liver.",
                        time_spent_s=42.0)
    case_assign(case=AdjudicationCase.objects.get(pk=assigned.pk), readers=[adjudicator], actor=curator)
    world.ids.update(case=assigned.pk, resolved_case=resolved.pk)


def _annotation(world: World) -> None:
    from adjudication.models import AdjudicationCase
    from annotation.models import Image
    from annotation.services.demo import PHANTOM_DATASET
    from annotation.services.findings import finding_create
    from labelstudio.models import AnnotationBatch, AnnotationTask, LabelStudioAnnotation, SyncLogEntry
    from labelstudio.services import batch_create, task_refresh_agreement

    annotator, adjudicator = world.users[Role.ANNOTATOR], world.users[Role.ADJUDICATOR]
    # images without a case: a reader who drew boxes on an image may not adjudicate its cases
    with_cases = AdjudicationCase.objects.values("image_id")
    images = list(Image.objects.filter(source_dataset=PHANTOM_DATASET).exclude(pk__in=with_cases).order_by("pk")[:3])
    assert images, "every phantom has a case: add phantoms so a batch has images of its own"
    batch = batch_create(name="Liver lesion boxes", images=images, readers=[annotator, adjudicator],
                         maximum_annotations=2, actor=world.users[Role.CURATOR],
                         description="Draw a box around every liver lesion.")
    AnnotationBatch.objects.filter(pk=batch.pk).update(ls_project_id=3, status="pushed")
    task = batch.tasks.order_by("pk").first()
    AnnotationTask.objects.filter(pk=task.pk).update(ls_task_id=41)
    for n, (who, box) in enumerate([(annotator, (20, 30, 90, 110)), (adjudicator, (24, 30, 94, 110))]):
        LabelStudioAnnotation.objects.create(task=task, ls_annotation_id=100 + n, author=who, result=[],
                                             result_hash=f"h{n}", ls_user_email=who.email)
        finding = finding_create(image=task.image, kind="lesion", label="nodule", actor=None,
                                 source="label_studio", box=box)
        finding.boxes.update(ls_annotation_id=str(100 + n), ls_result_id=f"r{n}", author=who)
    task.refresh_from_db()
    task_refresh_agreement(task)
    SyncLogEntry.objects.create(batch=batch, direction="pull", level="warning", code="rotated",
                                message="result[2]: rotated boxes are not supported (rotation 30°)", ls_task_id=41)
    world.ids.update(ls_batch=batch.pk, ls_task=task.pk)


def _validity(world: World) -> None:
    from validity.services import shortcut_audit_run

    audit = shortcut_audit_run(filters={"status": "approved"}, split="test", actor=world.users[Role.CURATOR],
                               params={"seed": 0, "n_boot": 200})
    world.ids["shortcut_audit"] = audit.pk


def _release(world: World) -> None:
    from releases.services import release_build, release_create, release_publish

    admin = world.users[Role.ADMIN]
    release = release_create(actor=admin, title="Med-R2 phantom release", description="Approved phantom chains.")
    release = release_build(release_id=release.pk, actor=admin)
    release = release_publish(release=release, actor=admin)
    world.ids["release"] = release.pk


def _finetune(world: World, base_model_dir: Path) -> None:
    from finetune.models import FineTuneJob
    from finetune.services import job_create
    from releases.models import Release
    from workers.services.endpoints import endpoint_create

    curator = world.users[Role.CURATOR]
    base = endpoint_create(name="tiny-vlm", backend="transformers", display_name="Tiny VLM (random weights)",
                           parameters={"path": str(base_model_dir), "max_new_tokens": 8}, actor=curator)
    release = Release.objects.get(pk=world.ids["release"])
    queued = job_create(actor=curator, base_endpoint=base, recipe="stepwise", steps=20, seed=3, release=release,
                        config={"tokens_per_step": 256, "eval_every": 2})
    done = job_create(actor=curator, base_endpoint=base, recipe="mixed", steps=12, seed=1, release=release,
                      config={"tokens_per_step": 256, "eval_every": 2}, start=False)
    history = [{"step": s, "loss": round(2.6 * 0.9 ** s + 0.4, 4),
                **({"val_loss": round(2.7 * 0.92 ** s + 0.5, 4)} if s % 2 == 0 else {})} for s in range(1, 13)]
    FineTuneJob.objects.filter(pk=done.pk).update(
        status="completed", progress={"step": 12, "steps": 12, "loss": history[-1]["loss"], "val_loss": 1.2,
                                      "tokens": 3072, "tokens_per_s": 812.5, "eta_s": 0.0,
                                      "peak_rss_bytes": 900_000_000, "history": history})
    world.ids.update(job=queued.pk, done_job=done.pk, base_model=base.pk)


def _report(world: World) -> None:
    from releases.models import Release
    from reports.models import Meaning
    from reports.selectors import signed_copy_latest
    from reports.services import (
        report_create,
        report_generate,
        report_sign,
        report_version_build,
        signed_copy_build,
    )
    from workers.models import EvaluationRun

    auditor = world.users[Role.AUDITOR]
    report = report_create(actor=auditor, title="Phantom evaluation: board report",
                           runs=[EvaluationRun.objects.get(pk=world.ids["run"])],
                           release=Release.objects.get(pk=world.ids["release"]), criteria=REPORT_CRITERIA,
                           scope="Triage support, research use only.", limitations="Synthetic phantoms only.")
    version = report_generate(report=report, actor=auditor, queue=False)
    version = report_version_build(version_id=version.pk, actor=auditor)
    report_sign(version=version, user=auditor, password=PASSWORD, meaning=Meaning.AUTHOR)
    copy = signed_copy_latest(version=version)
    if copy is not None:
        signed_copy_build(copy_id=copy.pk)
    world.ids.update(report=report.pk, version=version.pk)
