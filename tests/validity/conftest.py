"""Real rows for the shortcut audit: images with patient split groups, chains and current QA items."""
from __future__ import annotations

import hashlib
import random

import pytest

from annotation.splits import split_for_group


@pytest.fixture
def audit_items(db):
    """`make(n_patients)`: per patient one image and one chain with a planted-shortcut margin item
    (gold always the longest option), a balanced shape item and a lesion-grounding box item."""
    from annotation.models import Chain, Image, QAItem, Stage, TaskCategory

    def make(n_patients: int = 120, seed: int = 0, status: str = "approved", source_dataset: str = "fixture-set"):
        rng = random.Random(seed)
        stages = {s.code: s for s in Stage.objects.all()}
        cats = {c.code: c for c in TaskCategory.objects.filter(code__in=["margin", "shape", "lesion-grounding"])}
        items = []
        for p in range(n_patients):
            group = f"{seed}-patient-{p}"
            image = Image.objects.create(sha256=hashlib.sha256(group.encode()).hexdigest(), file=f"{group}.png",
                                         width=64, height=64, modality="CT", body_region="ABDOMEN", source_format="png",
                                         source_dataset=source_dataset, split_group=group)
            chain = Chain.objects.create(image=image, seed=seed)
            margin = ["smooth", "lobulated", "spiculated", "ill-defined with irregular infiltrating border"]
            rng.shuffle(margin)
            shape = ["round", "oval", "irregular"]
            rng.shuffle(shape)
            specs = [("margin", "How would you describe the margin of the lesion?", margin,
                      "ill-defined with irregular infiltrating border"),
                     ("shape", "What is the shape of the outlined lesion?", shape, rng.choice(shape)),
                     ("lesion-grounding", "Draw a box around the outlined lesion.", [], [1.0, 2.0, 30.0, 40.0])]
            for step, (code, question, options, gold) in enumerate(specs, start=1):
                cat = cats[code]
                items.append(QAItem(chain=chain, step=step, stage=stages[cat.stage.code], category=cat,
                                    question=question, options=options, gold_answer=gold, status=status,
                                    content_hash=hashlib.sha256(f"{group}:{code}".encode()).hexdigest()))
        QAItem.objects.bulk_create(items)
        return items

    return make


def split_of(item) -> str:
    return split_for_group(item.chain.image.split_group)
