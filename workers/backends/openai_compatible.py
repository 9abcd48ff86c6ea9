"""``openai-compatible`` backend: POST /chat/completions to a vLLM / TGI / OpenAI-style server.

Requests of a batch run concurrently (a thread pool of ``concurrency``) over one httpx client. Transient
failures (429, 500, 502, 503, 504, timeouts, connection errors) are retried with exponential backoff and
full jitter, honouring ``Retry-After``; when every request of a batch failed transiently the whole batch
raises :class:`BackendUnavailable` so the caller can retry it later.
"""
from __future__ import annotations

import base64
import io
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

import httpx

from .base import (
    Backend,
    BackendError,
    BackendUnavailable,
    GenerationRequest,
    GenerationResult,
    check_image,
    register_backend,
)

logger = logging.getLogger(__name__)

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
BODY_EXCERPT = 200


def encode_png_data_url(image: Any) -> str:
    """``data:image/png;base64,...`` for a PIL image (converted to RGB)."""
    buffer = io.BytesIO()
    check_image(image).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _excerpt(text: str, limit: int = BODY_EXCERPT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None  # HTTP-date form: fall back to jittered backoff
    return max(value, 0.0)


class _Failure(Exception):
    """One request failed; ``transient`` tells whether the server (not the request) was at fault."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


@register_backend("openai-compatible")
class OpenAICompatibleBackend(Backend):
    """Chat-completions client with retries, backoff and bounded concurrency."""

    default_queue: ClassVar[str] = "cpu"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"base_url", "model"})
    PARAMS: ClassVar[dict[str, Any]] = {
        "base_url": None, "model": None, "api_key_env": "MEDR2_OPENAI_API_KEY", "max_tokens": 16,
        "temperature": 0.0, "timeout_s": 30.0, "max_retries": 4, "backoff_base_s": 0.5, "backoff_max_s": 8.0,
        "concurrency": 4, "system_prompt": None, "extra_body": None,
    }

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        p = self.params
        base_url = str(p["base_url"]).rstrip("/")
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise BackendError(f"openai-compatible: base_url must be an http(s) URL, got {base_url!r}")
        self.base_url = base_url
        self.model = str(p["model"])
        self.max_tokens = self._number("max_tokens", integer=True, minimum=1)
        self.temperature = self._number("temperature", minimum=0.0)
        self.timeout_s = self._number("timeout_s", minimum=0.001)
        self.max_retries = self._number("max_retries", integer=True, minimum=0)
        self.backoff_base_s = self._number("backoff_base_s", minimum=0.0)
        self.backoff_max_s = self._number("backoff_max_s", minimum=0.0)
        self.concurrency = self._number("concurrency", integer=True, minimum=1)
        self.system_prompt = p["system_prompt"] or None
        extra = p["extra_body"] or {}
        if not isinstance(extra, Mapping):
            raise BackendError("openai-compatible: extra_body must be a dict")
        self.extra_body = dict(extra)
        self.api_key_env = str(p["api_key_env"] or "")
        headers = {"Content-Type": "application/json"}
        api_key = os.environ.get(self.api_key_env) if self.api_key_env else None
        self._has_api_key = bool(api_key)
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            timeout=httpx.Timeout(self.timeout_s), headers=headers,
            limits=httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency))
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="medr2-openai")
        self._sleep: Callable[[float], None] = time.sleep
        self._rng = random.Random()
        self._closed = False
        self._close_lock = threading.Lock()

    def _number(self, key: str, *, integer: bool = False, minimum: float = 0.0) -> Any:
        value = self.params[key]
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or value < minimum:
            kind = "an integer" if integer else "a number"
            raise BackendError(f"openai-compatible: {key} must be {kind} >= {minimum}, got {value!r}")
        return value if integer else float(value)

    @property
    def url(self) -> str:
        """The chat-completions endpoint."""
        return f"{self.base_url}/chat/completions"

    # --- one request ------------------------------------------------------------------------
    def build_body(self, request: GenerationRequest) -> dict[str, Any]:
        """The JSON body for one request (``extra_body`` merged last)."""
        content: list[dict[str, Any]] = [{"type": "text", "text": request.prompt}]
        if request.image is not None:
            content.append({"type": "image_url", "image_url": {"url": encode_png_data_url(request.image)}})
        messages: list[dict[str, Any]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": content})
        body = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens,
                "temperature": self.temperature}
        body.update(self.extra_body)
        return body

    def backoff_delay(self, attempt: int, response: httpx.Response | None = None) -> float:
        """Retry-After (capped at backoff_max_s) when given, else full jitter over the exponential cap."""
        if response is not None:
            hinted = _retry_after(response)
            if hinted is not None:
                return min(hinted, self.backoff_max_s)
        return self._rng.uniform(0.0, min(self.backoff_max_s, self.backoff_base_s * 2 ** attempt))

    def _post_with_retries(self, body: dict[str, Any]) -> dict[str, Any]:
        attempts = self.max_retries + 1
        last = ""
        for attempt in range(attempts):
            response: httpx.Response | None = None
            try:
                response = self._client.post(self.url, json=body)
            except httpx.TimeoutException:
                last = "timeout"
            except httpx.TransportError as exc:
                last = f"connection error ({type(exc).__name__})"
            else:
                if response.status_code == 200:
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise _Failure(f"invalid JSON in response: {_excerpt(response.text)}", transient=False) from exc
                if response.status_code not in RETRY_STATUS:
                    raise _Failure(f"HTTP {response.status_code}: {_excerpt(response.text)}", transient=False)
                last = f"HTTP {response.status_code}"
            if attempt + 1 < attempts:
                delay = self.backoff_delay(attempt, response)
                logger.debug("openai-compatible: %s on attempt %d, retrying in %.2fs", last, attempt + 1, delay)
                self._sleep(delay)
        raise _Failure(f"{last} after {attempts} attempt{'s' if attempts != 1 else ''}", transient=True)

    def _one(self, request: GenerationRequest) -> tuple[GenerationResult, bool]:
        t0 = time.perf_counter()
        result = GenerationResult(key=request.key)
        transient = False
        try:
            try:
                body = self.build_body(request)
            except Exception as exc:
                raise _Failure(f"cannot encode request: {type(exc).__name__}: {exc}", transient=False) from exc
            payload = self._post_with_retries(body)
            result.text, result.tokens_in, result.tokens_out = self._parse(payload)
        except _Failure as failure:
            result.error, transient = str(failure), failure.transient
        except Exception as exc:  # noqa: BLE001 - never raise for one request
            result.error = f"{type(exc).__name__}: {exc}"
        if result.error:
            result.text = ""
        result.latency_ms = (time.perf_counter() - t0) * 1000.0
        return result, transient

    @staticmethod
    def _parse(payload: Any) -> tuple[str, int | None, int | None]:
        try:
            message = payload["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise _Failure(f"malformed response (no choices[0].message): {_excerpt(str(payload))}",
                           transient=False) from exc
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list):  # some servers return content parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
        if content is None:
            content = ""
        usage = payload.get("usage") or {}

        def _count(key: str) -> int | None:
            value = usage.get(key) if isinstance(usage, Mapping) else None
            return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        return str(content).strip(), _count("prompt_tokens"), _count("completion_tokens")

    # --- batch ------------------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Answer the batch concurrently; raise BackendUnavailable when every request failed transiently."""
        if self._closed:
            raise BackendError("openai-compatible: backend is closed")
        if not requests:
            return []
        outcomes = list(self._pool.map(self._one, requests))
        results = [result for result, _ in outcomes]
        if all(transient for _, transient in outcomes):
            raise BackendUnavailable(
                f"openai-compatible: all {len(results)} request(s) to {self.describe()['base_url']} failed: "
                f"{results[0].error}")
        return results

    def close(self) -> None:
        """Shut the thread pool and the HTTP client."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._pool.shutdown(wait=True)
        self._client.close()

    def describe(self) -> dict:
        """Provenance facts; never includes the API key (only whether one was set)."""
        parts = urlsplit(self.base_url)
        safe_url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))  # drop user:password@
        return {
            **super().describe(), "base_url": safe_url, "model": self.model, "max_tokens": self.max_tokens,
            "temperature": self.temperature, "timeout_s": self.timeout_s, "max_retries": self.max_retries,
            "backoff_base_s": self.backoff_base_s, "backoff_max_s": self.backoff_max_s,
            "concurrency": self.concurrency, "system_prompt": self.system_prompt, "extra_body": self.extra_body,
            "api_key_env": self.api_key_env, "api_key_set": self._has_api_key,
        }
