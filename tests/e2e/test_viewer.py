"""The image viewer in Debian chromium (docs/viewer.md): window/level on the stored values (checked on
the canvas's pixels), presets, the HU readout against a phantom's known values, slice scrolling with
each slice's boxes, the box-drawing event, the fallback to the PNG, and the frame rate while dragging
the window on a 512×512 CT slice. Every test fails on a console error."""
from __future__ import annotations

import io

import nibabel as nib
import numpy as np
import pydicom
import pytest
from PIL import Image as PILImage

from annotation.phantoms import generate_phantom
from annotation.services.findings import finding_create
from annotation.services.images import BytesSource, ImportDefaults, images_import
from annotation.storage import resolve
from annotation.viewer import PLANE_MARKERS

from .test_pages_in_chromium import SCREENSHOTS, _login, browser  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
VIEWER = "section.mv"


def _ct_512() -> tuple[bytes, np.ndarray]:
    """A 512×512 CT slice (a phantom's file with new pixels): HU = 4·(x − 256) + 10·(y // 64)."""
    ds = pydicom.dcmread(io.BytesIO(generate_phantom(0, modality="CT").to_dicom_bytes()))
    y, x = np.mgrid[0:512, 0:512]
    hu = (4 * (x - 256) + 10 * (y // 64)).astype(np.int16)
    ds.Rows = ds.Columns = 512
    ds.PixelData = (hu.astype(np.int32) + 1024).astype("<u2").tobytes()
    ds.WindowCenter, ds.WindowWidth = "40", "400"
    buf = io.BytesIO()
    ds.save_as(buf, enforce_file_format=True)
    return buf.getvalue(), hu


def _open_viewer(page, url, state="pixels"):
    page.goto(url)
    page.wait_for_function(f"() => document.querySelector('{VIEWER}').dataset.mvState === '{state}'")
    _frame(page)


def _frame(page):
    """Wait until the viewer has drawn what was asked (it draws on the next animation frame)."""
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")


def _api(page, call):
    return page.evaluate(f"() => {{ const v = MedViewer.get(document.querySelector('{VIEWER}')); return {call}; }}")


def _grey_at(page, x, y):
    return page.evaluate(f"() => Array.from(document.querySelector('{VIEWER} canvas').getContext('2d')"
                         f".getImageData({x}, {y}, 1, 1).data)")


def _screen_point(page, x, y):
    """Where image pixel (x, y)'s centre is on the screen."""
    view, stage = _api(page, "v.getView()"), page.locator(f"{VIEWER} .mv-stage").bounding_box()
    return (stage["x"] + view["tx"] + (x + 0.5) * view["scale"], stage["y"] + view["ty"] + (y + 0.5) * view["scale"])


def _expected_grey(v, center, width):
    g = ((v - center) / width + 0.5) * 255
    return 0 if g <= 0 else 255 if g >= 255 else int(np.floor(g + 0.5))


def test_window_level_drag_and_presets_change_the_drawn_values(page_for, live_server, curator):
    data, hu = _ct_512()
    (image,) = images_import(sources=[BytesSource("ct.dcm", data)], actor=curator).images.all()
    page = page_for()
    _open_viewer(page, f"{live_server.url}/images/{image.pk}/")
    assert _api(page, "v.getWindow()") == {"center": 40, "width": 400}
    x, y = 300, 200                                          # HU 186
    assert _grey_at(page, x, y)[:3] == [_expected_grey(hu[y, x], 40, 400)] * 3

    # right-drag: horizontal changes the width, vertical the level; the canvas's pixels follow
    before = _grey_at(page, x, y)
    sx, sy = _screen_point(page, 256, 256)
    page.mouse.move(sx, sy)
    page.mouse.down(button="right")
    page.mouse.move(sx + 120, sy + 60, steps=6)
    page.mouse.up(button="right")
    win = _api(page, "v.getWindow()")
    assert win["width"] > 400 and win["center"] > 40
    _frame(page)
    after = _grey_at(page, x, y)
    assert after != before and after[0] == _expected_grey(hu[y, x], win["center"], win["width"])

    # a preset from the keyboard: 1 is the file's window, 2 the brain window (W 80, L 40)
    page.locator(f"{VIEWER} .mv-stage").focus()
    page.keyboard.press("2")
    _frame(page)
    assert _api(page, "v.getWindow()") == {"center": 40, "width": 80}
    assert page.locator(f"{VIEWER} .mv-preset").input_value() == "brain"
    for px, py in ((256, 0), (259, 0), (262, 130), (300, 200)):  # HU 0, 12, 44, 186: dark, grey, bright
        assert _grey_at(page, px, py)[0] == _expected_grey(hu[py, px], 40, 80), (px, py)
    page.select_option(f"{VIEWER} .mv-preset", "lung")
    assert _api(page, "v.getWindow()") == {"center": -600, "width": 1500}
    page.keyboard.press("i")                                  # invert
    _frame(page)
    assert _grey_at(page, x, y)[0] == 255 - _expected_grey(hu[y, x], -600, 1500)
    assert page.locator(f"{VIEWER} .mv-wl").inner_text() == "W 1500 · L -600 (Lung) · inverted"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "viewer-ct-lung-window.png"), full_page=False)


def test_the_hu_readout_matches_the_phantoms_stored_value(page_for, live_server, phantom_images):
    images = phantom_images(4)
    index, image = next((i, im) for i, im in enumerate(sorted(images, key=lambda im: im.pk)) if im.modality == "CT")
    truth = generate_phantom(index)
    assert (truth.width, truth.height) == (image.width, image.height)
    page = page_for()
    _open_viewer(page, f"{live_server.url}/images/{image.pk}/")
    ys, xs = np.nonzero(truth.pixels > 30)                    # soft tissue, far from the -1024 background
    for x, y in ((int(xs[len(xs) // 2]), int(ys[len(ys) // 2])), (3, 3)):
        page.mouse.move(*_screen_point(page, x, y))
        page.wait_for_function(f"() => document.querySelector('{VIEWER} .mv-readout').textContent"
                               f".startsWith('x {x} · y {y} ·')")
        assert page.locator(f"{VIEWER} .mv-readout").inner_text() == f"x {x} · y {y} · {int(truth.pixels[y, x])} HU"
    markers = [page.locator(f"{VIEWER} .mv-{side}").inner_text() for side in ("left", "right", "top", "bottom")]
    expected = PLANE_MARKERS[truth.plane]                        # from the file's Image Orientation (Patient)
    assert markers == [expected[side] for side in ("left", "right", "top", "bottom")]
    page.keyboard.press("?")
    assert page.locator(f"{VIEWER} .mv-help").is_visible()
    page.screenshot(path=str(SCREENSHOTS / "viewer-help.png"), full_page=False)
    page.keyboard.press("Escape")
    assert not page.locator(f"{VIEWER} .mv-help").is_visible()


def test_scrolling_a_volume_changes_the_slice_and_its_boxes(page_for, live_server, curator):
    x = np.arange(40, dtype=np.int16)[:, None, None]
    z = np.arange(8, dtype=np.int16)[None, None, :]
    volume = (x * 10 + 100 * z + np.zeros((40, 32, 8), dtype=np.int16)).astype(np.int16)
    nifti = nib.Nifti1Image(volume, np.eye(4)).to_bytes()
    batch = images_import(sources=[BytesSource("vol.nii", nifti)], actor=curator,
                          defaults=ImportDefaults(modality="CT"))
    slices = list(batch.images.order_by("frame_index"))
    middle = len(slices) // 2
    finding_create(image=slices[middle + 1], kind="lesion", label="next-slice nodule", actor=curator, source="manual",
                   box=(4, 4, 20, 16))
    page = page_for()
    _open_viewer(page, f"{live_server.url}/images/{slices[middle].pk}/")
    assert _api(page, "v.getSlice()") == {"index": middle, "id": slices[middle].pk, "count": len(slices)}
    boxes = f"{VIEWER} .mv-overlay rect.mv-box"
    assert page.locator(boxes).count() == 0
    value = lambda: page.locator(f"{VIEWER} .mv-readout").inner_text()  # noqa: E731
    page.mouse.move(*_screen_point(page, 5, 5))
    page.wait_for_function(f"() => document.querySelector('{VIEWER} .mv-readout').textContent.includes('HU')")
    first = value()
    page.mouse.wheel(0, 120)                                    # one notch down: the next slice
    page.wait_for_function(f"() => document.querySelector('{VIEWER}').dataset.mvSlice === '{middle + 1}'")
    page.wait_for_function(f"() => document.querySelector('{VIEWER}').dataset.mvState === 'pixels'")
    assert page.locator(boxes).count() == 1
    assert page.locator(f"{VIEWER} .mv-overlay .mv-label-text").text_content() == "next-slice nodule"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "viewer-series.png"), full_page=False)
    page.mouse.move(*_screen_point(page, 5, 6))
    page.mouse.move(*_screen_point(page, 5, 5))
    page.wait_for_function(f"(v) => document.querySelector('{VIEWER} .mv-readout').textContent !== v", arg=first)
    assert value() != first                                     # 100 HU more on the next slice
    page.locator(f"{VIEWER} .mv-stage").focus()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    page.wait_for_function(f"() => document.querySelector('{VIEWER}').dataset.mvSlice === '{middle - 1}'")
    assert page.locator(boxes).count() == 0
    assert page.locator(f"{VIEWER} .mv-slider").input_value() == str(middle)
    page.locator(f"{VIEWER} .mv-slice-link").click()
    page.wait_for_url(f"**/images/{slices[middle - 1].pk}/")


def test_the_draw_tool_dispatches_the_box_in_image_pixels(page_for, live_server, phantom_images):
    from annotation.chains.generator import ChainPolicy
    from annotation.models import QAItem
    from annotation.services.chains import chains_generate

    (image,) = phantom_images(1)
    chains_generate(image_ids=[image.pk], actor=None, seed=0, policy=ChainPolicy(steps_per_stage=8))
    item = QAItem.objects.filter(category__answer_type="box", is_current=True).first()
    assert item is not None
    page = page_for()
    _open_viewer(page, f"{live_server.url}/items/{item.pk}/edit/")
    page.evaluate(f"() => document.querySelector('{VIEWER}').addEventListener('mv:boxdrawn', (e) => "
                  "{ window.drawn = e.detail; })")
    page.locator(f"{VIEWER} .mv-stage").focus()
    page.keyboard.press("d")
    assert _api(page, "v.getTool()") == "draw"
    page.mouse.move(*_screen_point(page, 10.2, 20.6))
    page.mouse.down()
    page.mouse.move(*_screen_point(page, 60.4, 45.1), steps=5)
    page.mouse.move(*_screen_point(page, image.width + 40, 45.1), steps=2)  # past the edge: clamped
    page.mouse.up()
    box = page.evaluate("() => window.drawn")
    assert box["x0"] == pytest.approx(10.7, abs=0.2) and box["y0"] == pytest.approx(21.1, abs=0.2)
    assert box["x1"] == image.width and box["y1"] == pytest.approx(45.6, abs=0.2)
    assert all(round(v, 1) == v for v in box.values())
    assert _api(page, "v.getTool()") != "draw"
    drawn = page.locator(f"{VIEWER} .mv-overlay [data-layer='drawn'] rect.mv-box")
    assert drawn.count() == 1 and float(drawn.get_attribute("data-x1")) == image.width
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "viewer-draw-box.png"), full_page=True)
    assert _api(page, "v.setLayerBoxes('drawn', [{x0: 1, y0: 2, x1: 30, y1: 40, label: 'typed'}])")
    _frame(page)
    assert page.locator(f"{VIEWER} .mv-overlay .mv-label-text", has_text="typed").count() == 1

    # labels never collide: twenty boxes on one spot get twenty labels apart (leader lines) or a tooltip
    crowd = [{"x0": 40 + k % 3, "y0": 40 + k % 2, "x1": 60, "y1": 55, "label": f"finding {k}"} for k in range(20)]
    assert _api(page, f"v.setLayerBoxes('drawn', {crowd})")
    _frame(page)
    rects = page.evaluate(f"""() => Array.from(document.querySelectorAll('{VIEWER} .mv-overlay .mv-label-bg'))
        .map((r) => ['x', 'y', 'width', 'height'].map((a) => +r.getAttribute(a)))""")
    view = _api(page, "v.getView()")
    assert len(rects) + _api(page, "v.stats().hiddenLabels") >= 20 and len(rects) >= 10
    for i, (x, y, w, h) in enumerate(rects):
        assert 0 <= x and 0 <= y and x + w <= view["stageWidth"] and y + h <= view["stageHeight"]
        for x2, y2, w2, h2 in rects[i + 1:]:
            assert x + w <= x2 or x2 + w2 <= x or y + h <= y2 or y2 + h2 <= y, "two labels overlap"
    assert page.locator(f"{VIEWER} .mv-overlay .mv-leader").count() >= 1


def test_a_missing_source_falls_back_to_the_png_and_says_so(page_for, live_server, phantom_images):
    """The page knows the source is gone, so the browser makes no failing request (no console error)."""
    (image,) = phantom_images(1)
    resolve(image.source_file).unlink()
    page = page_for()
    page.goto(f"{live_server.url}/images/{image.pk}/")
    page.wait_for_function(f"() => document.querySelector('{VIEWER}').dataset.mvState === 'png'")
    notice = page.locator(f"{VIEWER} .mv-notice")
    assert notice.is_visible() and "Window/level unavailable" in notice.inner_text()
    assert page.locator(f"{VIEWER} button[data-tool=window]").is_disabled()
    assert _api(page, "v.getWindow()") is None
    with PILImage.open(resolve(image.file)) as png:             # the canvas shows the rendered PNG
        cx, cy = image.width // 2, image.height // 2
        assert _grey_at(page, cx, cy)[:3] == [png.convert("L").getpixel((cx, cy))] * 3


def test_dragging_the_window_on_a_512_ct_slice_keeps_30_frames_per_second(page_for, live_server, curator):
    """While the right button drags the window and the pointer moves every frame: frames drawn per second
    (requestAnimationFrame count) and window/level renders per second, both at least 30. The moves are
    dispatched in the page: the test driver's own round trip per move (some 30 ms on a loaded machine)
    would otherwise set the pace; the frame rate under the driver's own moves is printed as well."""
    data, _ = _ct_512()
    (image,) = images_import(sources=[BytesSource("ct.dcm", data)], actor=curator).images.all()
    page = page_for()
    _open_viewer(page, f"{live_server.url}/images/{image.pk}/")
    page.evaluate(f"() => document.querySelector('{VIEWER} .mv-stage').addEventListener('pointerdown', "
                  "(e) => { window.pointerId = e.pointerId; })")
    sx, sy = _screen_point(page, 256, 256)
    page.mouse.move(sx, sy)
    page.mouse.down(button="right")
    page.evaluate("""() => { window.fps = {frames: 0, running: true, t0: performance.now()};
        const tick = () => { if (window.fps.running) { window.fps.frames++; requestAnimationFrame(tick); } };
        requestAnimationFrame(tick); }""")
    for k in range(1, 61):                                       # real mouse moves
        page.mouse.move(sx + 150 * np.sin(k / 10), sy + 80 * np.cos(k / 13))
    real = page.evaluate("() => { window.fps.running = false; "
                         "return window.fps.frames / ((performance.now() - window.fps.t0) / 1000); }")
    scripted = page.evaluate("""async ([sx, sy]) => {
        const root = document.querySelector('section.mv'), stage = root.querySelector('.mv-stage');
        const v = MedViewer.get(root), before = v.stats(), t0 = performance.now();
        let frames = 0;
        await new Promise((done) => {
          const step = () => {
            frames++;
            stage.dispatchEvent(new PointerEvent('pointermove', {pointerId: window.pointerId, pointerType: 'mouse',
              clientX: sx + 150 * Math.sin(frames / 10), clientY: sy + 80 * Math.cos(frames / 13), buttons: 2,
              bubbles: true}));
            if (performance.now() - t0 < 2000) requestAnimationFrame(step); else done();
          };
          requestAnimationFrame(step);
        });
        const seconds = (performance.now() - t0) / 1000, after = v.stats(), renders = after.renders - before.renders;
        return {fps: frames / seconds, renders_per_s: renders / seconds, seconds,
                ms_per_render: (after.paintMs - before.paintMs) / Math.max(renders, 1)};
    }""", [sx, sy])
    page.mouse.up(button="right")
    print(f"\nviewer, 512x512 CT, dragging the window: {scripted['fps']:.1f} frames/s and "
          f"{scripted['renders_per_s']:.1f} window/level renders/s with a move every frame "
          f"({scripted['ms_per_render']:.2f} ms to map and put one frame); {real:.1f} frames/s under the "
          f"test driver's mouse moves")
    assert scripted["fps"] >= 30 and scripted["renders_per_s"] >= 30, scripted
