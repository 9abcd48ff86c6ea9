"""Fixtures for evaluation tests: approved chains with variants on phantom images, the tiny VLM
(built once per session, offline), and model endpoints."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def tiny_vlm_dir(tmp_path_factory):
    from workers.tiny_vlm import build_tiny_vlm

    path = tmp_path_factory.mktemp("models") / "tiny-vlm"
    build_tiny_vlm(path, seed=0)
    return path


@pytest.fixture
def eval_content(phantom_images):
    """Approved chains on phantom images with clean + adversarial variants."""

    def _make(images: int = 3, kinds: list[str] | None = None, seed: int = 0):
        from annotation.models import QAItem, Variant
        from annotation.services.chains import chains_generate
        from annotation.services.variants import variants_generate

        made = phantom_images(images, seed=seed)
        chains_generate(image_ids=[i.pk for i in made], actor=None, seed=0)
        QAItem.objects.filter(is_current=True).update(status=QAItem.Status.APPROVED)
        variants_generate(items=list(QAItem.objects.filter(is_current=True).values_list("pk", flat=True)), actor=None,
                          seed=0, kinds=kinds)
        return {"images": made, "items": QAItem.objects.filter(is_current=True).count(),
                "variants": Variant.objects.count()}

    return _make


@pytest.fixture
def make_endpoint(db):
    from workers.services.endpoints import endpoint_create

    def _make(name: str, backend: str, **kwargs):
        return endpoint_create(name=name, backend=backend, actor=None, **kwargs)

    return _make
