"""The training loop: LoRA adapters through peft (or every weight, for pre-training), seeded, with
gradient accumulation, evaluation on the val split, early stopping, and checkpoints that resume.

Determinism: the data order is a pure function of (seed, epoch) - each epoch a permutation drawn by
`numpy.random.default_rng([seed, epoch])` - and a step takes examples from that stream until it holds
`tokens_per_step` tokens, in micro-batches of at most `micro_batch` examples whose gradients accumulate
into one optimizer step (the loss is the mean over the step's supervised tokens, whatever the split into
micro-batches). The learning rate is a function of the step. A checkpoint holds the trainable weights,
the optimizer state, the torch RNG state, the data cursor and the history; a run resumed from it (after a
killed worker) takes the same steps on the same data as one that never stopped.

Checkpoints are written to `checkpoint.tmp/` and renamed over `checkpoint/` (the previous one kept as
`checkpoint.old/` until the rename is done), so a kill at any moment leaves one whole checkpoint.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .encoding import IGNORE, Encoded, ExampleEncoder
from .recipes import Example

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "linear_1", "linear_2", "lm_head")
CHECKPOINT, CHECKPOINT_TMP, CHECKPOINT_OLD = "checkpoint", "checkpoint.tmp", "checkpoint.old"


class TrainingError(RuntimeError):
    """Training cannot start or go on (bad model directory, no examples, ...)."""


class Cancelled(Exception):  # noqa: N818 - a control-flow signal, not an error
    """`should_stop` asked to stop; the last checkpoint is on disk."""


@dataclass
class TrainConfig:
    steps: int
    tokens_per_step: int = 2048
    micro_batch: int = 8
    lr: float = 1e-3
    weight_decay: float = 0.0
    warmup_steps: int = 0
    seed: int = 0
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    target_modules: Sequence[str] = DEFAULT_TARGETS
    full: bool = False                   # train every weight (pre-training); no adapter
    eval_every: int = 0                  # 0: no evaluation on the val split
    eval_max_examples: int = 256
    patience: int = 0                    # evaluations without improvement before stopping; 0: never stop early
    checkpoint_every: int = 25
    max_length: int = 1024
    device: str = "auto"
    system_prompt: str | None = None
    answer_style: str = "letter"         # how the recipes write choice answers (finetune.core.recipes)

    def __post_init__(self) -> None:
        for key in ("steps", "tokens_per_step", "micro_batch", "lora_r", "lora_alpha", "max_length"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TrainingError(f"{key} must be a positive integer, got {value!r}")
        for key in ("eval_every", "patience", "checkpoint_every", "warmup_steps", "seed"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TrainingError(f"{key} must be a non-negative integer, got {value!r}")
        if not (isinstance(self.lr, (int, float)) and self.lr > 0):
            raise TrainingError(f"lr must be a positive number, got {self.lr!r}")
        if self.answer_style not in ("letter", "text"):
            raise TrainingError(f"answer_style must be letter or text, got {self.answer_style!r}")
        self.target_modules = list(self.target_modules)
        if not self.full and not self.target_modules:
            raise TrainingError("LoRA needs at least one target module")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TrainResult:
    status: str                          # "completed" or "stopped_early"
    steps: int
    tokens: int
    train_seconds: float
    tokens_per_s: float
    history: list[dict] = field(default_factory=list)
    best_val_loss: float | None = None
    best_step: int | None = None
    output: str = ""                     # the adapter (LoRA) or model (full) directory
    peak_rss_bytes: int = 0
    peak_gpu_bytes: int | None = None
    resumed_from: int = 0


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up, then cosine decay to a tenth of `lr` at the last step."""
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(cfg.steps - cfg.warmup_steps, 1)
    progress = min(max(step - cfg.warmup_steps, 0) / span, 1.0)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


class DataStream:
    """The seeded example order; `take(tokens)` returns the next step's example indices.

    A step stops at the example that reaches its budget, so it may run over by part of an example; the next
    step's budget is cut by that much (`carry`), so after k steps the tokens taken are k x budget to within one
    example, whatever the recipe's sequence lengths - equal budgets stay equal."""

    def __init__(self, lengths: Sequence[int], seed: int, epoch: int = 0, position: int = 0, carry: int = 0) -> None:
        if not lengths:
            raise TrainingError("no training examples")
        self.lengths, self.seed, self.epoch, self.position = list(lengths), seed, epoch, position
        self.carry = carry
        self._order = self._permutation(epoch)

    def _permutation(self, epoch: int) -> list[int]:
        import numpy as np

        return np.random.default_rng([self.seed, epoch]).permutation(len(self.lengths)).tolist()

    def take(self, tokens: int) -> list[int]:
        picked, total, target = [], 0, tokens - self.carry
        while total < target or not picked:
            if self.position >= len(self._order):
                self.epoch, self.position = self.epoch + 1, 0
                self._order = self._permutation(self.epoch)
            index = self._order[self.position]
            self.position += 1
            picked.append(index)
            total += self.lengths[index]
        self.carry = total - target
        return picked

    def cursor(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position, "carry": self.carry}


def _device(name: str, torch: Any) -> str:
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def load_base(base_dir: str | Path, device: str = "auto") -> tuple[Any, Any]:
    """(processor, model) from a local directory, or TrainingError saying why not."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    path = Path(base_dir)
    if not path.is_dir() or not (path / "config.json").is_file():
        raise TrainingError(f"{str(path)!r} is not a saved model directory (no config.json)")
    try:
        processor = AutoProcessor.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForImageTextToText.from_pretrained(str(path), local_files_only=True, dtype=torch.float32)
    except Exception as exc:  # any load failure is a configuration problem
        raise TrainingError(f"cannot load a vision-language model from {str(path)!r}: {type(exc).__name__}: "
                            f"{str(exc)[:300]}") from exc
    if getattr(processor, "tokenizer", None) is None or getattr(processor, "image_processor", None) is None:
        raise TrainingError(f"{str(path)!r}: the processor has no tokenizer and image processor (not a VLM)")
    return processor, model.to(_device(device, torch))


class Trainer:
    """One training run into `out_dir`; `run()` resumes from `out_dir/checkpoint` when there is one."""

    def __init__(self, base_dir: str | Path, train: Sequence[Example], val: Sequence[Example], cfg: TrainConfig,
                 out_dir: str | Path, *, progress: Callable[[dict], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> None:
        import torch

        self.torch, self.cfg, self.out = torch, cfg, Path(out_dir)
        self.progress, self.should_stop = progress or (lambda _: None), should_stop or (lambda: False)
        self.processor, model = load_base(base_dir, cfg.device)
        self.device = str(next(model.parameters()).device)
        encoder = ExampleEncoder(self.processor, max_length=cfg.max_length, system_prompt=cfg.system_prompt)
        self.train_set = [e for e in (encoder.encode(x) for x in train) if e is not None]
        val = val[: cfg.eval_max_examples] if cfg.eval_every else []     # not encoded when never evaluated
        self.val_set = [e for e in (encoder.encode(x) for x in val) if e is not None]
        if not self.train_set:
            raise TrainingError("no training example fits in max_length tokens")
        torch.manual_seed(cfg.seed)
        if cfg.full:
            self.model = model
        else:
            from peft import LoraConfig, get_peft_model

            lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                              target_modules=list(cfg.target_modules), bias="none")
            try:
                self.model = get_peft_model(model, lora)
            except ValueError as exc:
                raise TrainingError(f"LoRA targets {list(cfg.target_modules)}: {exc}") from exc
        self.params = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW([p for _, p in self.params], lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.stream = DataStream([e.tokens for e in self.train_set], cfg.seed)
        self.step, self.tokens, self.history = 0, 0, []
        self.best: tuple[float, int] | None = None
        self.best_state: dict[str, Any] | None = None
        self.bad_evals, self.resumed_from, self.train_seconds, self.seconds_before = 0, 0, 0.0, 0.0
        self.peak_rss = 0
        self.finished: str | None = None

    # --- batches ------------------------------------------------------------------------------
    def _pixels(self, batch: Sequence[Encoded]) -> dict[str, Any]:
        from PIL import Image

        images = []
        for e in batch:
            with Image.open(e.image) as im:
                images.append(im.convert("RGB"))
        out = self.processor.image_processor(images, return_tensors="pt")
        return {k: v.to(self.device) for k, v in out.items() if hasattr(v, "to")}

    def _tensors(self, batch: Sequence[Encoded]) -> dict[str, Any]:
        torch = self.torch
        pad = self.processor.tokenizer.pad_token_id or 0
        width = max(e.tokens for e in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        labels = torch.full((len(batch), width), IGNORE, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, e in enumerate(batch):
            ids[row, : e.tokens] = torch.tensor(e.input_ids)
            labels[row, : e.tokens] = torch.tensor(e.labels)
            mask[row, : e.tokens] = 1
        return {"input_ids": ids.to(self.device), "attention_mask": mask.to(self.device),
                "labels": labels.to(self.device), **self._pixels(batch)}

    def _loss_sum(self, batch: Sequence[Encoded]) -> Any:
        torch = self.torch
        inputs = self._tensors(batch)
        labels = inputs.pop("labels")
        logits = self.model(**inputs).logits[:, :-1].float()
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                                                 ignore_index=IGNORE, reduction="sum")

    def _micro_batches(self, indices: Sequence[int]) -> list[list[Encoded]]:
        chosen = [self.train_set[i] for i in indices]
        return [chosen[i:i + self.cfg.micro_batch] for i in range(0, len(chosen), self.cfg.micro_batch)]

    # --- checkpoints --------------------------------------------------------------------------
    def _trainable(self) -> dict[str, Any]:
        return {n: p.detach().to("cpu").clone().contiguous() for n, p in self.params}

    def _save_checkpoint(self) -> None:
        from safetensors.torch import save_file

        tmp, final, old = self.out / CHECKPOINT_TMP, self.out / CHECKPOINT, self.out / CHECKPOINT_OLD
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        save_file(self._trainable(), str(tmp / "trainable.safetensors"))
        if self.best_state is not None:
            save_file(self.best_state, str(tmp / "best.safetensors"))
        self.torch.save({"optimizer": self.optimizer.state_dict(), "rng": self.torch.get_rng_state()},
                        tmp / "trainer_state.pt")
        state = {"step": self.step, "tokens": self.tokens, "cursor": self.stream.cursor(), "history": self.history,
                 "best": list(self.best) if self.best else None, "bad_evals": self.bad_evals,
                 "train_seconds": self.train_seconds, "finished": self.finished, "config": self.cfg.as_dict()}
        (tmp / "state.json").write_text(json.dumps(state))
        for f in tmp.iterdir():
            with open(f, "rb") as handle:
                os.fsync(handle.fileno())
        if final.exists():
            shutil.rmtree(old, ignore_errors=True)
            final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old, ignore_errors=True)

    def _load_checkpoint(self) -> bool:
        from safetensors.torch import load_file

        final, old = self.out / CHECKPOINT, self.out / CHECKPOINT_OLD
        found = final if (final / "state.json").is_file() else old if (old / "state.json").is_file() else None
        if found is None:
            return False
        state = json.loads((found / "state.json").read_text())
        weights = load_file(str(found / "trainable.safetensors"))
        with self.torch.no_grad():
            for name, param in self.params:
                param.copy_(weights[name].to(param.device))
        saved = self.torch.load(found / "trainer_state.pt", weights_only=False)
        self.optimizer.load_state_dict(saved["optimizer"])
        self.torch.set_rng_state(saved["rng"])
        if (found / "best.safetensors").is_file():
            self.best_state = load_file(str(found / "best.safetensors"))
        self.step, self.tokens, self.history = state["step"], state["tokens"], state["history"]
        self.best = tuple(state["best"]) if state["best"] else None
        self.bad_evals, self.train_seconds = state["bad_evals"], state["train_seconds"]
        self.finished = state.get("finished")
        self.stream = DataStream([e.tokens for e in self.train_set], self.cfg.seed, **state["cursor"])
        self.resumed_from, self.seconds_before = self.step, self.train_seconds
        return True

    # --- the loop -----------------------------------------------------------------------------
    def _evaluate(self) -> float:
        torch = self.torch
        self.model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for start in range(0, len(self.val_set), self.cfg.micro_batch):
                batch = self.val_set[start:start + self.cfg.micro_batch]
                total += float(self._loss_sum(batch))
                count += sum(e.supervised for e in batch)
        self.model.train()
        return total / max(count, 1)

    def _rss(self) -> int:
        try:
            import psutil

            self.peak_rss = max(self.peak_rss, psutil.Process().memory_info().rss)
        except ImportError:  # pragma: no cover - psutil is a requirement
            pass
        return self.peak_rss

    def _train_step(self) -> float:
        torch = self.torch
        indices = self.stream.take(self.cfg.tokens_per_step)
        batches = self._micro_batches(indices)
        supervised = max(sum(e.supervised for b in batches for e in b), 1)
        for group in self.optimizer.param_groups:
            group["lr"] = lr_at(self.step, self.cfg)
        self.optimizer.zero_grad(set_to_none=True)
        loss_total = 0.0
        for batch in batches:
            loss = self._loss_sum(batch) / supervised
            loss.backward()
            loss_total += float(loss.detach())
        torch.nn.utils.clip_grad_norm_([p for _, p in self.params], 1.0)
        self.optimizer.step()
        self.tokens += sum(e.tokens for b in batches for e in b)
        return loss_total

    def run(self) -> TrainResult:
        self.out.mkdir(parents=True, exist_ok=True)
        self._load_checkpoint()
        self.model.train()
        cfg, stopped_early = self.cfg, self.finished == "stopped_early"
        while self.step < cfg.steps and not stopped_early and not self.finished:
            if self.should_stop():
                self._save_checkpoint()
                raise Cancelled(f"stopped at step {self.step}")
            t0 = time.perf_counter()
            loss = self._train_step()
            self.train_seconds += time.perf_counter() - t0
            self.step += 1
            entry: dict[str, Any] = {"step": self.step, "loss": round(loss, 6), "tokens": self.tokens,
                                     "lr": lr_at(self.step - 1, cfg)}
            if cfg.eval_every and self.val_set and (self.step % cfg.eval_every == 0 or self.step == cfg.steps):
                val = self._evaluate()
                entry["val_loss"] = round(val, 6)
                if self.best is None or val < self.best[0] - 1e-6:
                    self.best, self.bad_evals, self.best_state = (val, self.step), 0, self._trainable()
                else:
                    self.bad_evals += 1
                    stopped_early = bool(cfg.patience) and self.bad_evals >= cfg.patience
            self.history.append(entry)
            rate = self.tokens / self.train_seconds if self.train_seconds else 0.0
            per_step = (self.train_seconds - self.seconds_before) / max(self.step - self.resumed_from, 1)
            self.progress({**entry, "steps": cfg.steps, "tokens_per_s": rate,
                           "eta_s": per_step * (cfg.steps - self.step), "peak_rss_bytes": self._rss()})
            if cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0 and self.step < cfg.steps:
                self._save_checkpoint()
        return self._finish(stopped_early)

    def _finish(self, stopped_early: bool) -> TrainResult:
        torch = self.torch
        if self.best_state is not None:
            with torch.no_grad():
                for name, param in self.params:
                    param.copy_(self.best_state[name].to(param.device))
        self.finished = "stopped_early" if stopped_early else "completed"
        target = self.out / ("model" if self.cfg.full else "adapter")
        shutil.rmtree(target, ignore_errors=True)
        if self.cfg.full:
            self.model.save_pretrained(str(target))
        else:   # the adapter alone: a LoRA-wrapped lm_head leaves the base's own weights unchanged, not copied
            self.model.save_pretrained(str(target), save_embedding_layers=False)
        if self.cfg.full:
            self.processor.save_pretrained(str(target))
        self._save_checkpoint()   # the finished state: a redelivered task finds nothing left to do
        gpu = torch.cuda.max_memory_allocated() if self.device.startswith("cuda") else None
        return TrainResult(
            status=self.finished, steps=self.step, tokens=self.tokens,
            train_seconds=self.train_seconds,
            tokens_per_s=self.tokens / self.train_seconds if self.train_seconds else 0.0,
            history=self.history, best_val_loss=self.best[0] if self.best else None,
            best_step=self.best[1] if self.best else None, output=str(target), peak_rss_bytes=self._rss(),
            peak_gpu_bytes=gpu, resumed_from=self.resumed_from)


def train(base_dir: str | Path, train: Sequence[Example], val: Sequence[Example], cfg: TrainConfig,
          out_dir: str | Path, **callbacks: Any) -> TrainResult:
    """Train (or resume) into `out_dir`; see `Trainer`."""
    return Trainer(base_dir, train, val, cfg, out_dir, **callbacks).run()
