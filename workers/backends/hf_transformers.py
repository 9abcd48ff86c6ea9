"""``transformers`` backend: a local image-text-to-text model run in-process (GPU queue).

Loads through ``AutoProcessor`` / ``AutoModelForImageTextToText`` only (no model-name branches), so
LLaVA-style and Idefics3-style checkpoints both work. torch and transformers are imported lazily.
"""
from __future__ import annotations

import gc
import hashlib
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from .base import Backend, BackendError, GenerationRequest, GenerationResult, check_image, register_backend

logger = logging.getLogger(__name__)

_DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16", "half": "float16",
           "bfloat16": "bfloat16", "bf16": "bfloat16"}


def _short(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


@register_backend("transformers")
class TransformersBackend(Backend):
    """Batched greedy (or sampled) generation with a local Hugging Face VLM."""

    default_queue: ClassVar[str] = "gpu"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"path"})
    PARAMS: ClassVar[dict[str, Any]] = {
        "path": None, "dtype": "auto", "device": "auto", "max_new_tokens": 16, "batch_size": 8,
        "do_sample": False, "temperature": None, "system_prompt": None,
        "adapter": None,   # a peft LoRA adapter directory (a fine-tuned model, finetune/), merged at load
    }

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        p = self.params
        self.path = Path(str(p["path"])).expanduser()
        if not self.path.is_dir():
            raise BackendError(f"transformers: model directory {str(self.path)!r} does not exist")
        if not (self.path / "config.json").is_file():
            raise BackendError(f"transformers: {str(self.path)!r} has no config.json (not a saved model)")
        self.max_new_tokens = self._positive_int("max_new_tokens")
        self.batch_size = self._positive_int("batch_size")
        if not isinstance(p["do_sample"], bool):
            raise BackendError("transformers: do_sample must be true or false")
        self.do_sample: bool = p["do_sample"]
        temperature = p["temperature"]
        if temperature is not None and (not isinstance(temperature, (int, float)) or temperature <= 0):
            raise BackendError("transformers: temperature must be a positive number")
        self.temperature = None if temperature is None else float(temperature)
        self.system_prompt = p["system_prompt"] or None
        self.adapter = Path(str(p["adapter"])).expanduser() if p["adapter"] else None
        if self.adapter is not None and not (self.adapter / "adapter_config.json").is_file():
            raise BackendError(f"transformers: adapter directory {str(self.adapter)!r} has no adapter_config.json")

        import torch

        self._torch = torch
        self.device = self._resolve_device(str(p["device"]))
        self.dtype = self._resolve_dtype(str(p["dtype"]))
        self._lock = threading.Lock()
        t0 = time.perf_counter()
        self.processor, self.model = self._load()
        self.load_s = time.perf_counter() - t0

    # --- configuration ----------------------------------------------------------------------
    def _positive_int(self, key: str) -> int:
        value = self.params[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise BackendError(f"transformers: {key} must be a positive integer, got {value!r}")
        return value

    def _resolve_device(self, device: str) -> str:
        torch = self._torch
        if device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise BackendError(f"transformers: device {device!r} requested but CUDA is not available")
        try:
            torch.device(device)
        except (RuntimeError, ValueError) as exc:
            raise BackendError(f"transformers: invalid device {device!r}") from exc
        return device

    def _resolve_dtype(self, dtype: str) -> Any:
        torch = self._torch
        if dtype == "auto":
            if self.device.startswith("cuda"):
                return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
            return torch.float32
        if dtype not in _DTYPES:
            known = ", ".join(sorted(set(_DTYPES.values())))
            raise BackendError(f"transformers: unknown dtype {dtype!r}; use auto, {known}")
        return getattr(torch, _DTYPES[dtype])

    def _load(self) -> tuple[Any, Any]:
        from transformers import AutoModelForImageTextToText, AutoProcessor

        try:
            processor = AutoProcessor.from_pretrained(str(self.path), local_files_only=True)
            model = AutoModelForImageTextToText.from_pretrained(str(self.path), local_files_only=True, dtype=self.dtype)
        except Exception as exc:  # any load failure is a configuration problem for the caller
            raise BackendError(f"transformers: cannot load model from {str(self.path)!r}: {_short(exc)}") from exc
        if self.adapter is not None:
            model = self._merge_adapter(model)
        model.to(self.device)
        model.eval()
        tokenizer = getattr(processor, "tokenizer", None)
        if tokenizer is None:
            raise BackendError(f"transformers: processor {type(processor).__name__} has no tokenizer")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        if getattr(model.generation_config, "pad_token_id", None) is None:
            model.generation_config.pad_token_id = tokenizer.pad_token_id
        import torch

        logger.info("transformers: loaded %s from %s on %s (%s, %d torch threads)", type(model).__name__, self.path,
                    self.device, str(self.dtype).replace("torch.", ""), torch.get_num_threads())
        return processor, model

    def _merge_adapter(self, model: Any) -> Any:
        """The LoRA adapter folded into the base weights: generation then costs what the base model costs."""
        try:
            from peft import PeftModel

            return PeftModel.from_pretrained(model, str(self.adapter), local_files_only=True).merge_and_unload()
        except Exception as exc:  # a wrong or corrupt adapter is a configuration problem
            raise BackendError(f"transformers: cannot apply adapter {str(self.adapter)!r}: {_short(exc)}") from exc

    # --- generation -------------------------------------------------------------------------
    def _prompt_text(self, request: GenerationRequest) -> str:
        content: list[dict[str, Any]] = []
        if request.image is not None:
            content.append({"type": "image"})
        content.append({"type": "text", "text": request.prompt})
        messages: list[dict[str, Any]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": [{"type": "text", "text": self.system_prompt}]})
        messages.append({"role": "user", "content": content})
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def _encode(self, texts: list[str], images: list[Any] | None) -> Any:
        kwargs: dict[str, Any] = {"text": texts, "return_tensors": "pt", "padding": True}
        if images is not None:
            kwargs["images"] = [[image] for image in images]
        return self.processor(**kwargs)

    def _eos_ids(self) -> set[int]:
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.processor.tokenizer.eos_token_id
        if eos is None:
            return set()
        return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])}

    def _generate_encoded(self, encoded: Any) -> tuple[list[str], list[int], list[int]]:
        torch = self._torch
        encoded = encoded.to(self.device)
        if "pixel_values" in encoded and encoded["pixel_values"].is_floating_point():
            encoded["pixel_values"] = encoded["pixel_values"].to(self.dtype)
        gen_kwargs: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "do_sample": self.do_sample,
                                      "pad_token_id": self.processor.tokenizer.pad_token_id}
        if self.do_sample and self.temperature is not None:
            gen_kwargs["temperature"] = self.temperature
        with torch.inference_mode():
            output = self.model.generate(**encoded, **gen_kwargs)
        input_len = encoded["input_ids"].shape[1]
        new_tokens = output[:, input_len:].tolist()
        eos_ids = self._eos_ids()
        counts = []
        for row in new_tokens:
            stop = next((i for i, tok in enumerate(row) if tok in eos_ids), None)
            counts.append(len(row) if stop is None else stop + 1)
        texts = self.processor.batch_decode(output[:, input_len:], skip_special_tokens=True)
        tokens_in = [int(v) for v in encoded["attention_mask"].sum(dim=1).tolist()]
        return [t.strip() for t in texts], tokens_in, counts

    def _run_group(self, items: list[tuple[int, GenerationRequest]], results: list[GenerationResult],
                   with_images: bool) -> None:
        """Preprocess and generate one chunk; failures are isolated to the requests that cause them."""
        t0 = time.perf_counter()
        texts: dict[int, str] = {}
        images: dict[int, Any] = {}
        for index, request in items:
            try:
                if with_images:
                    images[index] = check_image(request.image)
                texts[index] = self._prompt_text(request)
            except Exception as exc:  # noqa: BLE001 - one bad request must not sink the batch
                results[index].error = f"preprocessing failed: {_short(exc)}"
        good = [i for i, _ in items if i in texts]

        def encode(indices: list[int]) -> Any:
            return self._encode([texts[i] for i in indices], [images[i] for i in indices] if with_images else None)

        encoded = None
        if good:
            try:
                encoded = encode(good)
            except Exception:  # noqa: BLE001 - find the culprit(s) one by one
                survivors = []
                for i in good:
                    try:
                        encode([i])
                        survivors.append(i)
                    except Exception as exc:  # noqa: BLE001
                        results[i].error = f"preprocessing failed: {_short(exc)}"
                good = survivors
                encoded = encode(good) if good else None
        if encoded is not None:
            try:
                outputs = list(zip(*self._generate_encoded(encoded)))
            except Exception as exc:  # noqa: BLE001
                if len(good) == 1:
                    results[good[0]].error = f"generation failed: {_short(exc)}"
                    outputs = []
                    good = []
                else:
                    self._free_cache()
                    by_index = dict(items)
                    for i in good:  # retry alone so one bad request cannot fail its neighbours
                        self._run_group([(i, by_index[i])], results, with_images)
                    return
            for i, (text, n_in, n_out) in zip(good, outputs):
                results[i].text, results[i].tokens_in, results[i].tokens_out = text, n_in, n_out
        latency = (time.perf_counter() - t0) * 1000.0 / max(len(items), 1)
        for index, _ in items:
            results[index].latency_ms = latency

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Answer ``requests`` in chunks of ``batch_size`` (image and text-only requests batched apart)."""
        results = [GenerationResult(key=r.key) for r in requests]
        with self._lock:
            if self.model is None:
                raise BackendError("transformers: backend is closed")
            for with_images in (True, False):
                group = [(i, r) for i, r in enumerate(requests) if (r.image is not None) == with_images]
                for start in range(0, len(group), self.batch_size):
                    self._run_group(group[start:start + self.batch_size], results, with_images)
        return results

    # --- lifecycle --------------------------------------------------------------------------
    def _free_cache(self) -> None:
        gc.collect()
        if self.device.startswith("cuda"):
            self._torch.cuda.empty_cache()

    def close(self) -> None:
        """Drop the model and processor and release GPU memory."""
        with self._lock:
            if self.model is None:
                return
            self.model = None
            self.processor = None
            self._free_cache()

    def describe(self) -> dict:
        """Provenance facts: resolved device/dtype, classes, parameter count, config hash."""
        import torch
        import transformers

        facts: dict[str, Any] = super().describe()
        facts.update({
            "path": str(self.path), "device": self.device, "dtype": str(self.dtype).replace("torch.", ""),
            "max_new_tokens": self.max_new_tokens, "batch_size": self.batch_size, "do_sample": self.do_sample,
            "temperature": self.temperature, "system_prompt": self.system_prompt,
            "transformers_version": transformers.__version__, "torch_version": torch.__version__,
            "torch_threads": torch.get_num_threads(),
            "config_sha256": hashlib.sha256((self.path / "config.json").read_bytes()).hexdigest(),
            "weight_files": {f.name: f.stat().st_size for f in sorted(self.path.glob("*.safetensors"))},
        })
        if self.adapter is not None:
            facts["adapter"] = str(self.adapter)
            facts["adapter_sha256"] = {f.name: hashlib.sha256(f.read_bytes()).hexdigest()
                                       for f in sorted(self.adapter.glob("adapter_*"))}
        if self.model is not None:
            facts.update({
                "model_class": type(self.model).__name__,
                "model_type": getattr(self.model.config, "model_type", None),
                "processor_class": type(self.processor).__name__,
                "image_processor_class": type(getattr(self.processor, "image_processor", None)).__name__,
                "tokenizer_class": type(self.processor.tokenizer).__name__,
                "parameters": int(sum(p.numel() for p in self.model.parameters())),
                "load_s": round(self.load_s, 3),
            })
        return facts

