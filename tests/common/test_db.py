"""common.db.plain_values reads what values_list reads, JSON decoded the same way."""
import pytest

from annotation.models import GroundingBox, Image, QAItem, Variant
from annotation.services.chains import chains_generate
from annotation.services.variants import variants_generate
from common.db import ids_in, json_loads, plain_values

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("text, value", [
    ('{"b": [1, 2.5, null], "a": "caf\\u00e9"}', {"a": "café", "b": [1, 2.5, None]}),
    ("123456789012345678901234567890", 123456789012345678901234567890),     # past 64 bits: the library
    ("NaN", None), (None, None), ({"already": "decoded"}, {"already": "decoded"}),
])
def test_json_loads(text, value):
    got = json_loads(text)
    if text == "NaN":
        assert got != got                 # NaN, as json.loads reads it
    else:
        assert got == value


def test_plain_values_equals_values_list(phantom_images):
    images = phantom_images(2)
    chains_generate(image_ids=[i.pk for i in images], actor=None, seed=0)
    items = list(QAItem.objects.order_by("pk").values_list("pk", flat=True))
    variants_generate(items=items, actor=None, seed=0)
    cases = [
        (QAItem.objects.filter(ids_in("pk", items[:5])).order_by("pk"),
         ("pk", "chain__image_id", "category__rule", "question", "options", "gold_answer", "stage__code"),
         ("category__rule", "options", "gold_answer")),
        (GroundingBox.objects.order_by("image_id", "id"),
         ("id", "image_id", "x0", "y1", "label", "finding__attributes"), ("finding__attributes",)),
        (Image.objects.order_by("pk"), ("id", "metadata", "window_center", "split_group"), ("metadata",)),
        # DISTINCT with the model's ordering: Django selects the ordering column too; it is dropped
        (Variant.objects.filter(ids_in("item_id", items)).order_by("-item_id").distinct(), ("item_id",), ()),
        (Variant.objects.none(), ("id", "params"), ("params",)),
    ]
    for queryset, fields, json_fields in cases:
        assert plain_values(queryset, fields, json_fields=json_fields) == [
            tuple(r) for r in queryset.values_list(*fields)]
