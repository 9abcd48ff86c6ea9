"""The experiment of docs/finetuning.md, at the scale one CPU machine allows: does stepwise fine-tuning
beat answer-only fine-tuning at an equal token budget, on clean and adversarial variants?

1. A tiny LLaVA-style VLM is built offline (random weights) and pre-trained - every weight - on the
   release's train split, S1/S2 items only, answers alone, until it answers perception and detection
   questions above chance (checked on the test split against the random baseline).
2. That pre-trained model is the base of one fine-tuning job per recipe and seed (equal budget: the same
   steps of the same number of tokens), each run through the platform's own job path.
3. One evaluation run scores the base, the random baseline and every fine-tuned model on the test split's
   clean and adversarial variants; `finetune.comparison.model_comparison` gives the paired comparison.

Nothing here is tuned towards a result: the settings are fixed before the run and recorded with it.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from annotation.models import QAItem
from workers.models import ModelEndpoint
from workers.services.endpoints import endpoint_create, endpoint_update
from workers.services.runs import run_create
from workers.tiny_vlm import build_tiny_vlm

from .comparison import model_comparison
from .core.recipes import build_examples
from .core.trainer import TrainConfig, train
from .selectors import items_by_split, training_chains
from .services import job_create, job_execute

# A model this small does not learn to bind option letters to option texts from a few thousand examples
# (pre-trained on letters it answered S1/S2 at chance, always "B"), so every training here writes choice
# answers as the option text, which the answer parser scores exactly like the letter.
ANSWER_STYLE = "text"
# the kinds one CPU can evaluate for 8 models in minutes: the cue-following kinds (a hint, a wrong visual cue)
# and the false-premise pair; the rest (permutations, ablations, dose-response, ...) with --kinds ""
EXPERIMENT_KINDS = ("clean", "misleading_hint", "wrong_visual_cue", "false_premise", "true_premise")
MODEL_SIZE = {"hidden_size": 128, "num_layers": 3, "num_heads": 4, "vision_hidden_size": 64, "vision_layers": 2,
              "image_size": 64, "patch_size": 8}


def _endpoint(name: str, backend: str, parameters: dict, display: str) -> ModelEndpoint:
    found = ModelEndpoint.objects.filter(name=name).first()
    if found is None:
        return endpoint_create(name=name, backend=backend, parameters=parameters, actor=None, display_name=display)
    return endpoint_update(endpoint=found, actor=None, parameters=parameters, display_name=display)


def _s1_s2(chains):
    return [c.__class__(c.chain_id, c.image, tuple(s for s in c.steps if s.stage <= 2)) for c in chains]


def pretrain(*, release, out: Path, steps: int, tokens_per_step: int, say: Callable[[str], None]) -> Path:
    """Every weight of a fresh tiny VLM trained on S1/S2 train items (answers alone); returns the model dir."""
    model_dir = out / "pretrained" / "model"
    if (model_dir / "config.json").is_file():
        say(f"pre-trained model found in {model_dir}")
        return model_dir
    random_dir = build_tiny_vlm(out / "tiny-random", seed=0, **MODEL_SIZE)
    splits = items_by_split(release=release)
    train_chains, _ = training_chains(splits["train"])
    val_chains, _ = training_chains(splits["val"])
    train_set = build_examples("answer_only", _s1_s2(train_chains), ANSWER_STYLE)
    val_set = build_examples("answer_only", _s1_s2(val_chains), ANSWER_STYLE)
    say(f"pre-training on {len(train_set)} S1/S2 train examples ({len(val_set)} val), {steps} steps")
    cfg = TrainConfig(steps=steps, tokens_per_step=tokens_per_step, full=True, lr=1e-3, warmup_steps=steps // 20,
                      eval_every=max(steps // 10, 1), checkpoint_every=max(steps // 10, 1), micro_batch=16, seed=0)
    result = train(random_dir, train_set, val_set, cfg, out / "pretrained",
                   progress=lambda e: say(f"  pre-train step {e['step']}/{e['steps']} loss {e['loss']:.3f}"
                                          + (f" val {e['val_loss']:.3f}" if "val_loss" in e else ""))
                   if e["step"] % max(steps // 20, 1) == 0 else None)
    say(f"pre-trained: best val loss {result.best_val_loss} at step {result.best_step}")
    return Path(result.output)


def run_experiment(*, release, out: str | Path, pretrain_steps: int = 3000, steps: int = 300,
                   seeds: Sequence[int] = (0, 1, 2), recipes: Sequence[str] = ("stepwise", "answer_only"),
                   tokens_per_step: int = 1024, kinds: Sequence[str] = (),
                   say: Callable[[str], None] = print) -> dict:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    base_dir = pretrain(release=release, out=out, steps=pretrain_steps, tokens_per_step=tokens_per_step, say=say)
    base = _endpoint("tiny-pretrained", "transformers", {"path": str(base_dir), "max_new_tokens": 16,
                                                         "batch_size": 128},
                     "Tiny VLM (pre-trained on phantoms)")
    random_baseline = _endpoint("random-baseline", "random", {}, "Random baseline")
    config = {"tokens_per_step": tokens_per_step, "lr": 2e-3, "warmup_steps": steps // 20,
              "eval_every": max(steps // 10, 1), "patience": 0, "checkpoint_every": max(steps // 10, 1),
              "micro_batch": 16, "answer_style": ANSWER_STYLE}
    check = pretraining_check(base=base, baseline=random_baseline, release=release)
    say(f"pre-training check (S1/S2, clean, test): {check}")
    jobs = []
    for recipe in recipes:
        for seed in seeds:
            job = job_create(actor=None, base_endpoint=base, recipe=recipe, steps=steps, release=release, seed=seed,
                             config=config, name=f"experiment {recipe} seed {seed}", start=False,
                             evaluate_after=False)   # one run below evaluates them all together
            say(f"job {job.pk}: {recipe}, seed {seed}")
            job = job_execute(job_id=job.pk)
            say(f"  {job.status}: {job.result}")
            jobs.append(job)
    test_ids = items_by_split(release=release)["test"]
    models = [base, random_baseline] + [j.result_endpoint for j in jobs if j.result_endpoint]
    run = run_create(name=f"fine-tuning experiment ({len(jobs)} jobs)", endpoints=models, actor=None,
                     item_filters={"item_ids": test_ids}, variant_kinds=list(kinds), split="test", batch_size=256)
    run.refresh_from_db()
    say(f"evaluation run {run.pk}: {run.status}")
    comparison = model_comparison(run=run)
    contrasts = recipe_contrasts(run=run, jobs=jobs, recipes=recipes)
    record = {"release": str(release), "settings": {"pretrain_steps": pretrain_steps, "steps": steps,
                                                   "seeds": list(seeds), "recipes": list(recipes),
                                                   "kinds": list(kinds) or "all",
                                                   "model": MODEL_SIZE, "finetune_config": config},
              "jobs": [{"pk": j.pk, "recipe": j.recipe, "seed": j.seed, "status": j.status, "result": j.result,
                        "data": j.data, "endpoint": j.result_endpoint.name if j.result_endpoint else None}
                       for j in jobs],
              "pretraining_check": check, "run": run.pk,
              "test_items": QAItem.objects.filter(pk__in=test_ids).count(), "comparison": comparison,
              "contrasts": contrasts}
    (out / "results.json").write_text(json.dumps(record, indent=2, default=str))
    return record


def pretraining_check(*, base: ModelEndpoint, baseline: ModelEndpoint, release) -> dict:
    """Does the pre-trained base answer S1/S2 above chance? Base and random baseline on the clean S1/S2 test
    items in one run: each one's accuracy and the paired difference (bootstrap by patient, McNemar)."""
    test_ids = items_by_split(release=release)["test"]
    run = run_create(name="pre-training check: S1/S2 clean, test", endpoints=[base, baseline], actor=None,
                     item_filters={"item_ids": test_ids, "stage": ["S1", "S2"]}, variant_kinds=["clean"],
                     split="test", batch_size=256)
    run.refresh_from_db()
    metrics = run.metrics or {}
    models = metrics.get("models") or {}
    accuracy = {name: (models.get(str(e.pk)) or {}).get("step_accuracy")
                for name, e in (("base", base), ("random", baseline))}
    pair = next(iter(metrics.get("comparisons") or []), None) or {}
    sign = -1 if pair.get("endpoint_b") == base.pk else 1    # the stored difference is a - b
    boot = pair.get("bootstrap") or {}
    difference = None
    if boot and boot.get("diff") is not None:
        bounds = (boot.get("lo"), boot.get("hi"))
        low, high = sorted(sign * b for b in bounds) if None not in bounds else (None, None)
        difference = {"value": sign * boot["diff"], "lo": low, "hi": high, "p_value": boot.get("p_value"),
                      "mcnemar_p": (pair.get("mcnemar") or {}).get("p_value")}
    return {"run": run.pk, "accuracy": accuracy, "base_minus_random": difference}


def recipe_contrasts(*, run, jobs, recipes: Sequence[str] = ("stepwise", "answer_only")) -> list[dict]:
    """Per seed, the second recipe's model against the first's (stepwise - answer_only by default) in the same
    run: every metric's paired difference with its clustered interval (`model_comparison` with the first
    recipe's model as the base)."""
    if len(recipes) < 2:
        return []
    first, second = recipes[1], recipes[0]
    by_key = {(j.recipe, j.seed): j.result_endpoint for j in jobs if j.result_endpoint}
    out = []
    for seed in sorted({j.seed for j in jobs}):
        a, b = by_key.get((first, seed)), by_key.get((second, seed))
        if a is None or b is None:
            continue
        pair = model_comparison(run=run, endpoints=[a.name, b.name])
        out.append({"seed": seed, "base": a.name, "model": b.name,
                    "differences": pair["pairwise"][0]["differences"]})
    return out
