"""Registry, parameter validation and the per-process LRU of loaded backends."""
from __future__ import annotations

from typing import ClassVar

import pytest

from workers.backends import (
    Backend,
    BackendError,
    GenerationResult,
    UnknownBackendError,
    backend_class,
    backend_names,
    cached_backend_keys,
    clear_backend_cache,
    format_box,
    load_backend,
    option_letter,
    option_letters,
    register_backend,
    unregister_backend,
)


class CountingBackend(Backend):
    """Counts how often it was built and closed."""

    PARAMS: ClassVar[dict] = {"a": 0, "b": 0}
    built: ClassVar[list[CountingBackend]] = []

    def __init__(self, **params):
        super().__init__(**params)
        self.closed = 0
        CountingBackend.built.append(self)

    def generate(self, requests):
        return [GenerationResult(key=r.key, text="x") for r in requests]

    def close(self):
        self.closed += 1


@pytest.fixture
def counting():
    CountingBackend.built = []
    clear_backend_cache()
    register_backend("test-counting")(CountingBackend)
    yield CountingBackend
    clear_backend_cache()
    unregister_backend("test-counting")


def test_builtin_backends_registered():
    assert {"transformers", "openai-compatible", "random", "prior", "null"} <= set(backend_names())
    assert backend_class("transformers").default_queue == "gpu"
    for name in ("openai-compatible", "random", "prior", "null"):
        assert backend_class(name).default_queue == "cpu"
        assert backend_class(name).name == name


def test_name_clash_refused_naming_both_classes(counting):
    class Other(CountingBackend):
        pass

    with pytest.raises(ValueError) as info:
        register_backend("test-counting")(Other)
    message = str(info.value)
    assert "CountingBackend" in message and "Other" in message and "test-counting" in message
    assert backend_class("test-counting") is CountingBackend
    register_backend("test-counting")(CountingBackend)  # the same class again is harmless


def test_unknown_backend_lists_known_names():
    with pytest.raises(BackendError) as info:
        backend_class("no-such-backend")
    assert isinstance(info.value, KeyError) and isinstance(info.value, UnknownBackendError)
    message = str(info.value)
    assert "no-such-backend" in message
    for name in ("null", "openai-compatible", "prior", "random", "transformers"):
        assert name in message
    with pytest.raises(KeyError):
        load_backend("no-such-backend", {})


def test_unknown_and_missing_params_named():
    with pytest.raises(BackendError, match="bogus"):
        backend_class("null")(bogus=1)
    with pytest.raises(BackendError, match="path"):
        backend_class("transformers")()
    with pytest.raises(BackendError, match="base_url"):
        backend_class("openai-compatible")(model="m")


def test_lru_loads_once_and_keys_canonically(counting):
    first = load_backend("test-counting", {"a": 1, "b": 2}, cache_size=2)
    again = load_backend("test-counting", {"b": 2, "a": 1}, cache_size=2)
    assert first is again and len(counting.built) == 1
    assert cached_backend_keys() == [("test-counting", '{"a":1,"b":2}')]


def test_lru_evicts_least_recently_used_and_closes(counting):
    one = load_backend("test-counting", {"a": 1}, cache_size=2)
    two = load_backend("test-counting", {"a": 2}, cache_size=2)
    assert load_backend("test-counting", {"a": 1}, cache_size=2) is one  # one is now most recent
    three = load_backend("test-counting", {"a": 3}, cache_size=2)
    assert two.closed == 1 and one.closed == 0 and three.closed == 0
    assert [k[1] for k in cached_backend_keys()] == ['{"a":1}', '{"a":3}']
    reloaded = load_backend("test-counting", {"a": 2}, cache_size=2)
    assert reloaded is not two and len(counting.built) == 4
    assert one.closed == 1  # evicted in turn
    clear_backend_cache()
    assert three.closed == 1 and reloaded.closed == 1 and cached_backend_keys() == []


def test_cache_size_from_environment(counting, monkeypatch):
    monkeypatch.setenv("MEDR2_MODEL_CACHE_SIZE", "1")
    one = load_backend("test-counting", {"a": 1})
    two = load_backend("test-counting", {"a": 2})
    assert one.closed == 1 and two.closed == 0 and len(cached_backend_keys()) == 1
    monkeypatch.setenv("MEDR2_MODEL_CACHE_SIZE", "nope")
    with pytest.raises(BackendError, match="MEDR2_MODEL_CACHE_SIZE"):
        load_backend("test-counting", {"a": 3})
    monkeypatch.delenv("MEDR2_MODEL_CACHE_SIZE")
    load_backend("test-counting", {"a": 3})
    load_backend("test-counting", {"a": 4})
    assert len(cached_backend_keys()) == 2  # default size


def test_cache_size_zero_caches_nothing(counting):
    one = load_backend("test-counting", {"a": 1}, cache_size=0)
    two = load_backend("test-counting", {"a": 1}, cache_size=0)
    assert one is not two and cached_backend_keys() == []


def test_unserialisable_params_refused(counting):
    with pytest.raises(BackendError, match="JSON"):
        load_backend("test-counting", {"a": object()})


def test_letters_and_boxes():
    assert option_letters(4) == ["A", "B", "C", "D"]
    assert option_letter(25) == "Z" and option_letter(26) == "AA"
    assert format_box([0, 0, 1, 1]) == "[0, 0, 1, 1]"
    assert format_box([0.25, 0.5, 1.0, 0.125]) == "[0.25, 0.5, 1, 0.125]"
