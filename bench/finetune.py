#!/usr/bin/env python
"""Fine-tuning throughput: a LoRA job through a real Celery worker against a bare peft loop on the same data.

    .venv/bin/python bench/finetune.py --repeat 3       # answer_only, 100 phantoms, hidden 256, 4 layers, 60 steps
    .venv/bin/python bench/finetune.py --profile        # and then the job's code path in-process under cProfile
    .venv/bin/python bench/finetune.py --recipe stepwise --tokens-per-step 2048 --micro-batch 8 --steps 20

Set-up (untimed): a fresh PostgreSQL database `medr2_bench_ft`; N phantom DICOMs imported through the
pipeline with their ground truth, chains, every item approved, clean variants; a random-init LLaVA
(`build_tiny_vlm`) and its `transformers` endpoint. The endpoint's queue is `cpu`, which no worker here
consumes: the job still creates its paired evaluation run, but that run is never executed.

Platform: `celery -A medr2 worker -Q gpu --concurrency=1` (imports warmed by a 1-step job first);
`job_create(start=True)` (the recipe, eval_every 0, the job's default checkpoint interval) and wait until
it completes. tokens/s = result["tokens"] / (finished_at - started_at): the data read from the database,
encoding, model load, the loop, checkpoints, progress writes, the adapter saved and hashed, the endpoint
registered. Peak RSS: the worker's pool process, polled (and the trainer's own reading).

Bare: a subprocess (its memory measured alone) with transformers + peft + torch: the same examples
encoded by `ExampleEncoder`, the same steps (`DataStream`), LoRA config, micro-batches, learning-rate
schedule, clipping and AdamW; no checkpoints, progress or evaluation. Token ids and pixels are prepared
once before the loop, each image decoded once; timed: the loop (model load and encoding printed beside).

Both sides run one after the other (never together) with the same torch threads (default 1: on a shared
2-vCPU machine, 2 OpenMP threads per process slowed runs of the same work by 5-25x whenever anything else
ran); with --repeat they alternate and the best of each is compared. Per-step losses of the two are
compared as a check that they trained the same thing on the same data.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DB = "medr2_bench_ft"
BROKER = "redis://127.0.0.1:6379/13"


# ---------------------------------------------------------------- the bare loop (a subprocess)

def bare_child(spec_path: str) -> None:
    """Train with transformers + peft + torch alone; print one RESULT line of JSON."""
    import resource

    spec = json.loads(Path(spec_path).read_text())
    import torch

    torch.set_num_threads(spec["threads"])
    from peft import LoraConfig, get_peft_model
    from PIL import Image
    from torch.nn.utils.rnn import pad_sequence
    from transformers import AutoModelForImageTextToText, AutoProcessor

    sys.path.insert(0, str(ROOT))
    from finetune.core.encoding import IGNORE, ExampleEncoder
    from finetune.core.recipes import Example
    from finetune.core.trainer import DataStream, TrainConfig, lr_at

    cfg = TrainConfig(**spec["config"])
    t0 = time.perf_counter()
    processor = AutoProcessor.from_pretrained(spec["model"], local_files_only=True)
    model = AutoModelForImageTextToText.from_pretrained(spec["model"], local_files_only=True, dtype=torch.float32)
    t_load = time.perf_counter() - t0

    t0 = time.perf_counter()
    encoder = ExampleEncoder(processor, max_length=cfg.max_length, system_prompt=cfg.system_prompt)
    examples = [Example(image=x["image"], turns=tuple(tuple(t) for t in x["turns"]), source=x["source"])
                for x in spec["examples"]]
    encoded = [e for e in map(encoder.encode, examples) if e is not None]
    ids = [torch.tensor(e.input_ids) for e in encoded]
    # labels shifted left once (the loss needs no shifted copy of the logits)
    labels = [torch.tensor(e.labels[1:] + (IGNORE,)) for e in encoded]
    lengths = [e.tokens for e in encoded]
    supervised = [e.supervised for e in encoded]
    decoded: dict[str, dict] = {}
    for e in encoded:
        if e.image not in decoded:
            with Image.open(e.image) as im:
                out = processor.image_processor([im.convert("RGB")], return_tensors="pt")
            decoded[e.image] = {k: v for k, v in out.items() if hasattr(v, "to")}
    pixels = [decoded[e.image] for e in encoded]
    t_prep = time.perf_counter() - t0

    torch.manual_seed(cfg.seed)
    model = get_peft_model(model, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                                             target_modules=list(cfg.target_modules), bias="none"))
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    stream = DataStream(lengths, cfg.seed)
    pad = processor.tokenizer.pad_token_id or 0
    model.train()

    def micro_loss(batch: list[int], denominator: int):
        input_ids = pad_sequence([ids[i] for i in batch], batch_first=True, padding_value=pad)
        target = pad_sequence([labels[i] for i in batch], batch_first=True, padding_value=IGNORE)
        width = torch.tensor([lengths[i] for i in batch])
        mask = (torch.arange(input_ids.shape[1])[None, :] < width[:, None]).long()
        extra = {k: torch.cat([pixels[i][k] for i in batch]) for k in pixels[batch[0]]}
        logits = model(input_ids=input_ids, attention_mask=mask, **extra).logits
        return torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), target.view(-1),
                                                 ignore_index=IGNORE, reduction="sum") / denominator

    # warm-up, untimed (the worker has run a job before): one forward and backward, then the gradients
    # dropped; weights, optimizer state, RNG and data order untouched
    micro_loss(list(range(min(cfg.micro_batch, len(encoded)))), 1).backward()
    optimizer.zero_grad(set_to_none=True)
    losses, tokens = [], 0
    t0, cpu0 = time.perf_counter(), time.process_time()
    for step in range(cfg.steps):
        chosen = stream.take(cfg.tokens_per_step)
        denominator = max(sum(supervised[i] for i in chosen), 1)
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg)
        optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for s in range(0, len(chosen), cfg.micro_batch):
            loss = micro_loss(chosen[s:s + cfg.micro_batch], denominator)
            loss.backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        tokens += sum(lengths[i] for i in chosen)
        losses.append(total)
    t_loop, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    print("RESULT " + json.dumps({
        "load_s": t_load, "prep_s": t_prep, "loop_s": t_loop, "cpu_s": cpu, "tokens": tokens, "steps": cfg.steps,
        "examples": len(encoded), "losses": losses, "threads": torch.get_num_threads(),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}), flush=True)


def run_bare(spec_path: Path) -> dict:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--bare-child", str(spec_path)],
                         cwd=ROOT, capture_output=True, text=True, env=os.environ.copy())
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"bare loop failed (rc {out.returncode}):\n{out.stderr[-3000:]}")


# ---------------------------------------------------------------- set-up

def setup(args, tmp: Path) -> None:
    """Environment for this process and the worker, a fresh database, Django configured and migrated."""
    import psycopg

    threads = str(args.threads)
    os.environ.update({
        "MEDR2_DEBUG": "0", "SECRET_KEY": os.environ.get("SECRET_KEY", "medr2-benchmark-only"),
        "MEDR2_VAR_DIR": str(tmp / "var"), "MEDR2_STORAGE_ROOT": str(tmp / "storage"),
        "MEDR2_FINETUNE_ROOT": str(tmp / "finetune"), "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB}",
        "CELERY_BROKER_URL": BROKER, "CELERY_TASK_ALWAYS_EAGER": "false", "DJANGO_SETTINGS_MODULE": "medr2.settings",
        "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
        "TOKENIZERS_PARALLELISM": "false"})
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB}")
        conn.execute(f"CREATE DATABASE {DB}")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def make_content(args, tmp: Path) -> dict:
    """Phantoms imported with their ground truth, chains, every item approved, the recipe's variants."""
    from annotation.models import QAItem
    from annotation.phantoms import write_phantoms
    from annotation.services.chains import chains_generate
    from annotation.services.demo import PHANTOM_DATASET, PHANTOM_LICENSE, _ground_truth_findings
    from annotation.services.images import BytesSource, ImportDefaults, images_import
    from annotation.services.variants import variants_generate

    paths = write_phantoms(tmp / "phantoms", args.images, seed=11)
    truths = {p.name: json.loads(p.with_suffix(".json").read_text()) for p in paths}
    batch = images_import(sources=[BytesSource(p.name, p.read_bytes()) for p in paths], actor=None,
                          defaults=ImportDefaults(source_dataset=PHANTOM_DATASET, license=PHANTOM_LICENSE))
    for result in batch.files.order_by("id"):
        for image in result.images.all():
            _ground_truth_findings(image, truths[result.name], None)
    chains_generate(image_ids=list(batch.images.values_list("pk", flat=True)), actor=None, seed=0)
    QAItem.objects.filter(is_current=True).update(status=QAItem.Status.APPROVED)
    kinds = None if args.recipe == "mixed" else ["clean"]
    variants_generate(items=list(QAItem.objects.filter(is_current=True).values_list("pk", flat=True)), actor=None,
                      seed=0, kinds=kinds)
    return {"images": batch.images.count(), "items": QAItem.objects.filter(is_current=True).count()}


def train_examples(endpoint, recipe: str, answer_style: str) -> tuple[list, dict[str, int]]:
    """The job's training examples, built as `finetune.services._examples` builds them with eval off."""
    from finetune.core.recipes import build_examples
    from finetune.selectors import items_by_split, training_chains

    splits = items_by_split(item_filters={})
    chains, _ = training_chains(splits["train"], prompt_template=endpoint.prompt_template,
                                with_variants=recipe == "mixed")
    return build_examples(recipe, chains, answer_style), {k: len(v) for k, v in splits.items()}


# ---------------------------------------------------------------- the platform

def start_worker(log: Path) -> subprocess.Popen:
    from eval_throughput import flush_broker, start_worker as start

    flush_broker()
    return start("gpu", 1, log)


def pool_rss(proc) -> int:
    """RSS of the worker's pool process (its child: where the job runs)."""
    import psutil

    total = 0
    for child in proc.children(recursive=True):
        try:
            total = max(total, child.memory_info().rss)
        except psutil.Error:
            pass
    return total


def pool_cpu(proc) -> float:
    """CPU seconds (user + system, every thread) used so far by the worker's pool process."""
    return sum(sum(c.cpu_times()[:2]) for c in proc.children(recursive=True))


def run_job(args, endpoint, steps: int, worker_pid: int) -> dict:
    """Create the job (sent to the gpu queue on commit), wait for it, return its timings and memory."""
    import psutil

    from finetune.models import FineTuneJob
    from finetune.services import job_create

    proc = psutil.Process(worker_pid)
    cpu0, t0 = pool_cpu(proc), time.perf_counter()
    job = job_create(actor=None, base_endpoint=endpoint, recipe=args.recipe, steps=steps, seed=args.seed,
                     config=job_config(args), start=True)
    peak = 0
    deadline = time.monotonic() + args.timeout
    while True:
        peak = max(peak, pool_rss(proc))
        status = FineTuneJob.objects.filter(pk=job.pk).values_list("status", flat=True).get()
        if status not in (FineTuneJob.Status.PENDING, FineTuneJob.Status.RUNNING):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job.pk} still {status} after {args.timeout} s")
        time.sleep(0.5)
    seen_s, cpu = time.perf_counter() - t0, pool_cpu(proc) - cpu0
    job.refresh_from_db()
    if job.status != FineTuneJob.Status.COMPLETED:
        raise RuntimeError(f"job {job.pk} {job.status}: {job.error}")
    wall = (job.finished_at - job.started_at).total_seconds()
    history = [p["loss"] for p in (job.progress or {}).get("history", [])]
    return {"job": job.pk, "wall_s": wall, "seen_s": seen_s, "cpu_s": cpu, "tokens": job.result["tokens"],
            "train_s": job.result["train_seconds"], "loop_tokens_per_s": job.result["tokens_per_s"],
            "polled_rss_bytes": peak, "trainer_rss_bytes": job.result["peak_rss_bytes"], "losses": history,
            "examples": job.data["train"]["examples"]}


def job_config(args) -> dict:
    config = {"tokens_per_step": args.tokens_per_step, "micro_batch": args.micro_batch, "eval_every": 0,
              "patience": 0}
    if args.checkpoint_every is not None:
        config["checkpoint_every"] = args.checkpoint_every
    return config


# ---------------------------------------------------------------- profile of the worker's path

PROFILED = [  # (label, file suffix, function): cumulative times from the job's profile
    ("job_execute (the task's whole body)", "finetune/services.py", "job_execute"),
    ("  data from the database (_examples)", "finetune/services.py", "_examples"),
    ("  model load (load_base)", "finetune/core/trainer.py", "load_base"),
    ("  encoding (ExampleEncoder.encode)", "finetune/core/encoding.py", "encode"),
    ("  LoRA wrap (get_peft_model)", "peft/mapping_func.py", "get_peft_model"),
    ("  training steps (_train_step)", "finetune/core/trainer.py", "_train_step"),
    ("    images decoded + processed (_pixels)", "finetune/core/trainer.py", "_pixels"),
    ("    batch tensors (_tensors, pixels included)", "finetune/core/trainer.py", "_tensors"),
    ("    forward + loss (_loss_sum)", "finetune/core/trainer.py", "_loss_sum"),
    ("    backward", "torch/_tensor.py", "backward"),
    ("    AdamW step", "torch/optim/adamw.py", "adamw"),
    ("    clip_grad_norm_", "torch/nn/utils/clip_grad.py", "clip_grad_norm_"),
    ("  checkpoints (_save_checkpoint)", "finetune/core/trainer.py", "_save_checkpoint"),
    ("  progress callback (writes)", "finetune/services.py", "progress"),
    ("  cancel checks (should_stop)", "finetune/services.py", "should_stop"),
    ("  peak RSS reads (_rss)", "finetune/core/trainer.py", "_rss"),
    ("  adapter saved (save_pretrained)", "peft/peft_model.py", "save_pretrained"),
    ("  job_complete (hashes, endpoint, run)", "finetune/services.py", "job_complete"),
]


def profile_job(args, endpoint, steps: int, out: Path) -> None:
    """The worker's code path (job_execute) in this process under cProfile; the costs that matter."""
    import cProfile
    import pstats

    import torch

    from finetune.services import job_create, job_execute

    torch.set_num_threads(args.threads)
    job = job_create(actor=None, base_endpoint=endpoint, recipe=args.recipe, steps=steps, seed=args.seed,
                     config=job_config(args), start=False)
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.runcall(job_execute, job_id=job.pk)
    total = time.perf_counter() - t0
    profiler.dump_stats(str(out))
    stats = pstats.Stats(str(out))
    by_name: dict[tuple[str, str], float] = {}
    for (filename, _, func), (_, _, _, cum, _) in stats.stats.items():
        for _, suffix, name in PROFILED:
            if func == name and filename.endswith(suffix):
                by_name[(suffix, name)] = max(by_name.get((suffix, name), 0.0), cum)
    print(f"\nProfile of the worker's path (job_execute in this process, {steps} steps, {total:.1f} s "
          f"under cProfile; {out}):")
    for label, suffix, name in PROFILED:
        if (suffix, name) in by_name:
            cum = by_name[(suffix, name)]
            print(f"  {label:<48} {cum:7.2f} s {100 * cum / total:5.1f} % {1000 * cum / steps:8.1f} ms/step")
    stats.sort_stats("tottime").print_stats(15)


# ---------------------------------------------------------------- main

def mib(n: float) -> str:
    return f"{n / 2**20:,.0f}"


def report(args, setup_info: dict, bare: list[dict], platform: list[dict], cold: dict) -> None:
    best_bare = min(bare, key=lambda r: r["loop_s"])
    best = min(platform, key=lambda r: r["wall_s"])
    bare_rate = best_bare["tokens"] / best_bare["loop_s"]
    rate = best["tokens"] / best["wall_s"]
    loop_rate = best["tokens"] / best["train_s"]
    diffs = [abs(a - b) for a, b in zip(best["losses"], best_bare["losses"])]
    print(f"\nFine-tuning throughput: {args.recipe}, {setup_info['model']}; {setup_info['examples']} train "
          f"examples from {setup_info['images']} phantoms ({setup_info['splits']}); {args.steps} steps of "
          f"{args.tokens_per_step} tokens, micro-batches of {args.micro_batch}; torch threads {args.threads} "
          f"(bare: {best_bare['threads']}); best of {len(bare)} per side")
    runs = "; ".join(f"{b['loop_s']:.1f} / {p['train_s']:.1f} / {p['wall_s']:.1f} ({mib(p['polled_rss_bytes'])} MiB)"
                     for b, p in zip(bare, platform))
    print(f"  rounds, bare loop / platform loop / platform wall, s (worker RSS): {runs}")
    cpu_bare = best_bare["tokens"] / best_bare["cpu_s"]
    cpu_best = min(platform, key=lambda r: r["cpu_s"])
    cpu_rate = cpu_best["tokens"] / cpu_best["cpu_s"]
    rows = [
        ("bare peft loop (load + encode not timed)", bare_rate, best_bare["loop_s"], best_bare["cpu_s"],
         best_bare["peak_rss_bytes"], "1"),
        ("platform: job wall, started -> finished", rate, best["wall_s"], best["cpu_s"],
         max(best["polled_rss_bytes"], best["trainer_rss_bytes"]), f"{rate / bare_rate:.2f}"),
        ("platform: its training loop alone (result)", loop_rate, best["train_s"], None, None,
         f"{loop_rate / bare_rate:.2f}"),
    ]
    print(f"\n  {'':<44} {'tokens/s':>9} {'wall s':>7} {'CPU s':>7} {'peak RSS MiB':>13} {'vs bare':>8}")
    for label, r, s, cpu, rss, ratio in rows:
        print(f"  {label:<44} {r:9,.0f} {s:7.1f} {f'{cpu:.1f}' if cpu else '':>7} "
              f"{mib(rss) if rss else '':>13} {ratio:>8}")
    print(f"  tokens per CPU-second (every thread; inflates with the machine's load too): bare {cpu_bare:,.0f}, "
          f"platform {cpu_rate:,.0f} = {cpu_rate / cpu_bare:.2f}")
    med_bare, med = statistics.median(r["loop_s"] for r in bare), statistics.median(r["wall_s"] for r in platform)
    pairs = ", ".join(f"{b['loop_s'] / p['wall_s']:.2f}" for b, p in zip(bare, platform))
    print(f"\n  ratio platform / bare: {rate / bare_rate:.2f} best of each (target >= 0.90); "
          f"medians {med_bare / med:.2f}; round by round {pairs}")
    print(f"  bare set-up, not timed: model load {best_bare['load_s']:.2f} s, encode + pixels "
          f"{best_bare['prep_s']:.2f} s; end to end (load + encode + loop) the ratio would be "
          f"{rate * (best_bare['load_s'] + best_bare['prep_s'] + best_bare['loop_s']) / best_bare['tokens']:.2f}")
    print(f"  platform: outside the loop {best['wall_s'] - best['train_s']:.1f} s of {best['wall_s']:.1f} s; "
          f"dispatch -> seen completed {best['seen_s']:.1f} s; worker RSS polled {mib(best['polled_rss_bytes'])} "
          f"MiB, trainer's own {mib(best['trainer_rss_bytes'])} MiB")
    print(f"  first job on the fresh worker (1 step, imports): {cold['wall_s']:.1f} s wall")
    same = best["tokens"] == best_bare["tokens"] and best["examples"] == best_bare["examples"]
    print(f"  same data: {'yes' if same else 'NO'} ({best['tokens']} vs {best_bare['tokens']} tokens, "
          f"{best['examples']} vs {best_bare['examples']} examples); per-step loss max |diff| "
          f"{max(diffs) if diffs else float('nan'):.2e} over {len(diffs)} steps; last loss "
          f"{best['losses'][-1] if best['losses'] else float('nan'):.4f} vs {best_bare['losses'][-1]:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=100, help="phantom images (about 3/4 in the train split)")
    parser.add_argument("--hidden-size", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--tokens-per-step", type=int, default=512)
    parser.add_argument("--micro-batch", type=int, default=2)
    parser.add_argument("--checkpoint-every", type=int, default=None, help="default: the job's default")
    parser.add_argument("--recipe", default="answer_only", choices=["stepwise", "answer_only", "mixed"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads on both sides (see docs)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per side, alternated; the best of each")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds to wait for one job")
    parser.add_argument("--profile", action="store_true", help="then profile the job's path in-process")
    parser.add_argument("--bare-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_child:
        return bare_child(args.bare_child)
    sys.path.insert(0, str(BENCH))
    with tempfile.TemporaryDirectory(prefix="medr2-bench-ft-") as tmp_name:
        tmp = Path(tmp_name)
        t0 = time.perf_counter()
        setup(args, tmp)
        from eval_throughput import flush_broker, stop_worker

        from finetune.services import resolve_config
        from workers.services.endpoints import endpoint_create
        from workers.tiny_vlm import build_tiny_vlm, describe_tiny_vlm

        content = make_content(args, tmp)
        model_dir = build_tiny_vlm(tmp / "vlm", hidden_size=args.hidden_size, num_layers=args.layers, num_heads=8,
                                   image_size=args.image_size, seed=0)
        endpoint = endpoint_create(name="tiny-base", backend="transformers", actor=None, queue="cpu",
                                   parameters={"path": str(model_dir), "max_new_tokens": 8})
        config = resolve_config(steps=args.steps, seed=args.seed, config=job_config(args))
        examples, splits = train_examples(endpoint, args.recipe, config.get("answer_style", "letter"))
        spec = tmp / "bare.json"
        spec.write_text(json.dumps({"model": str(model_dir), "threads": args.threads, "config": config,
                                    "examples": [{"image": e.image, "turns": e.turns, "source": e.source}
                                                 for e in examples]}))
        params = describe_tiny_vlm(model_dir).get("parameters", "?")
        info = {"model": f"tiny LLaVA hidden {args.hidden_size}, {args.layers} layers, image {args.image_size} px, "
                         f"{params} parameters",
                "examples": len(examples), "images": content["images"], "splits": splits}
        print(f"set-up {time.perf_counter() - t0:.0f} s (untimed): {content['images']} images, {content['items']} "
              f"items (per split {splits}), {len(examples)} {args.recipe} train examples; checkpoint every "
              f"{config['checkpoint_every']} steps", flush=True)

        worker = start_worker(Path(tempfile.gettempdir()) / "medr2-bench-finetune-worker.log")
        bare, platform = [], []
        try:
            cold = run_job(args, endpoint, 1, worker.pid)
            for r in range(args.repeat):
                bare.append(run_bare(spec))
                print(f"  round {r + 1}: bare loop {bare[-1]['loop_s']:.1f} s", end="", flush=True)
                platform.append(run_job(args, endpoint, args.steps, worker.pid))
                print(f", platform job {platform[-1]['wall_s']:.1f} s", flush=True)
        finally:
            stop_worker(worker)
            flush_broker()
        report(args, info, bare, platform, cold)
        if args.profile:
            profile_job(args, endpoint, args.steps, tmp.parent / "medr2-bench-finetune.prof")


if __name__ == "__main__":
    main()
