"""A real OpenAI chat-completions server on loopback, for testing the ``openai-compatible`` backend.

``ThreadingHTTPServer`` on 127.0.0.1, port 0, in a daemon thread. It validates the request shape (model,
messages, a base64 PNG data URL that decodes to an image), answers canned text per prompt (or delegates to
a real :class:`~workers.backends.Backend`, e.g. the transformers backend serving the tiny VLM), and plays a
scriptable queue of faults first: 429 with Retry-After, 500, a sleep longer than the client timeout, a
closed connection, or any status code.
"""
from __future__ import annotations

import base64
import binascii
import io
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from PIL import Image

DATA_URL_PREFIX = "data:image/png;base64,"


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour, consumed by the next request.

    kind: "status" (answer ``status`` with an error body and, if given, a Retry-After header),
    "sleep" (wait ``seconds`` before answering normally, to outlast the client timeout) or
    "close" (drop the connection without a response).
    """

    kind: str
    status: int = 500
    retry_after: str | None = None
    seconds: float = 0.0

    @classmethod
    def http(cls, status: int, retry_after: float | str | None = None) -> Fault:
        """An HTTP error answer."""
        return cls("status", status=status, retry_after=None if retry_after is None else str(retry_after))

    @classmethod
    def sleep(cls, seconds: float) -> Fault:
        """A slow answer."""
        return cls("sleep", seconds=seconds)

    @classmethod
    def close(cls) -> Fault:
        """A dropped connection."""
        return cls("close")


class BadRequest(Exception):
    """The request does not follow the chat-completions protocol."""


def decode_data_url(url: str) -> Image.Image:
    """Decode a ``data:image/png;base64,...`` URL to a loaded PIL image (BadRequest otherwise)."""
    if not url.startswith(DATA_URL_PREFIX):
        raise BadRequest("image_url.url must be a data:image/png;base64 URL")
    try:
        raw = base64.b64decode(url[len(DATA_URL_PREFIX):], validate=True)
        image = Image.open(io.BytesIO(raw))
        image.load()
    except (binascii.Error, OSError, ValueError) as exc:
        raise BadRequest(f"image does not decode: {exc}") from exc
    if image.format != "PNG":
        raise BadRequest(f"image is {image.format}, not PNG")
    return image


def parse_chat_request(body: Any, expected_model: str | None) -> tuple[str, Image.Image | None, str | None]:
    """Validate a chat-completions body; return (user text, image or None, system prompt or None)."""
    if not isinstance(body, dict):
        raise BadRequest("body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise BadRequest("model is required")
    if expected_model is not None and body["model"] != expected_model:
        raise BadRequest(f"unknown model {body['model']!r}")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages must be a non-empty list")
    system = None
    user = None
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant"):
            raise BadRequest("each message needs a role of system, user or assistant")
        if message["role"] == "system":
            system = message.get("content")
        elif message["role"] == "user":
            user = message
    if user is None:
        raise BadRequest("no user message")
    content = user.get("content")
    if isinstance(content, str):
        return content, None, system
    if not isinstance(content, list):
        raise BadRequest("user content must be a string or a list of parts")
    texts, images = [], []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "image_url" and isinstance(part.get("image_url"), dict):
            images.append(decode_data_url(str(part["image_url"].get("url", ""))))
        else:
            raise BadRequest(f"bad content part {str(part)[:80]}")
    if len(images) > 1:
        raise BadRequest("at most one image per request")
    return "\n".join(texts), (images[0] if images else None), system


class OpenAILoopback:
    """Context manager running the server; ``base_url`` ends with ``/v1``.

    ``answers`` maps prompt -> canned text (default answer ``default_answer``); ``backend`` (a Backend)
    answers instead when given. ``delay_s`` slows every request (to observe concurrency).
    """

    def __init__(self, *, model: str | None = "tiny-vlm", answers: dict[str, str] | None = None,
                 default_answer: str = "A", backend: Any = None, delay_s: float = 0.0) -> None:
        self.model = model
        self.answers = dict(answers or {})
        self.default_answer = default_answer
        self.backend = backend
        self.delay_s = delay_s
        self.faults: deque[Fault] = deque()
        self.requests: list[dict[str, Any]] = []  # {"body", "headers", "time"} of every request received
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._backend_lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle --------------------------------------------------------------------------
    def start(self) -> Self:
        """Bind 127.0.0.1:0 and serve in a daemon thread."""
        handler = _make_handler(self)
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port."""
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, *faults: Fault) -> None:
        """Queue faults; each is consumed by one request, in order."""
        with self._lock:
            self.faults.extend(faults)

    # --- request handling -------------------------------------------------------------------
    def next_fault(self) -> Fault | None:
        """Pop the next scripted fault (None when the queue is empty)."""
        with self._lock:
            return self.faults.popleft() if self.faults else None

    def enter(self, body: Any, headers: dict[str, str]) -> None:
        """Record a request and count it in flight."""
        with self._lock:
            self.requests.append({"body": body, "headers": headers, "time": time.monotonic()})
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        """Count a request out of flight."""
        with self._lock:
            self.in_flight -= 1

    def answer(self, prompt: str, image: Image.Image | None, system: str | None) -> tuple[str, int, int]:
        """(text, prompt_tokens, completion_tokens) for a validated request."""
        if self.backend is None:
            text = self.answers.get(prompt, self.default_answer)
            return text, len(prompt.split()) + (1 if image is not None else 0), len(text.split())
        from workers.backends import GenerationRequest

        request = GenerationRequest(key=0, prompt=prompt, image=image.convert("RGB") if image else None)
        with self._backend_lock:
            result = self.backend.generate([request])[0]
        if result.error:
            raise RuntimeError(result.error)
        return result.text, result.tokens_in or 0, result.tokens_out or 0


def _make_handler(server_state: OpenAILoopback) -> Callable[..., BaseHTTPRequestHandler]:
    state = server_state

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
            self._send_json(status, {"error": {"message": message, "type": "invalid_request_error"}}, headers)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._error(404, f"no route {self.path}")
                return
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            state.enter(body, {k.lower(): v for k, v in self.headers.items()})
            try:
                self._serve(body)
            finally:
                state.leave()

        def _serve(self, body: Any) -> None:
            fault = state.next_fault()
            if fault is not None and fault.kind == "close":
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            if fault is not None and fault.kind == "status":
                extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else None
                self._error(fault.status, f"scripted fault {fault.status}", extra)
                return
            time.sleep(state.delay_s + (fault.seconds if fault is not None else 0.0))
            try:
                prompt, image, system = parse_chat_request(body, state.model)
                text, n_in, n_out = state.answer(prompt, image, system)
            except BadRequest as exc:
                self._error(400, str(exc))
                return
            except Exception as exc:  # noqa: BLE001 - report like a real server would
                self._error(500, f"{type(exc).__name__}: {exc}")
                return
            self._send_json(200, {
                "id": f"chatcmpl-{len(state.requests)}", "object": "chat.completion", "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
            })

    return Handler
