"""The case page's viewer config (docs/viewer.md): the case image with gold, anatomy and model
boxes, served through the case's own URLs (an adjudicator need not be assigned the image), models
blinded as `adjudication.selectors.case_view` blinded them, and the case page's shortcuts."""
from __future__ import annotations

from django.urls import reverse

from annotation import viewer
from common import palette

#: the case page's keys (static/js/case_page.js); the viewer leaves them to the page
CASE_KEYS = (
    ("C", "gold confirmed", ["c"]), ("E", "gold corrected", ["e"]), ("A", "ambiguous", ["a"]),
    ("F", "item flawed", ["f"]), ("D", "redraw the box (box questions)", ["d"]),
    ("Enter", "save and open the next case (Ctrl+Enter from the comment)", ["enter"]),
    ("N", "next case without saving", ["n"]),
)
OPTION_KEYS = ("1–9", "pick the corrected answer", list("123456789"))


def case_viewer_config(*, case, view, user, can_read: bool, answer_type: str) -> dict:
    """`view` is the page's `CaseView`; the draw tool is on when this reader may correct a box answer."""
    gold, anatomy = [], []
    for b in view.gold_boxes:
        is_gold = b.finding.kind != "anatomy" or b.is_evidence
        label = f"{b.label} (evidence)" if b.is_evidence else b.label
        (gold if is_gold else anatomy).append(viewer.box(b.x0, b.y0, b.x1, b.y1, label))
    item = view.item
    if item is not None and answer_type == "box" and viewer.is_box(item.gold_answer):
        gold.append(viewer.box(*item.gold_answer, label=f"gold answer v{item.version}"))
    layers = [viewer.layer(viewer.GOLD, "Gold: lesions and evidence", palette.GOLD, kind="gold", boxes=gold),
              viewer.layer(viewer.ANATOMY, "Anatomy", palette.ANATOMY, kind="anatomy", dash=viewer.ANATOMY_DASH,
                           visible=False, boxes=anatomy)]
    for key, label, colour in view.models:
        style = view.model_styles.get(key) or palette.ModelStyle(colour, "", "-")
        boxes = [viewer.box(x, y, x + w, y + h, f"{name} · step {step}")
                 for layer_key, name, step, x, y, w, h in view.model_boxes if layer_key == key]
        layers.append(viewer.model_layer(key, label, style, boxes))
    keys = list(CASE_KEYS) + ([OPTION_KEYS] if item is not None and item.options else [])
    return viewer.image_config(
        image=case.image, user=user, layers=layers, draw=can_read and answer_type == "box",
        png_url=reverse("adjudication:case-image", args=[case.pk]),
        pixels_url=reverse("adjudication:case-pixels", args=[case.pk]),
        page_keys=keys, title=f"Case {case.pk}, image {case.image_id}")
