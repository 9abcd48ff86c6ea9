"""The openai-compatible backend against a real HTTP server on loopback."""
from __future__ import annotations

import json
import socket

import pytest

from tests.workers.backends.openai_loopback import Fault, OpenAILoopback
from tests.workers.backends.support import make_image
from workers.backends import BackendError, BackendUnavailable, GenerationRequest, OpenAICompatibleBackend


@pytest.fixture
def server():
    with OpenAILoopback(answers={"Is there a fracture?": "B", "Which organ?": "liver"}) as running:
        yield running


@pytest.fixture
def make_backend():
    """Build backends whose sleeps are recorded instead of slept; closed after the test."""
    made = []

    def _make(base_url: str, **params) -> OpenAICompatibleBackend:
        params.setdefault("model", "tiny-vlm")
        backend = OpenAICompatibleBackend(base_url=base_url, **params)
        backend.sleeps = []
        backend._sleep = backend.sleeps.append
        made.append(backend)
        return backend

    yield _make
    for backend in made:
        backend.close()


def req(key: int, prompt: str = "Is there a fracture?", image=True) -> GenerationRequest:
    return GenerationRequest(key=key, prompt=prompt, image=make_image(key) if image else None)


def test_happy_path(server, make_backend):
    backend = make_backend(server.base_url, system_prompt="Be brief.", extra_body={"top_p": 1.0})
    results = backend.generate([req(1), req(2, "Which organ?"), req(3, "Unknown prompt", image=False)])
    assert [(r.key, r.text, r.error) for r in results] == [(1, "B", ""), (2, "liver", ""), (3, "A", "")]
    assert results[0].tokens_in == 5 and results[0].tokens_out == 1  # from the usage field (4 words + image)
    assert all(r.latency_ms > 0 for r in results)
    by_prompt = {r["body"]["messages"][-1]["content"][0]["text"]: r["body"] for r in server.requests}
    body = by_prompt["Is there a fracture?"]
    assert body["model"] == "tiny-vlm" and body["max_tokens"] == 16 and body["temperature"] == 0.0
    assert body["top_p"] == 1.0
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert len(by_prompt["Unknown prompt"]["messages"][1]["content"]) == 1  # no image part
    assert backend.sleeps == []


def test_serves_the_tiny_vlm(tiny_backend, make_backend):
    reqs = [req(i, p) for i, p in enumerate(["Is there a fracture?", "Which organ?", "Describe the image."])]
    direct = tiny_backend.generate(reqs)
    with OpenAILoopback(backend=tiny_backend) as served:
        remote = make_backend(served.base_url, concurrency=2).generate(reqs)
    assert [r.text for r in remote] == [r.text for r in direct]  # PNG round trip is lossless
    assert [r.tokens_in for r in remote] == [r.tokens_in for r in direct]
    assert all(not r.error for r in remote)


def test_429_then_success_honours_retry_after(server, make_backend):
    server.push(Fault.http(429, retry_after=3))
    result = make_backend(server.base_url).generate([req(1)])[0]
    assert result.text == "B" and not result.error
    assert len(server.requests) == 2
    backend = make_backend(server.base_url, backoff_max_s=2.0)
    server.push(Fault.http(429, retry_after=100))
    assert backend.generate([req(2)])[0].text == "B"
    assert backend.sleeps == [2.0]  # capped at backoff_max_s


def test_retry_after_used_exactly(server, make_backend):
    backend = make_backend(server.base_url)
    server.push(Fault.http(429, retry_after=3))
    backend.generate([req(1)])
    assert backend.sleeps == [3.0]


def test_500_twice_then_success_with_jittered_backoff(server, make_backend):
    server.push(Fault.http(500), Fault.http(500))
    backend = make_backend(server.base_url, backoff_base_s=0.5, backoff_max_s=0.8)
    result = backend.generate([req(1)])[0]
    assert result.text == "B" and len(server.requests) == 3
    assert len(backend.sleeps) == 2
    assert 0 <= backend.sleeps[0] <= 0.5 and 0 <= backend.sleeps[1] <= 0.8  # min(max, base * 2**attempt)


def test_timeout_then_success(server, make_backend):
    server.push(Fault.sleep(2.0))
    result = make_backend(server.base_url, timeout_s=0.5).generate([req(1)])[0]
    assert result.text == "B" and not result.error
    assert len(server.requests) == 2


def test_closed_connection_then_success(server, make_backend):
    server.push(Fault.close())
    backend = make_backend(server.base_url)
    assert backend.generate([req(1)])[0].text == "B"
    assert len(backend.sleeps) == 1


def test_400_is_not_retried(server, make_backend):
    server.push(Fault.http(400))
    backend = make_backend(server.base_url)
    result = backend.generate([req(1)])[0]
    assert result.text == "" and result.error.startswith("HTTP 400")
    assert "scripted fault 400" in result.error
    assert len(server.requests) == 1 and backend.sleeps == []


def test_wrong_model_is_a_request_error(server, make_backend):
    result = make_backend(server.base_url, model="other").generate([req(1)])[0]
    assert "HTTP 400" in result.error and "unknown model" in result.error


def test_exhausted_retries_give_per_item_errors(server, make_backend):
    backend = make_backend(server.base_url, max_retries=2, concurrency=1)
    server.push(Fault.http(500), Fault.http(500), Fault.http(500))
    first, second = backend.generate([req(1), req(2)])
    assert first.error == "HTTP 500 after 3 attempts" and first.text == ""
    assert second.text == "B" and not second.error
    server.push(*[Fault.sleep(2.0)] * 3)
    slow = make_backend(server.base_url, max_retries=2, concurrency=1, timeout_s=0.4)
    first, second = slow.generate([req(1), req(2)])
    assert first.error == "timeout after 3 attempts" and second.text == "B"


def test_every_request_failing_transiently_raises_unavailable(server, make_backend):
    backend = make_backend(server.base_url, max_retries=1)
    server.push(*[Fault.http(503)] * 4)
    with pytest.raises(BackendUnavailable, match="HTTP 503 after 2 attempts"):
        backend.generate([req(1), req(2)])


def test_server_down_raises_unavailable(make_backend):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = make_backend(f"http://127.0.0.1:{port}/v1", max_retries=3)
    with pytest.raises(BackendUnavailable) as info:
        backend.generate([req(1), req(2), req(3)])
    assert isinstance(info.value, BackendError)
    assert "connection error" in str(info.value) and "4 attempts" in str(info.value)
    assert len(backend.sleeps) == 9  # 3 retries for each of the 3 requests


def test_concurrency_limit_respected(make_backend):
    with OpenAILoopback(delay_s=0.1) as slow:
        results = make_backend(slow.base_url, concurrency=3).generate([req(i, image=False) for i in range(9)])
        assert all(r.text == "A" for r in results)
        assert 2 <= slow.max_in_flight <= 3
    with OpenAILoopback(delay_s=0.05) as slow:
        make_backend(slow.base_url, concurrency=1).generate([req(i, image=False) for i in range(3)])
        assert slow.max_in_flight == 1


def test_api_key_sent_but_never_described(server, make_backend, monkeypatch):
    secret = "sk-test-very-secret-123"
    monkeypatch.setenv("MEDR2_TEST_API_KEY", secret)
    backend = make_backend(server.base_url, api_key_env="MEDR2_TEST_API_KEY")
    backend.generate([req(1)])
    assert server.requests[-1]["headers"]["authorization"] == f"Bearer {secret}"
    facts = backend.describe()
    assert secret not in json.dumps(facts) and secret not in repr(backend)
    assert facts["api_key_env"] == "MEDR2_TEST_API_KEY" and facts["api_key_set"] is True
    monkeypatch.delenv("MEDR2_OPENAI_API_KEY", raising=False)
    anonymous = make_backend(server.base_url)
    anonymous.generate([req(2)])
    assert "authorization" not in server.requests[-1]["headers"]
    assert anonymous.describe()["api_key_set"] is False


def test_broken_image_is_an_item_error(server, make_backend):
    from PIL import Image

    bad = GenerationRequest(key=9, prompt="x", image=Image.new("RGB", (0, 0)))
    results = make_backend(server.base_url).generate([req(1), bad])
    assert results[0].text == "B" and "empty" in results[1].error


def test_configuration_errors(make_backend):
    with pytest.raises(BackendError, match="timeout"):
        OpenAICompatibleBackend(base_url="http://x/v1", model="m", timeout=3)
    with pytest.raises(BackendError, match="base_url"):
        OpenAICompatibleBackend(base_url="ftp://x", model="m")
    with pytest.raises(BackendError, match="concurrency"):
        OpenAICompatibleBackend(base_url="http://x/v1", model="m", concurrency=0)
    backend = make_backend("http://user:pw@127.0.0.1:9/v1/")
    assert backend.describe()["base_url"] == "http://127.0.0.1:9/v1"
    backend.close()
    with pytest.raises(BackendError, match="closed"):
        backend.generate([req(1)])
