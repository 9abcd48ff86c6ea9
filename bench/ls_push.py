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
    parser.add_argument("--profile", action="store_true", help="cProfile our push (cumulative top 25)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating bare/ours rounds; best of each")
    args = parser.parse_args()

    from labelstudio.server import LabelStudioServer, from_template

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

    from annotation.models import Finding, GroundingBox, Image
    from labelstudio.client import LabelStudioClient
    from labelstudio.models import AnnotationTask
    from labelstudio.services import batch_create, batch_label_config, batch_push, task_payloads

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

    label_config = None

    def bare_round(round_no: int) -> tuple[float, float]:
        """The same payloads, built beforehand, imported chunk by chunk with the SDK alone."""
        nonlocal label_config
        batch = batch_create(name=f"bench payloads {round_no}", images=images, actor=None)
        tasks = list(batch.tasks.select_related("image", "qa_item").order_by("pk"))
        label_config = label_config or batch_label_config(batch)
        t0 = time.perf_counter()
        payloads = task_payloads(tasks)
        build = time.perf_counter() - t0
        project = client.sdk.projects.create(title=f"bench bare {round_no}", label_config=label_config)
        t0 = time.perf_counter()
        for start in range(0, len(payloads), args.chunk):
            client.sdk.projects.import_tasks(id=project.id, request=payloads[start:start + args.chunk],
                                             return_task_ids=True)
        return time.perf_counter() - t0, build

    def our_round(round_no: int) -> float:
        """Batch push end to end: config, project, payloads with signed URLs and pre-annotations,
        import, id bookkeeping, audit."""
        batch = batch_create(name=f"bench push {round_no}", images=images, actor=None)
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
        t0 = time.perf_counter()
        result = batch_push(batch=batch, client=client)
        elapsed = time.perf_counter() - t0
        if args.profile:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        assert result.created == args.tasks
        assert AnnotationTask.objects.filter(batch=batch, ls_task_id__isnull=False).count() == args.tasks
        return elapsed

    # Label Studio's own database grows with every round, so alternate the order and keep the best
    bare_times, our_times, build = [], [], 0.0
    for round_no in range(args.rounds):
        if round_no % 2 == 0:
            t, build = bare_round(round_no)
            bare_times.append(t)
            our_times.append(our_round(round_no))
        else:
            our_times.append(our_round(round_no))
            t, build = bare_round(round_no)
            bare_times.append(t)
    bare, ours = min(bare_times), min(our_times)

    n = args.tasks
    print(f"Label Studio push, {n} tasks x {args.boxes} pre-annotated boxes, chunk {args.chunk}, {db}, "
          f"best of {args.rounds} alternating rounds")
    print(f"  bare SDK import_tasks : {bare:7.2f} s  {n / bare:8.1f} tasks/s")
    print(f"  Med-R2 batch push     : {ours:7.2f} s  {n / ours:8.1f} tasks/s")
    print(f"  ratio (ours / bare)   : {ours / bare:7.2f}x the time")
    print(f"  (building the payloads alone, signed URLs and pre-annotations: {build:.2f} s)")
    print(f"  peak RSS              : {peak_rss_mib():7.0f} MiB")


if __name__ == "__main__":
    main()
