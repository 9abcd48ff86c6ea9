"""Deterministic baselines: ``random`` (chance level), ``prior`` (most frequent gold answer) and ``null``.

Answer formats match what the models are asked for: a letter ("B") for single_choice / yes_no, letters
joined by ", " ("A, C") for multi_choice, "[x0, y0, x1, y1]" for box (pixels of ``image_size``; 0-1 units
with three decimals when the size is unknown) and free text for short_text.
"""
from __future__ import annotations

import abc
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from .base import (
    ANSWER_TYPES,
    Backend,
    BackendError,
    GenerationRequest,
    GenerationResult,
    format_box,
    option_letter,
    option_letters,
    register_backend,
)

UNKNOWN_TEXT = "unknown"


def _n_options(request: GenerationRequest) -> int:
    """Number of options shown; without options, 2 for yes_no and 4 otherwise."""
    if request.options:
        return len(request.options)
    return 2 if request.answer_type == "yes_no" else 4


def _scale_box(box: Sequence[float], image_size: tuple[int, int] | None) -> str:
    """Scale a 0-1 box to pixels of ``image_size`` (clamped, ordered); keep 0-1 units without a size."""
    x0, y0, x1, y1 = (min(max(float(v), 0.0), 1.0) for v in box)
    x0, x1 = sorted((x0, x1))
    y0, y1 = sorted((y0, y1))
    if image_size is None:
        return format_box([round(v, 3) for v in (x0, y0, x1, y1)])
    width, height = image_size
    return format_box([round(x0 * width), round(y0 * height), round(x1 * width), round(y1 * height)])


class _BaselineBackend(Backend):
    """Shared loop: answer each request with :meth:`answer`; unknown answer types become item errors."""

    uses_image = False

    @abc.abstractmethod
    def answer(self, request: GenerationRequest) -> str:
        """The answer text for one request."""

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """One answer per request, never raising for a single request."""
        results = []
        for request in requests:
            t0 = time.perf_counter()
            result = GenerationResult(key=request.key)
            try:
                if request.answer_type not in ANSWER_TYPES:
                    raise ValueError(f"unknown answer_type {request.answer_type!r}")
                result.text = self.answer(request)
            except Exception as exc:  # noqa: BLE001 - one bad request must not sink the batch
                result.text, result.error = "", f"{type(exc).__name__}: {exc}"
            result.latency_ms = (time.perf_counter() - t0) * 1000.0
            results.append(result)
        return results

    def describe(self) -> dict:
        """Backend name, class and (JSON-safe) parameters."""
        return {**super().describe(), "params": dict(self.params)}


@register_backend("random")
class RandomBackend(_BaselineBackend):
    """Uniformly random answers; the RNG of each request is seeded from (seed, key)."""

    is_baseline = True

    PARAMS: ClassVar[dict[str, Any]] = {"seed": 0}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        seed = self.params["seed"]
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise BackendError(f"random: seed must be an integer, got {seed!r}")
        self.seed = seed

    def rng(self, key: int) -> random.Random:
        """The RNG for one request (string seeds hash with SHA-512: stable across processes)."""
        return random.Random(f"medr2-random:{self.seed}:{key}")

    def answer(self, request: GenerationRequest) -> str:
        """A random answer of the requested type."""
        rng = self.rng(request.key)
        kind = request.answer_type
        if kind in ("single_choice", "yes_no"):
            return option_letter(rng.randrange(_n_options(request)))
        if kind == "multi_choice":
            letters = option_letters(_n_options(request))
            size = rng.randint(1, len(letters))
            return ", ".join(sorted(rng.sample(letters, size), key=letters.index))
        if kind == "box":
            if request.image_size is None:
                xs = sorted(rng.random() for _ in range(2))
                ys = sorted(rng.random() for _ in range(2))
                return _scale_box([xs[0], ys[0], xs[1], ys[1]], None)
            width, height = request.image_size
            x0, x1 = sorted(rng.randint(0, max(width, 0)) for _ in range(2))
            y0, y1 = sorted(rng.randint(0, max(height, 0)) for _ in range(2))
            return format_box([x0, y0, x1, y1])
        return rng.choice(request.options) if request.options else UNKNOWN_TEXT


def _validate_table(table: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(table, Mapping):
        raise BackendError("prior: table must be a dict of category code -> {text, letter, box}")
    clean: dict[str, dict[str, Any]] = {}
    for code, entry in table.items():
        if not isinstance(entry, Mapping):
            raise BackendError(f"prior: table entry for {code!r} must be a dict")
        extra = sorted(set(entry) - {"text", "letter", "box"})
        if extra:
            raise BackendError(f"prior: table entry for {code!r} has unknown key(s) {', '.join(extra)}")
        text, letter, box = entry.get("text"), entry.get("letter"), entry.get("box")
        if text is not None and not isinstance(text, str):
            raise BackendError(f"prior: table[{code!r}].text must be a string or null")
        if letter is not None and not (isinstance(letter, str) and letter.isalpha() and letter.isupper()):
            raise BackendError(f"prior: table[{code!r}].letter must be an upper-case letter or null")
        if box is not None and not (isinstance(box, (list, tuple)) and len(box) == 4
                                    and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in box)):
            raise BackendError(f"prior: table[{code!r}].box must be [x0, y0, x1, y1] in 0-1 units or null")
        clean[str(code)] = {"text": text, "letter": letter, "box": list(box) if box is not None else None}
    return clean


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


@register_backend("prior")
class PriorBackend(_BaselineBackend):
    """Answers with the most frequent gold answer of the request's category (table fitted elsewhere)."""

    is_baseline = True

    PARAMS: ClassVar[dict[str, Any]] = {"table": {}, "default_letter": "A", "fitted_split": None}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.table = _validate_table(self.params["table"])
        if self.params["fitted_split"] not in (None, "train", "val", "test"):
            raise BackendError("prior: fitted_split must be train, val, test or null, "
                               f"got {self.params['fitted_split']!r}")
        default = self.params["default_letter"]
        if not (isinstance(default, str) and default.isalpha() and default.isupper()):
            raise BackendError(f"prior: default_letter must be an upper-case letter, got {default!r}")
        self.default_letter = default

    def choice_letter(self, request: GenerationRequest) -> str:
        """Letter of the table text among the shown options, else the table letter, else default_letter."""
        entry = self.table.get(request.category, {})
        text = entry.get("text")
        if text is not None:
            wanted = _norm(text)
            for index, option in enumerate(request.options):
                if _norm(option) == wanted:
                    return option_letter(index)
        letter = entry.get("letter")
        if letter and (not request.options or letter in option_letters(len(request.options))):
            return letter
        return self.default_letter

    def answer(self, request: GenerationRequest) -> str:
        """The prior answer of the requested type."""
        entry = self.table.get(request.category, {})
        if request.answer_type == "box":
            return _scale_box(entry.get("box") or [0.0, 0.0, 1.0, 1.0], request.image_size)
        if request.answer_type == "short_text":
            return entry.get("text") or UNKNOWN_TEXT
        return self.choice_letter(request)


@register_backend("null")
class NullBackend(_BaselineBackend):
    """Instant constant answers, for benchmarking the platform itself."""

    is_baseline = True

    ANSWERS: ClassVar[dict[str, str]] = {"single_choice": "A", "yes_no": "A", "multi_choice": "A",
                                         "box": "[0, 0, 1, 1]", "short_text": UNKNOWN_TEXT}

    def answer(self, request: GenerationRequest) -> str:
        """The constant answer for the requested type."""
        return self.ANSWERS[request.answer_type]

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Constant answers with zero latency."""
        results = super().generate(requests)
        for result in results:
            result.latency_ms = 0.0
        return results
