"""Fixtures for the backend tests: one tiny VLM per session, built offline into a temp dir."""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest


@pytest.fixture(scope="session")
def torch_one_thread():
    """One intra-op thread: on a shared 2-core machine, spinning OpenMP threads slow tiny models 5-10x."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_vlm_path(tmp_path_factory, torch_one_thread):
    """A tiny LLaVA with the default (smallest) configuration, built once per session."""
    from workers.tiny_vlm import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny-vlm"))


@pytest.fixture(scope="session")
def tiny_backend(tiny_vlm_path):
    """A transformers backend serving the tiny VLM (greedy, 8 new tokens, batches of 8)."""
    from workers.backends import TransformersBackend

    backend = TransformersBackend(path=str(tiny_vlm_path), max_new_tokens=8, batch_size=8)
    yield backend
    backend.close()

