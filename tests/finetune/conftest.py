"""Fixtures for fine-tuning tests: phantom chains with variants, the tiny VLM and its endpoint."""
from __future__ import annotations

import pytest

from tests.workers.conftest import eval_content, make_endpoint, tiny_vlm_dir

__all__ = ["eval_content", "make_endpoint", "tiny_vlm_dir"]   # the evaluation tests' fixtures, shared

# training settings that keep a test's job to a second or two on the tiny VLM
FAST = {"tokens_per_step": 256, "eval_every": 2, "patience": 0, "checkpoint_every": 2, "lr": 0.005}


@pytest.fixture
def base_model(tiny_vlm_dir, make_endpoint):  # noqa: F811 - the shared fixtures
    return make_endpoint("tiny-base", "transformers", parameters={"path": str(tiny_vlm_dir), "max_new_tokens": 24})


@pytest.fixture
def ft_content(eval_content):  # noqa: F811
    """Approved chains on 6 phantoms (train, val and test items all present) with clean and two adversarial kinds."""
    from annotation.models import QAItem
    from finetune.selectors import items_by_split

    made = eval_content(images=6, kinds=["clean", "misleading_hint", "wrong_visual_cue"])
    splits = items_by_split(item_filters={})
    assert splits["train"] and splits["test"], {k: len(v) for k, v in splits.items()}
    return {**made, "splits": splits, "items_total": QAItem.objects.filter(is_current=True).count()}
