"""Label Studio result <-> pixel boxes: exact conversion, rejections (never clipping), parsing a whole result."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from labelstudio.convert import (
    SNAP_EPS_PX,
    ParsedAnnotation,
    Region,
    RegionError,
    Rejection,
    parse_result,
    percent_to_pixels,
    pixels_to_percent,
)

W, H = 300, 217          # non-square, H prime: percentages of H are rarely exact binary fractions


def _value(x, y, width, height, **extra) -> dict:
    return {"x": x, "y": y, "width": width, "height": height, "rotation": 0, **extra}


def _px(value: dict, w: int = W, h: int = H):
    return percent_to_pixels(value, original_width=w, original_height=h)


def _code(value, w: int = W, h: int = H) -> RegionError:
    with pytest.raises(RegionError) as err:
        _px(value, w, h)
    return err.value


def _rect(rid: str, x, y, width, height, label="cyst", *, control="findings", w=W, h=H, **entry) -> dict:
    labels = label if isinstance(label, list) else [label]
    return {
        "id": rid, "from_name": control, "to_name": "image", "type": "rectanglelabels",
        "original_width": w, "original_height": h, "image_rotation": 0,
        "value": _value(x, y, width, height, rectanglelabels=labels), **entry,
    }


def _attr(rid: str, control: str, *choices: str) -> dict:
    return {"id": rid, "from_name": control, "to_name": "image", "type": "choices",
            "value": _value(1, 1, 1, 1, choices=list(choices))}


def _answer(*choices: str, rid: str = "q1", control: str = "answer") -> dict:
    return {"id": rid, "from_name": control, "to_name": "image", "type": "choices", "value": {"choices": list(choices)}}


def _text(control: str, text, rid: str = "t1") -> dict:
    return {"id": rid, "from_name": control, "to_name": "image", "type": "textarea", "value": {"text": text}}


def _parse(result, **kw) -> ParsedAnnotation:
    options = {"image_width": W, "image_height": H, "box_controls": {"findings": "lesion", "anatomy": "anatomy"},
               "attribute_controls": ("shape", "margin"), "text_controls": ("rationale",)}
    options.update(kw)
    return parse_result(result, **options)


# --- percent_to_pixels ------------------------------------------------------------------------------------------

def test_exact_conversion_on_a_non_square_image():
    # 10% of 300 = 30, 30% of 300 = 90; 20% of 217 = 43.4, (20 + 40)% of 217 = 130.2
    assert _px(_value(10, 20, 20, 40)) == (30.0, 43.4, 90.0, 130.2)


def test_whole_image_and_boxes_touching_every_edge():
    assert _px(_value(0, 0, 100, 100)) == (0.0, 0.0, 300.0, 217.0)
    assert _px(_value(0, 50, 10, 50)) == (0.0, 108.5, 30.0, 217.0)        # left and bottom edges
    assert _px(_value(90, 0, 10, 10)) == (270.0, 0.0, 300.0, 21.7)        # right and top edges
    # percentages as Label Studio writes them for pixel 217: x + width lands on 100 only up to float error
    top = 100 * 200 / 217
    assert _px(_value(0, top, 100, 100 - top)) == (0.0, 200.0, 300.0, 217.0)


def test_x1_is_computed_from_x_plus_width_in_one_expression():
    x, w = 33.3, 33.4
    x0, _, x1, _ = _px(_value(x, 0, w, 10))
    assert x1 == _snap_expected((x + w) * W / 100)
    assert x0 == _snap_expected(x * W / 100)


def _snap_expected(v: float) -> float:
    return float(round(v)) if abs(v - round(v)) <= SNAP_EPS_PX else v


def test_sub_pixel_coordinates_are_kept_exactly():
    box = _px(_value(12.345, 6.789, 10.111, 20.222))
    assert box == (12.345 * 300 / 100, 6.789 * 217 / 100, (12.345 + 10.111) * 300 / 100, (6.789 + 20.222) * 217 / 100)
    assert not any(float(v).is_integer() for v in box)


def test_snapping_only_within_epsilon():
    w = 1000
    near = 100 * (10 + SNAP_EPS_PX / 2) / w          # 10.0000005 px: snapped
    far = 100 * (10 + SNAP_EPS_PX * 10) / w          # 10.00001 px: kept
    assert _px(_value(near, 0, 5, 5), w, w)[0] == 10.0
    assert _px(_value(far, 0, 5, 5), w, w)[0] == pytest.approx(10.00001, abs=1e-12)
    assert _px(_value(far, 0, 5, 5), w, w)[0] != 10.0
    # a tiny negative overshoot of the left edge snaps to 0 instead of being out of bounds
    assert _px(_value(-1e-10, 0, 10, 10))[0] == 0.0
    assert all(isinstance(v, float) for v in _px(_value(10, 10, 10, 10)))


@pytest.mark.parametrize("rotation", [90, 0.5, -1e-6, 360])
def test_rotation_is_rejected(rotation):
    assert _code(_value(10, 10, 10, 10, rotation=rotation)).code == "rotated"


def test_missing_or_tiny_rotation_is_zero():
    value = _value(10, 10, 10, 10)
    del value["rotation"]
    assert _px(value) == _px(_value(10, 10, 10, 10))
    assert _px(_value(10, 10, 10, 10, rotation=1e-12)) == _px(value)


@pytest.mark.parametrize("value, box", [
    (_value(90, 10, 20, 10), (270.0, 21.7, 330.0, 43.4)),     # past the right edge
    (_value(-5, 10, 10, 10), (-15.0, 21.7, 15.0, 43.4)),      # past the left edge
    (_value(10, 95, 10, 10), (30.0, 206.15, 60.0, 227.85)),   # past the bottom
    (_value(10, -1, 10, 10), (30.0, -2.17, 60.0, 19.53)),     # past the top
])
def test_out_of_bounds_is_rejected_not_clipped(value, box):
    err = _code(value)
    assert err.code == "out_of_bounds"
    assert "300x217 image" in err.message
    got = tuple(float(v) for v in err.message.split("(")[1].split(")")[0].split(", "))
    assert got == pytest.approx(box)


def test_out_of_bounds_message_names_pixels_and_size():
    value = _value(100 * 500 / 512, 100 * 10 / 384, 100 * 30 / 512, 100 * 30 / 384)
    err = _code(value, 512, 384)
    assert str(err) == err.message == "box (500.0, 10.0, 530.0, 40.0) lies outside the 512x384 image"
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("width, height", [(0, 10), (10, 0), (-1, 10), (10, -5)])
def test_no_area(width, height):
    assert _code(_value(10, 10, width, height)).code == "no_area"


def test_no_area_after_snapping():
    assert _code(_value(10, 10, 1e-12, 10)).code == "no_area"


@pytest.mark.parametrize("value", [
    None, "x=1", [1, 2, 3, 4],
    {"y": 1, "width": 1, "height": 1},
    _value("10", 1, 1, 1), _value(1, None, 1, 1), _value(1, 1, math.nan, 1), _value(1, 1, 1, math.inf),
    _value(True, 1, 1, 1), _value(1, 1, 1, False), _value(1, 1, 1, 1, rotation="0"), _value(1, 1, 1, 1, rotation=True),
])
def test_malformed_values(value):
    assert _code(value).code == "malformed"


@pytest.mark.parametrize("w, h", [(0, 10), (10, 0), (10.0, 10), (True, 10)])
def test_bad_image_size_is_a_programming_error(w, h):
    with pytest.raises(ValueError) as err:
        percent_to_pixels(_value(1, 1, 1, 1), original_width=w, original_height=h)
    assert not isinstance(err.value, RegionError)


# --- pixels_to_percent ------------------------------------------------------------------------------------------

def test_pixels_to_percent():
    assert pixels_to_percent((30, 0, 90, 217), width=W, height=H) == {
        "x": 10.0, "y": 0.0, "width": 20.0, "height": 100.0, "rotation": 0}


@pytest.mark.parametrize("box, code", [
    ((0, 0, 301, 10), "out_of_bounds"), ((-1, 0, 10, 10), "out_of_bounds"), ((5, 5, 5, 10), "no_area"),
    ((1, 2, 3), "malformed"), ((1, 2, 3, math.nan), "malformed"), ("abcd", "malformed"),
])
def test_pixels_to_percent_rejects_boxes_outside(box, code):
    with pytest.raises(RegionError) as err:
        pixels_to_percent(box, width=W, height=H)
    assert err.value.code == code


@st.composite
def _image_and_box(draw):
    w = draw(st.integers(1, 4096))
    h = draw(st.integers(1, 4096))
    x0 = draw(st.integers(0, w - 1))
    x1 = draw(st.integers(x0 + 1, w))
    y0 = draw(st.integers(0, h - 1))
    y1 = draw(st.integers(y0 + 1, h))
    return w, h, (float(x0), float(y0), float(x1), float(y1))


@settings(max_examples=400, deadline=None)
@given(_image_and_box())
def test_round_trip_is_exact_for_integer_boxes(case):
    w, h, box = case
    assert percent_to_pixels(pixels_to_percent(box, width=w, height=h), original_width=w, original_height=h) == box


@pytest.mark.parametrize("w, h", [(1, 1), (3, 7), (300, 217), (4095, 4096), (4096, 4093)])
def test_round_trip_full_and_edge_boxes(w, h):
    for box in [(0, 0, w, h), (0, 0, 1, 1), (w - 1, h - 1, w, h), (0, h - 1, w, h)]:
        box = tuple(float(v) for v in box)
        assert percent_to_pixels(pixels_to_percent(box, width=w, height=h), original_width=w, original_height=h) == box


# --- parse_result -----------------------------------------------------------------------------------------------

def test_parse_regions_attributes_answer_and_texts():
    result = [
        _rect("r1", 10, 20, 20, 40, "cyst"),
        _attr("r1", "shape", "round"),
        _answer("B. Cyst"),
        _rect("r2", 0, 0, 100, 100, "liver", control="anatomy"),
        _attr("r1", "margin", "smooth", "lobulated"),
        _text("rationale", ["line 1", "line 2"]),
    ]
    parsed = _parse(result)
    assert parsed.ok and parsed.rejections == ()
    assert parsed.regions == (
        Region("r1", "findings", "lesion", "cyst", (30.0, 43.4, 90.0, 130.2),
               {"shape": "round", "margin": ["smooth", "lobulated"]}),
        Region("r2", "anatomy", "anatomy", "liver", (0.0, 0.0, 300.0, 217.0), {}),
    )
    assert parsed.answer == ("B. Cyst",)
    assert parsed.texts == {"rationale": "line 1\nline 2"}


def test_attribute_before_its_rectangle_still_joins():
    parsed = _parse([_attr("r1", "shape", "oval"), _rect("r1", 1, 1, 5, 5)])
    assert parsed.ok
    assert parsed.regions[0].attributes == {"shape": "oval"}


def test_no_answer_no_texts():
    parsed = _parse([])
    assert parsed == ParsedAnnotation((), (), None, {})
    assert parsed.ok


def test_multi_choice_answer_and_plain_string_text():
    parsed = _parse([_answer("A", "C"), _text("rationale", "just one line")])
    assert parsed.answer == ("A", "C")
    assert parsed.texts == {"rationale": "just one line"}


def test_custom_answer_control():
    parsed = _parse([_answer("yes", control="q")], answer_control="q")
    assert parsed.ok and parsed.answer == ("yes",)
    assert _parse([_answer("yes", control="q")]).rejections[0].code == "unknown_control"


def _only_rejection(result, **kw) -> Rejection:
    parsed = _parse(result, **kw)
    assert len(parsed.rejections) == 1, parsed.rejections
    return parsed.rejections[0]


@pytest.mark.parametrize("result", [None, {"result": []}, "[]", 3])
def test_result_not_a_list(result):
    parsed = _parse(result)
    assert not parsed.ok
    assert parsed.regions == () and parsed.answer is None and parsed.texts == {}
    (rejection,) = parsed.rejections
    assert (rejection.result_id, rejection.control, rejection.code) == ("", "", "malformed")


@pytest.mark.parametrize("entry, fragment", [
    (None, "entry must be an object, got null"),
    ("rect", "entry must be an object, got str"),
    ({"id": "r9", "from_name": "findings", "value": {}}, "lacks 'type'"),
    ({"id": "r9", "type": "choices", "value": {}}, "lacks 'from_name'"),
    ({"id": "r9", "type": "choices", "from_name": "answer"}, "lacks 'value'"),
    ({"id": "r9", "type": "choices", "from_name": "answer", "value": "B"}, "'value' must be an object, got str"),
    ({"id": "r9", "type": "choices", "from_name": "answer", "value": None}, "'value' must be an object, got null"),
    ({"id": "r9", "type": 5, "from_name": "answer", "value": {}}, "'type' must be a non-empty string"),
    ({"id": 7, "type": "choices", "from_name": "answer", "value": {"choices": ["B"]}}, "'id' must be a string"),
    ({"type": "choices", "from_name": "answer", "value": {"choices": "B"}}, "'value.choices' must be a list"),
    ({"type": "choices", "from_name": "answer", "value": {"choices": []}}, "'value.choices' is empty"),
    ({"type": "textarea", "from_name": "rationale", "value": {"text": [1]}}, "'value.text' must be a string"),
])
def test_malformed_entries(entry, fragment):
    rejection = _only_rejection([_rect("r1", 1, 1, 5, 5), entry])
    assert rejection.code == "malformed"
    assert rejection.message.startswith("result[1]: ")
    assert fragment in rejection.message


@pytest.mark.parametrize("change, fragment", [
    ({"x": "10"}, "'x' must be a finite number"),
    ({"y": math.nan}, "'y' must be a finite number"),
    ({"width": True}, "'width' must be a finite number"),
    ({"height": None}, "'height' must be a finite number"),
    ({"rectanglelabels": "cyst"}, "'value.rectanglelabels' must be a list of strings"),
])
def test_malformed_rectangle_values(change, fragment):
    entry = _rect("r1", 1, 1, 5, 5)
    entry["value"].update(change)
    rejection = _only_rejection([entry])
    assert (rejection.result_id, rejection.control, rejection.code) == ("r1", "findings", "malformed")
    assert fragment in rejection.message


def test_malformed_rectangle_envelope():
    no_id = _rect("", 1, 1, 5, 5)
    assert "no 'id'" in _only_rejection([no_id]).message
    bad_size = _rect("r1", 1, 1, 5, 5, w="300")
    assert "'original_width' must be a positive integer" in _only_rejection([bad_size]).message
    twice = [_rect("r1", 1, 1, 5, 5), _rect("r1", 10, 10, 5, 5)]
    rejection = _only_rejection(twice)
    assert rejection.code == "malformed" and rejection.message.startswith("result[1]: a second rectangle")


@pytest.mark.parametrize("labels", [[], ["cyst", "mass"]])
def test_ambiguous_label(labels):
    rejection = _only_rejection([_rect("r1", 1, 1, 5, 5, labels)])
    assert rejection.code == "ambiguous_label"


def test_unknown_label_only_checked_when_labels_given():
    result = [_rect("r1", 1, 1, 5, 5, "tumour"), _rect("r2", 1, 1, 5, 5, "liver", control="anatomy")]
    assert _parse(result).ok
    parsed = _parse(result, labels={"findings": {"cyst", "mass"}, "anatomy": ["liver"]})
    assert [r.result_id for r in parsed.regions] == ["r2"]
    (rejection,) = parsed.rejections
    assert (rejection.result_id, rejection.code) == ("r1", "unknown_label")
    assert "'tumour'" in rejection.message and "findings" in rejection.message
    # a control missing from `labels` has no allowed labels
    assert _only_rejection(result[1:], labels={"findings": ["cyst"]}).code == "unknown_label"


def test_size_mismatch():
    rejection = _only_rejection([_rect("r1", 1, 1, 5, 5, w=600, h=434)])
    assert rejection.code == "size_mismatch"
    assert "600x434" in rejection.message and "300x217" in rejection.message
    assert _only_rejection([_rect("r1", 1, 1, 5, 5, h=218)]).code == "size_mismatch"


def test_missing_original_size_uses_the_image_size():
    entry = _rect("r1", 10, 20, 20, 40)
    del entry["original_width"], entry["original_height"], entry["image_rotation"]
    assert _parse([entry]).regions[0].box == (30.0, 43.4, 90.0, 130.2)


def test_rotations_rejected():
    assert _only_rejection([_rect("r1", 1, 1, 5, 5, image_rotation=90)]).code == "rotated"
    entry = _rect("r1", 1, 1, 5, 5)
    entry["value"]["rotation"] = 12
    assert _only_rejection([entry]).code == "rotated"


def test_out_of_bounds_rectangle_keeps_the_pixel_message():
    rejection = _only_rejection([_rect("r1", 90, 10, 20, 10)])
    assert rejection.code == "out_of_bounds"
    assert rejection.message.startswith("result[0]: box (270.0, ")
    assert rejection.message.endswith("lies outside the 300x217 image")


def test_attribute_of_a_rejected_rectangle_is_ignored_silently():
    parsed = _parse([_rect("r1", 90, 10, 20, 10), _attr("r1", "shape", "round"), _rect("r2", 1, 1, 5, 5)])
    assert [r.code for r in parsed.rejections] == ["out_of_bounds"]
    assert [r.result_id for r in parsed.regions] == ["r2"]
    assert parsed.regions[0].attributes == {}


def test_attribute_without_a_region():
    rejection = _only_rejection([_rect("r1", 1, 1, 5, 5), _attr("r7", "shape", "round")])
    assert (rejection.result_id, rejection.control, rejection.code) == ("r7", "shape", "malformed")
    assert rejection.message == "result[1]: attribute 'shape' refers to no region"


def test_second_attribute_for_the_same_region():
    rejection = _only_rejection([_rect("r1", 1, 1, 5, 5), _attr("r1", "shape", "round"), _attr("r1", "shape", "oval")])
    assert rejection.code == "malformed" and rejection.message.startswith("result[2]: a second attribute 'shape'")


def test_second_answer_and_second_text():
    parsed = _parse([_answer("A"), _answer("B", rid="q2"), _text("rationale", ["a"]), _text("rationale", ["b"])])
    assert parsed.answer == ("A",)
    assert parsed.texts == {"rationale": "a"}
    assert [(r.code, r.message.split(":")[0]) for r in parsed.rejections] == [
        ("malformed", "result[1]"), ("malformed", "result[3]")]


@pytest.mark.parametrize("entry", [
    {"id": "x", "from_name": "other", "to_name": "image", "type": "choices", "value": {"choices": ["a"]}},
    {"id": "x", "from_name": "findings", "to_name": "image", "type": "rectangle", "value": _value(1, 1, 1, 1)},
    {"id": "x", "from_name": "notes", "to_name": "image", "type": "textarea", "value": {"text": ["a"]}},
    {"id": "x", "from_name": "findings", "to_name": "image", "type": "labels", "value": {"labels": ["cyst"]}},
    {"id": "x", "from_name": "tags", "to_name": "image", "type": "hypertextlabels", "value": {}},
    {"id": "x", "from_name": "rel", "to_name": "image", "type": "relation", "value": {}},
    {"id": "x", "from_name": "polygon", "to_name": "image", "type": "polygonlabels", "value": {"points": []}},
    _rect("x", 1, 1, 5, 5, control="unlisted"),
    # an attribute control is accepted only with type "choices"
    {"id": "x", "from_name": "shape", "to_name": "image", "type": "textarea", "value": {"text": ["a"]}},
])
def test_unknown_controls_are_reported(entry):
    rejection = _only_rejection([entry])
    assert rejection.code == "unknown_control"
    assert rejection.message.startswith("result[0]: control ")


def test_relation_without_from_name_is_malformed():
    # Label Studio relations carry from_id/to_id instead of from_name: nothing we use, reported anyway
    relation = {"from_id": "r1", "to_id": "r2", "type": "relation", "direction": "right"}
    assert _only_rejection([relation]).code == "malformed"


def test_rejections_in_result_order_and_output_deterministic():
    result = [
        _attr("ghost", "shape", "round"),
        _rect("r1", 1, 1, 5, 5),
        {"from_name": "x"},
        _rect("r2", 90, 10, 20, 10),
        _rect("r3", 2, 2, 5, 5, "mass"),
        {"id": "q", "from_name": "other", "type": "choices", "value": {"choices": ["a"]}},
    ]
    first = _parse(result)
    assert [r.message.split(":")[0] for r in first.rejections] == ["result[0]", "result[2]", "result[3]", "result[5]"]
    assert [r.code for r in first.rejections] == ["malformed", "malformed", "out_of_bounds", "unknown_control"]
    assert [r.result_id for r in first.regions] == ["r1", "r3"]
    assert _parse(result) == first


def test_does_not_mutate_its_input():
    result = [_rect("r1", 1, 1, 5, 5), _attr("r1", "margin", "a", "b")]
    snapshot = repr(result)
    parsed = _parse(result)
    parsed.regions[0].attributes["margin"].append("c")
    assert repr(result) == snapshot


def test_bad_image_size_raises():
    with pytest.raises(ValueError):
        parse_result([], image_width=0, image_height=10, box_controls={})
