"""The viewer's config (annotation/viewer.py) and its stored-value endpoint, as the server builds them:
series in frame order with each slice's boxes, presets by modality, layer colours from the palette
(blinded by position on the case page), orientation, and errors that are never a 500."""
from __future__ import annotations

import json

import nibabel as nib
import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from accounts.roles import Role
from annotation import viewer
from annotation.services.findings import finding_create
from annotation.services.images import BytesSource, ImportDefaults, images_import
from annotation.storage import resolve
from common import palette
from tests.conftest import png_bytes

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _volume_bytes(slices: int = 6) -> bytes:
    """A CT-like NIfTI volume (x, y, z) = (12, 10, slices); slice k holds 100 * k + x."""
    x = np.arange(12, dtype=np.int16)[:, None, None]
    z = np.arange(slices, dtype=np.int16)[None, None, :]
    volume = (x + 100 * z + np.zeros((12, 10, slices), dtype=np.int16)).astype(np.int16)
    return nib.Nifti1Image(volume, np.eye(4)).to_bytes()


@pytest.fixture
def volume(curator):
    batch = images_import(sources=[BytesSource("vol.nii", _volume_bytes())], actor=curator,
                          defaults=ImportDefaults(modality="CT"))
    return list(batch.images.order_by("frame_index"))


def _config(page) -> dict:
    """The viewer config a page emitted with json_script."""
    html = page.content.decode()
    start = html.index('<script id="mv-')
    start = html.index(">", start) + 1
    return json.loads(html[start:html.index("</script>", start)])


def test_a_volume_is_one_series_in_slice_order_with_each_slices_own_boxes(volume, curator):
    middle = volume[len(volume) // 2]
    finding_create(image=volume[1], kind="lesion", label="nodule", actor=curator, source="manual", box=(1, 2, 5, 6))
    images_import(sources=[BytesSource("lone.png", png_bytes(color=90))], actor=curator)
    cfg = _config(_client(curator).get(reverse("annotation:image-detail", args=[middle.pk])))
    slices = cfg["series"]["slices"]
    assert [s["frame"] for s in slices] == sorted(s["frame"] for s in slices) and len(slices) == len(volume)
    assert slices[cfg["series"]["current"]]["id"] == middle.pk
    assert slices[1]["boxes"]["gold"] == [{"x0": 1.0, "y0": 2.0, "x1": 5.0, "y1": 6.0, "label": "nodule"}]
    assert all(not s["boxes"]["gold"] for i, s in enumerate(slices) if i != 1)
    assert slices[0]["pixels"] == reverse("annotation:image-pixels", args=[volume[0].pk])
    assert cfg["orientation"]["top"] == "A" and not cfg["orientation"]["assumed"]


def test_the_image_list_shows_one_card_per_series_opening_its_middle_slice(volume, curator):
    images_import(sources=[BytesSource("lone.png", png_bytes(color=91))], actor=curator)
    html = _client(curator).get(reverse("annotation:image-list")).content.decode()
    assert html.count('<a class="thumb') == 2
    middle = volume[len(volume) // 2]
    assert f'href="/images/{middle.pk}/"' in html and f"series · {len(volume)} slices" in html
    assert "2 matching" in html
    finding_create(image=volume[0], kind="lesion", label="cyst", actor=curator, source="manual", box=(1, 1, 4, 4))
    html = _client(curator).get(reverse("annotation:image-list"), {"has_findings": "yes"}).content.decode()
    assert html.count('<a class="thumb') == 1 and "1 lesion" in html and f"series · {len(volume)} slices" in html


def test_ct_gets_the_ct_presets_and_other_images_auto_and_full_range(volume, curator, phantom_images):
    ct = [p["key"] for p in viewer.presets_for(volume[0])]
    assert ct[0] == "default" and {"brain", "subdural", "stroke", "lung", "mediastinum", "liver", "bone"} <= set(ct)
    lung = next(p for p in viewer.presets_for(volume[0]) if p["key"] == "lung")
    assert (lung["center"], lung["width"]) == (-600, 1500)
    (png,) = images_import(sources=[BytesSource("g.png", png_bytes(color=92))], actor=curator).images.all()
    assert [p["key"] for p in viewer.presets_for(png)] == ["auto", "full"]
    mr = next((i for i in phantom_images(6) if i.modality == "MR"), None)
    if mr is not None:
        assert [p["key"] for p in viewer.presets_for(mr)] == ["default", "auto", "full"]


def test_layer_colours_come_from_the_palette_and_blinded_models_by_position():
    assert viewer.model_style(endpoint_id=3, position=0, blinded=False) == palette.model_style(3)
    blind = [viewer.model_style(endpoint_id=e, position=n, blinded=True) for n, e in enumerate([9, 4, 17])]
    assert [s.colour for s in blind] == list(palette.MODEL_COLOURS[:3])
    assert viewer.model_style(endpoint_id=1, position=7, blinded=True).dash_svg == palette.MODEL_DASHES[1][0]
    drawn = viewer.drawn_layer()
    assert drawn["colour"] == palette.GOLD and drawn["dash"] and drawn["kind"] == "drawn"


def test_the_image_page_draws_gold_lesions_and_dashed_anatomy(curator):
    (image,) = images_import(sources=[BytesSource("s.png", png_bytes(size=(200, 100), color=60))],
                             actor=curator).images.all()
    finding_create(image=image, kind="lesion", label="nodule", actor=curator, source="manual", box=(20, 10, 70, 60))
    finding_create(image=image, kind="anatomy", label="liver", actor=curator, source="manual", box=(0, 0, 120, 100))
    cfg = _config(_client(curator).get(reverse("annotation:image-detail", args=[image.pk])))
    gold, anatomy = cfg["layers"]
    assert (gold["colour"], gold["dash"], [b["label"] for b in gold["boxes"]]) == (palette.GOLD, "", ["nodule"])
    assert (anatomy["colour"], anatomy["kind"], [b["label"] for b in anatomy["boxes"]]) == (
        palette.ANATOMY, "anatomy", ["liver"])
    assert anatomy["dash"] and not cfg["draw"] and cfg["orientation"] is None and cfg["units"] == "grey level"


def test_dicom_orientation_comes_from_the_file_and_is_assumed_only_without_it(phantom_images, curator):
    (image,) = phantom_images(1)
    markers = viewer.orientation_for(image)
    assert markers["source"] == "DICOM Image Orientation (Patient)" and not markers["assumed"]
    resolve(image.source_file).unlink()
    assumed = viewer.orientation_for(image)
    assert assumed["assumed"] and {k: assumed[k] for k in ("left", "right", "top", "bottom")} == {
        k: markers[k] for k in ("left", "right", "top", "bottom")}


def test_the_pixel_endpoint_returns_hounsfield_units_described_in_headers(phantom_images, users):
    from annotation.models import Image
    from annotation.phantoms import generate_phantom

    images = phantom_images(4)
    ct = next(i for i in images if i.modality == "CT")
    index = sorted(images, key=lambda i: i.pk).index(ct)
    truth = generate_phantom(index)
    assert (truth.modality, truth.width, truth.height) == ("CT", ct.width, ct.height)
    r = _client(users[Role.CURATOR]).get(reverse("annotation:image-pixels", args=[ct.pk]))
    assert r.status_code == 200 and r["Content-Type"] == "application/octet-stream"
    assert (r["X-Pixel-Dtype"], r["X-Pixel-Units"], int(r["X-Pixel-Width"])) == ("int16", "HU", ct.width)
    values = np.frombuffer(r.content, "<i2").reshape(ct.height, ct.width)
    assert np.array_equal(values, truth.pixels)
    assert float(r["X-Pixel-Min"]) == truth.pixels.min() and float(r["X-Pixel-Max"]) == truth.pixels.max()
    # permission-checked like the PNG: an annotator who is not assigned the image gets a 404
    assert _client(users[Role.ANNOTATOR]).get(reverse("annotation:image-pixels", args=[ct.pk])).status_code == 404
    assert Image.objects.filter(pk=ct.pk).exists()


def test_a_missing_or_corrupt_source_is_a_json_error_never_a_500(phantom_images, curator):
    image, other = phantom_images(2)
    client = _client(curator)
    resolve(image.source_file).unlink()
    r = client.get(reverse("annotation:image-pixels", args=[image.pk]))
    assert r.status_code == 404 and r.json()["code"] == "source_missing"
    resolve(other.source_file).write_bytes(b"not a DICOM file at all" * 10)
    r = client.get(reverse("annotation:image-pixels", args=[other.pk]))
    assert r.status_code == 422 and r.json()["code"] in ("corrupt", "mismatch") and r.json()["detail"]
    # the pages still render; the viewer falls back to the PNG, told in advance when the file is gone
    assert client.get(reverse("annotation:image-detail", args=[other.pk])).status_code == 200
    gone = _config(client.get(reverse("annotation:image-detail", args=[image.pk])))["series"]["slices"][0]
    assert gone["pixels"] == "" and "not in storage" in gone["no_pixels"]


def test_rasters_without_stored_values_say_why(curator):
    import io

    from PIL import Image as PILImage

    deep = io.BytesIO()
    PILImage.fromarray(np.arange(64 * 48, dtype=np.uint16).reshape(48, 64) * 20).save(deep, format="PNG")
    colour = png_bytes(color=(200, 30, 30), mode="RGB")
    batch = images_import(sources=[BytesSource("deep.png", deep.getvalue()), BytesSource("c.png", colour)],
                          actor=curator)
    client = _client(curator)
    codes = {}
    for image in batch.images.all():
        r = client.get(reverse("annotation:image-pixels", args=[image.pk]))
        codes[image.metadata.get("source_mode")] = (r.status_code, r.json()["code"])
        assert viewer.pixels_unavailable(image) == r.json()["detail"]
    assert codes["I;16"] == (422, "not_stored") and codes["RGB"] == (422, "colour")


def test_an_8_bit_grey_raster_serves_its_grey_levels(curator):
    (image,) = images_import(sources=[BytesSource("g.png", png_bytes(size=(5, 4), color=77))],
                             actor=curator).images.all()
    r = _client(curator).get(reverse("annotation:image-pixels", args=[image.pk]))
    assert r.status_code == 200 and r["X-Pixel-Dtype"] == "int16"
    assert set(np.frombuffer(r.content, "<i2").tolist()) == {77}


def test_item_pages_show_the_image_with_the_draw_tool_only_when_editing_a_box_answer(phantom_images, curator):
    from annotation.models import QAItem
    from annotation.services.chains import chains_generate

    (image,) = phantom_images(1)
    chains_generate(image_ids=[image.pk], actor=curator, seed=0)
    client = _client(curator)
    choice = QAItem.objects.filter(category__answer_type="single_choice").first()
    cfg = _config(client.get(reverse("annotation:item-detail", args=[choice.pk])))
    assert cfg["image"]["id"] == image.pk and not cfg["draw"]
    evidence = {(b.x0, b.y0, b.x1, b.y1) for b in choice.evidence_boxes.all()}
    assert {(b["x0"], b["y0"], b["x1"], b["y1"]) for b in cfg["layers"][0]["boxes"]} == evidence
    box_item = QAItem.objects.filter(category__answer_type="box").first()
    if box_item is not None:
        cfg = _config(client.get(reverse("annotation:item-edit", args=[box_item.pk])))
        assert cfg["draw"] and [lay["key"] for lay in cfg["layers"]][-1] == "drawn"
        assert any(b["label"] == "gold answer" for b in cfg["layers"][0]["boxes"])
    assert not _config(client.get(reverse("annotation:item-edit", args=[choice.pk])))["draw"]
    chain_cfg = _config(client.get(reverse("annotation:chain-detail", args=[choice.chain_id])))
    assert chain_cfg["image"]["id"] == image.pk and chain_cfg["layers"][0]["colour"] == palette.GOLD
