"""Backend contract: requests, results, errors, the registry and a small per-process LRU of loaded backends.

Pure Python: no Django imports, so worker processes and scripts can use it directly.
"""
from __future__ import annotations

import abc
import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # pragma: no cover
    from PIL import Image

logger = logging.getLogger(__name__)

ANSWER_TYPES: tuple[str, ...] = ("single_choice", "yes_no", "multi_choice", "box", "short_text")
CHOICE_TYPES: frozenset[str] = frozenset({"single_choice", "yes_no", "multi_choice"})
CACHE_SIZE_ENV = "MEDR2_MODEL_CACHE_SIZE"
DEFAULT_CACHE_SIZE = 2


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt (plus optional RGB image) to answer.

    ``truth`` is set only for backends with ``needs_truth`` (planted-behaviour models, which answer from
    the variant's own record): {"kind", "params", "expected", "stage", "options", "item"}. Real models
    never receive it. Left out of repr and comparisons.
    """

    key: int
    prompt: str
    image: Image.Image | None
    answer_type: str = "single_choice"
    options: tuple[str, ...] = ()
    category: str = ""
    image_size: tuple[int, int] | None = None
    truth: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)


@dataclass
class GenerationResult:
    """The answer to one request; ``error`` is non-empty (and ``text`` empty) when that request failed."""

    key: int
    text: str = ""
    error: str = ""
    latency_ms: float = 0.0
    tokens_in: int | None = None
    tokens_out: int | None = None

    @property
    def ok(self) -> bool:
        """True when the request succeeded."""
        return not self.error


class BackendError(Exception):
    """Bad configuration (missing model directory, unknown parameter, ...)."""


class BackendUnavailable(BackendError):
    """Transient whole-batch failure (server down after all retries): retry the batch later."""


class UnknownBackendError(BackendError, KeyError):
    """No backend registered under that name (also a ``KeyError``)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def option_letter(index: int) -> str:
    """Letter for the option at ``index``: 0 -> "A", 25 -> "Z", 26 -> "AA"."""
    if index < 0:
        raise ValueError("option index must be >= 0")
    letters = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        letters = chr(ord("A") + rem) + letters
    return letters


def option_letters(count: int) -> list[str]:
    """The first ``count`` option letters."""
    return [option_letter(i) for i in range(count)]


def format_box(box: Sequence[float]) -> str:
    """Format a box as "[x0, y0, x1, y1]" (integers stay integers)."""
    parts = [str(int(v)) if float(v).is_integer() else f"{float(v):.3f}".rstrip("0") for v in box]
    return "[" + ", ".join(parts) + "]"


def check_image(image: Any) -> Any:
    """Return an RGB PIL image, or raise TypeError / ValueError saying why the image is unusable."""
    from PIL import Image

    if not isinstance(image, Image.Image):
        raise TypeError(f"image is not a PIL image ({type(image).__name__})")
    width, height = image.size
    if width <= 0 or height <= 0:
        raise ValueError(f"image is empty ({width}x{height})")
    if image.mode != "RGB":
        try:
            image = image.convert("RGB")
        except Exception as exc:
            raise ValueError(f"image mode {image.mode!r} cannot be converted to RGB: {exc}") from exc
    return image


class Backend(abc.ABC):
    """A model (or baseline) that answers batches of :class:`GenerationRequest`.

    Subclasses declare ``PARAMS`` (name -> default) and ``REQUIRED`` (names without a default);
    the base ``__init__`` rejects unknown or missing parameters and stores the resolved ones in
    ``self.params``.
    """

    name: ClassVar[str] = ""
    default_queue: ClassVar[str] = "cpu"
    uses_image: ClassVar[bool] = True  # False: the caller may skip loading images (baselines)
    needs_truth: ClassVar[bool] = False  # True: execution fills GenerationRequest.truth (planted models only)
    # True for the chance-level baselines (random, prior, null): they are scored like models, but never count
    # as models where models are compared with gold (the adjudication rules); see is_baseline_backend()
    is_baseline: ClassVar[bool] = False
    PARAMS: ClassVar[Mapping[str, Any]] = {}
    REQUIRED: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, **params: Any) -> None:
        known = set(self.PARAMS) | set(self.REQUIRED)
        unknown = sorted(set(params) - known)
        if unknown:
            raise BackendError(
                f"backend {self.name!r}: unknown parameter(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known)) or '(none)'}"
            )
        missing = sorted(k for k in self.REQUIRED if params.get(k) in (None, ""))
        if missing:
            raise BackendError(f"backend {self.name!r}: missing required parameter(s) {', '.join(missing)}")
        resolved = dict(self.PARAMS)
        resolved.update(params)
        self.params: dict[str, Any] = resolved

    @abc.abstractmethod
    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """One result per request, same order; a bad single request yields ``result.error``."""

    def close(self) -> None:  # noqa: B027  (optional hook: most backends hold nothing)
        """Free resources (GPU memory, connections). Safe to call twice."""

    def describe(self) -> dict:
        """JSON-serialisable facts for provenance."""
        return {"backend": self.name, "class": f"{type(self).__module__}.{type(self).__qualname__}"}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


_REGISTRY: dict[str, type[Backend]] = {}
_REGISTRY_LOCK = threading.Lock()


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register_backend(name: str) -> Callable[[type[Backend]], type[Backend]]:
    """Class decorator registering a backend under ``name`` (sets ``cls.name``)."""
    if not name or not isinstance(name, str):
        raise ValueError("backend name must be a non-empty string")

    def decorator(cls: type[Backend]) -> type[Backend]:
        if not (isinstance(cls, type) and issubclass(cls, Backend)):
            raise TypeError(f"{cls!r} is not a Backend subclass")
        with _REGISTRY_LOCK:
            existing = _REGISTRY.get(name)
            if existing is not None and existing is not cls:
                raise ValueError(
                    f"backend name {name!r} is already registered by {_qualname(existing)}; "
                    f"cannot register {_qualname(cls)}"
                )
            cls.name = name
            _REGISTRY[name] = cls
        return cls

    return decorator


def unregister_backend(name: str) -> None:
    """Remove a registration (for tests)."""
    with _REGISTRY_LOCK:
        _REGISTRY.pop(name, None)


def backend_names() -> list[str]:
    """Registered backend names, sorted."""
    with _REGISTRY_LOCK:
        return sorted(_REGISTRY)


def is_baseline_backend(name: str) -> bool:
    """THE baseline predicate: whether the backend registered under ``name`` is a baseline
    (``Backend.is_baseline``: ``random``, ``prior``, ``null``). An unknown name is not a baseline.
    Everything that must tell baselines from models asks this (``ModelEndpoint.is_baseline``,
    ``baseline_backend_names()``, the adjudication facts)."""
    with _REGISTRY_LOCK:
        cls = _REGISTRY.get(name)
    return bool(cls is not None and cls.is_baseline)


def baseline_backend_names() -> list[str]:
    """Registered baseline backends, sorted (for filtering rows in SQL)."""
    with _REGISTRY_LOCK:
        return sorted(name for name, cls in _REGISTRY.items() if cls.is_baseline)


def backend_class(name: str) -> type[Backend]:
    """The class registered under ``name``; :class:`UnknownBackendError` lists the known names."""
    with _REGISTRY_LOCK:
        cls = _REGISTRY.get(name)
        known = sorted(_REGISTRY)
    if cls is None:
        raise UnknownBackendError(f"unknown backend {name!r}; known backends: {', '.join(known) or '(none)'}")
    return cls


# --- per-process LRU of loaded backends -------------------------------------------------------

_CACHE: OrderedDict[tuple[str, str], Backend] = OrderedDict()
_CACHE_LOCK = threading.RLock()


def canonical_params(params: Mapping[str, Any] | None) -> str:
    """Canonical JSON of ``params`` (sorted keys, compact) used as the cache key."""
    try:
        return json.dumps(dict(params or {}), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise BackendError(f"backend parameters must be JSON-serialisable: {exc}") from exc


def _resolve_cache_size(cache_size: int | None) -> int:
    if cache_size is None:
        raw = os.environ.get(CACHE_SIZE_ENV, "").strip()
        if not raw:
            return DEFAULT_CACHE_SIZE
        try:
            cache_size = int(raw)
        except ValueError as exc:
            raise BackendError(f"{CACHE_SIZE_ENV} must be an integer, got {raw!r}") from exc
    if cache_size < 0:
        raise BackendError(f"cache size must be >= 0, got {cache_size}")
    return cache_size


def _close_quietly(backend: Backend) -> None:
    try:
        backend.close()
    except Exception:  # eviction must not fail the caller
        logger.exception("closing evicted backend %r failed", backend)


def load_backend(name: str, params: Mapping[str, Any] | None, *, cache_size: int | None = None) -> Backend:
    """Return a loaded backend, reusing one loaded earlier in this process with the same params.

    Keeps at most ``cache_size`` (or ``$MEDR2_MODEL_CACHE_SIZE``, default 2) backends; the least
    recently used are closed and dropped *before* a new one is loaded, to make room on the GPU.
    With a size of 0 nothing is cached and the caller owns (and should close) the backend.
    """
    cls = backend_class(name)
    key = (name, canonical_params(params))
    size = _resolve_cache_size(cache_size)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            _CACHE.move_to_end(key)
            return cached
        while _CACHE and len(_CACHE) >= max(size, 1):
            _, evicted = _CACHE.popitem(last=False)
            logger.info("evicting backend %r from the model cache", evicted)
            _close_quietly(evicted)
        backend = cls(**dict(params or {}))
        if size > 0:
            _CACHE[key] = backend
        return backend


def clear_backend_cache() -> None:
    """Close and forget every cached backend."""
    with _CACHE_LOCK:
        while _CACHE:
            _, backend = _CACHE.popitem(last=False)
            _close_quietly(backend)


def cached_backend_keys() -> list[tuple[str, str]]:
    """(name, canonical params) of the cached backends, least recently used first."""
    with _CACHE_LOCK:
        return list(_CACHE)
