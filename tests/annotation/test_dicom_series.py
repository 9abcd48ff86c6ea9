"""A DICOM series stored one file per slice is one series: the files share the remapped Series Instance
UID, the viewer scrolls them in position order (along the slice normal, else Instance Number), the
image list shows one card, and images imported before the field existed get it from their stored file."""
from __future__ import annotations

import importlib
import io
import json
from types import SimpleNamespace

import numpy as np
import pydicom
import pytest
from django.apps import apps as django_apps
from django.db import connection
from django.test import Client
from django.urls import reverse
from pydicom.data import get_testdata_file
from pydicom.uid import generate_uid

from accounts.roles import Role
from annotation import selectors
from annotation.ingest.dicom import series_position
from annotation.models import Image
from annotation.services.images import BytesSource, images_import

pytestmark = pytest.mark.django_db

SERIES = "1.2.826.0.1.3680043.8.498.1"


def _slice(z: float, *, number: int, series: str = SERIES, position: bool = True, value: int = 0) -> bytes:
    """CT_small with its own pixels (so its content hash differs), SOP Instance UID and place in `series`."""
    ds = pydicom.dcmread(get_testdata_file("CT_small.dcm"))
    pixels = ds.pixel_array.copy()
    pixels[0, :8] = np.arange(8) + 10 * number + value
    ds.PixelData = pixels.tobytes()
    ds.SeriesInstanceUID = series
    ds.SOPInstanceUID = generate_uid(entropy_srcs=[series, str(number), str(z)])
    ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
    ds.InstanceNumber = number
    if position:
        ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
        ds.ImagePositionPatient = [-100, -100, z]
    else:
        for keyword in ("ImagePositionPatient", "ImageOrientationPatient"):
            if keyword in ds:
                delattr(ds, keyword)
    buf = io.BytesIO()
    ds.save_as(buf, enforce_file_format=True)
    return buf.getvalue()


def _import(curator, files: dict[str, bytes]):
    return images_import(sources=[BytesSource(name, data) for name, data in files.items()], actor=curator)


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def test_slices_of_one_series_share_the_remapped_uid_and_scroll_in_position_order(curator, storage_root):
    # imported out of order; instance numbers disagree with the geometry, which wins
    batch = _import(curator, {"c.dcm": _slice(30.0, number=1), "a.dcm": _slice(-10.0, number=3),
                              "b.dcm": _slice(10.0, number=2)})
    images = list(batch.images.all())
    assert len(images) == 3 and len({i.source_sha256 for i in images}) == 3
    uids = {i.series_uid for i in images}
    assert len(uids) == 1 and SERIES not in uids and next(iter(uids)).startswith("2.25.")
    stored = pydicom.dcmread(storage_root / images[0].source_file, stop_before_pixels=True)
    assert stored.SeriesInstanceUID == images[0].series_uid         # the UID the de-identified copy carries

    series = selectors.image_series(user=curator, image=images[0])
    assert [i.series_position for i in series] == [-10.0, 10.0, 30.0]
    page = _client(curator).get(reverse("annotation:image-detail", args=[series[1].pk])).content.decode()
    start = page.index('<script id="mv-')
    config = json.loads(page[page.index(">", start) + 1:page.index("</script>", start)])
    assert [s["id"] for s in config["series"]["slices"]] == [i.pk for i in series]
    assert config["series"]["current"] == 1


def test_the_image_list_shows_a_series_as_one_card_and_another_series_apart(curator, storage_root):
    _import(curator, {f"s{k}.dcm": _slice(5.0 * k, number=k) for k in range(1, 4)})
    _import(curator, {"other.dcm": _slice(0.0, number=1, series=SERIES + ".7", value=3)})
    rows = list(selectors.image_series_list(user=curator))
    assert sorted(r["n_slices"] for r in rows) == [1, 3]
    cards = selectors.image_series_cards(user=curator, rows=rows)
    big = next(c for c in cards if c.n_slices == 3)
    assert big.image.series_position == 10.0                       # the middle slice in reading order
    html = _client(curator).get(reverse("annotation:image-list")).content.decode()
    assert html.count('<a class="thumb') == 2 and "series · 3 slices" in html and "middle slice (2 of 3)" in html


def test_instance_number_orders_slices_without_a_position():
    ds = pydicom.dcmread(io.BytesIO(_slice(0.0, number=7, position=False)))
    assert series_position(ds) == 7.0
    ds.InstanceNumber = None
    assert series_position(ds) is None
    ds.ImageOrientationPatient = [0, 1, 0, 0, 0, -1]          # sagittal: rows along y, columns down z
    ds.ImagePositionPatient = [42.5, -3, 8]
    assert series_position(ds) == -42.5                       # normal = y x (-z) = -x


def test_images_imported_before_the_field_get_their_series_from_the_stored_file(curator, storage_root):
    batch = _import(curator, {f"s{k}.dcm": _slice(-5.0 * k, number=k) for k in range(1, 3)})
    expected = dict(batch.images.values_list("pk", "series_uid"))
    Image.objects.update(series_uid="", series_position=None)
    missing = _import(curator, {"gone.dcm": _slice(1.0, number=9, series=SERIES + ".9")}).images.get()
    Image.objects.filter(pk=missing.pk).update(series_uid="", source_file="sources/does/not/exist.dcm")
    migration = importlib.import_module("annotation.migrations.0013_image_series")
    migration.backfill(django_apps, SimpleNamespace(connection=connection))
    after = dict(Image.objects.exclude(pk=missing.pk).values_list("pk", "series_uid"))
    assert after == expected and set(after.values()) != {""}
    assert sorted(Image.objects.exclude(pk=missing.pk).values_list("series_position", flat=True)) == [-10.0, -5.0]
    assert Image.objects.get(pk=missing.pk).series_uid == ""       # unreadable: stays its own series


def test_a_readers_series_holds_only_the_slices_assigned_to_them(curator, users, storage_root):
    annotator = users[Role.ANNOTATOR]
    from annotation.services.images import image_assign

    images = list(_import(curator, {f"s{k}.dcm": _slice(2.0 * k, number=k) for k in range(1, 4)})
                  .images.order_by("series_position"))
    image_assign(images=images[:2], user=annotator, actor=curator)
    assert [i.pk for i in selectors.image_series(user=annotator, image=images[0])] == [i.pk for i in images[:2]]
