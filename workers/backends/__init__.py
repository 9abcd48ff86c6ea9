"""Model backends for Med-R2 workers: one interface for local VLMs, OpenAI-compatible servers and baselines.

Importing this package registers the built-in backends: ``transformers``, ``openai-compatible``,
``random``, ``prior`` and ``null``, and the planted-behaviour models ``oracle``, ``cue_follower``,
``text_only``, ``box_shifter`` and ``stage_decay`` (workers/backends/planted.py).

``random``, ``prior`` and ``null`` are baselines (``Backend.is_baseline``; ask ``is_baseline_backend(name)``
or ``ModelEndpoint.is_baseline``): scored like models, never counted as models by the adjudication rules.
The planted models simulate models and are not baselines.
"""
from __future__ import annotations

from . import baselines, hf_transformers, openai_compatible, planted  # noqa: F401 - register the backends
from .base import (
    ANSWER_TYPES,
    CHOICE_TYPES,
    Backend,
    BackendError,
    BackendUnavailable,
    GenerationRequest,
    GenerationResult,
    UnknownBackendError,
    backend_class,
    backend_names,
    baseline_backend_names,
    cached_backend_keys,
    canonical_params,
    check_image,
    clear_backend_cache,
    format_box,
    is_baseline_backend,
    load_backend,
    option_letter,
    option_letters,
    register_backend,
    unregister_backend,
)
from .baselines import NullBackend, PriorBackend, RandomBackend
from .hf_transformers import TransformersBackend
from .openai_compatible import OpenAICompatibleBackend

__all__ = [
    "ANSWER_TYPES",
    "CHOICE_TYPES",
    "Backend",
    "BackendError",
    "BackendUnavailable",
    "GenerationRequest",
    "GenerationResult",
    "NullBackend",
    "OpenAICompatibleBackend",
    "PriorBackend",
    "RandomBackend",
    "TransformersBackend",
    "UnknownBackendError",
    "backend_class",
    "backend_names",
    "baseline_backend_names",
    "cached_backend_keys",
    "canonical_params",
    "check_image",
    "clear_backend_cache",
    "format_box",
    "is_baseline_backend",
    "load_backend",
    "option_letter",
    "option_letters",
    "register_backend",
    "unregister_backend",
]
