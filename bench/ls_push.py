"""Push throughput to a real Label Studio: our batch push (payload building with signed image URLs
and pre-annotations, chunked import, id bookkeeping, audit) against a bare label-studio-sdk
`import_tasks` of the same task payloads, same chunk size, same server, in the same run.

    .venv/bin/python bench/ls_push.py --tasks 2000 [--boxes 3] [--chunk 500] [--postgres]

Each image carries --boxes active grounding boxes, so every task goes in with pre-annotations, as
in a real batch. Label Studio runs from its own virtualenv (./scripts/labelstudio.sh install) on a
copy of the migrated template data dir. Prints tasks/s for both and the ratio of times."""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _django import ROOT, peak_rss_mib, setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--boxes", type=int, default=3, help="active boxes per image (pre-annotations)")
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()

    from annotation.labelstudio.server import LabelStudioServer, from_template

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        db = setup_django(tmp, args.postgres)
        template = LabelStudioServer(data_dir=ROOT / "var" / "ls-template")
        server = from_template(template, tmp / "label-studio")
        server.start()
        try:
            run(args, server, db)
        finally:
            server.stop()


def run(args, server, db: str) -> None:
    from django.conf import settings

    from annotation.labelstudio.client import LabelStudioClient
    from annotation.models import AnnotationTask, Finding, GroundingBox, Image
    from annotation.services.labelstudio import batch_create, batch_label_config, batch_push, task_payloads

    settings.LABEL_STUDIO_URL, settings.LABEL_STUDIO_API_KEY = server.url, server.api_key
    settings.LABEL_STUDIO_PUSH_CHUNK = args.chunk
    images = Image.objects.bulk_create([
        Image(sha256=f"{n:064x}", file=f"bench/{n}.png", width=512, height=384, modality="CT",
              body_region="ABDOMEN", source_format="png") for n in range(args.tasks)], batch_size=2000)
    findings = Finding.objects.bulk_create([
        Finding(image=image, kind="lesion", label="cyst", source="phantom") for image in images
        for _ in range(args.boxes)], batch_size=5000)
    GroundingBox.objects.bulk_create([
        GroundingBox(finding=f, image_id=f.image_id, x0=10 + k % 7, y0=20, x1=60 + k % 7, y1=90, label="cyst",
                     source="phantom") for k, f in enumerate(findings)], batch_size=5000)
    client = LabelStudioClient(url=server.url, api_key=server.api_key, timeout_s=120)

    # bare: the same payloads, prepared beforehand, imported chunk by chunk with the SDK alone
    batch = batch_create(name="bench payloads", images=images, actor=None)
    tasks = list(batch.tasks.select_related("image", "qa_item").order_by("pk"))
    payloads = task_payloads(tasks)
    project = client.sdk.projects.create(title="bench bare", label_config=batch_label_config(batch))
    t0 = time.perf_counter()
    for start in range(0, len(payloads), args.chunk):
        client.sdk.projects.import_tasks(id=project.id, request=payloads[start:start + args.chunk],
                                         return_task_ids=True)
    bare = time.perf_counter() - t0

    # ours: batch push end to end (config, project, payloads with signed URLs and pre-annotations,
    # import, id bookkeeping, audit)
    batch = batch_create(name="bench push", images=images, actor=None)
    t0 = time.perf_counter()
    result = batch_push(batch=batch, client=client)
    ours = time.perf_counter() - t0
    assert result.created == args.tasks
    assert AnnotationTask.objects.filter(batch=batch, ls_task_id__isnull=False).count() == args.tasks

    n = args.tasks
    print(f"Label Studio push, {n} tasks x {args.boxes} pre-annotated boxes, chunk {args.chunk}, {db}")
    print(f"  bare SDK import_tasks : {bare:7.2f} s  {n / bare:8.1f} tasks/s")
    print(f"  Med-R2 batch push     : {ours:7.2f} s  {n / ours:8.1f} tasks/s")
    print(f"  ratio (ours / bare)   : {ours / bare:7.2f}x the time")
    print(f"  peak RSS              : {peak_rss_mib():7.0f} MiB")


if __name__ == "__main__":
    main()
