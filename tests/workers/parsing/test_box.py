"""Table-driven tests: box answers (syntaxes, scales, corner order, degenerate and ambiguous boxes)."""
from __future__ import annotations

import pytest

from workers.parsing import parse_answer

SQ = (512, 512)
WIDE = (1000, 500)
ABSTAIN = "ABSTAIN"


def case(id_: str, text: str | None, expected, method: str, *, size=SQ, fmt: str = "auto"):
    return pytest.param(text, size, fmt, expected, method, id=id_)


BOXES = [
    # -- pixel quads and their spellings
    case("brackets", "[10, 20, 30, 40]", [10, 20, 30, 40], "box_pixel"),
    case("parens", "(10, 20, 30, 40)", [10, 20, 30, 40], "box_pixel"),
    case("no-spaces", "[10,20,30,40]", [10, 20, 30, 40], "box_pixel"),
    case("space-separated", "[10 20 30 40]", [10, 20, 30, 40], "box_pixel"),
    case("floats", "[10.5, 20.25, 30.75, 40.125]", [10.5, 20.25, 30.75, 40.125], "box_pixel"),
    case("in-sentence", "The lesion is located at [120, 80, 260, 200] in the left lobe.", [120, 80, 260, 200],
         "box_pixel"),
    case("double-brackets", "[[120, 80, 260, 200]]", [120, 80, 260, 200], "box_pixel"),
    case("bare-numbers", "120, 80, 260, 200", [120, 80, 260, 200], "box_pixel"),
    case("bare-spaces", "120 80 260 200", [120, 80, 260, 200], "box_pixel"),
    case("answer-bare", "Answer: 120, 80, 260, 200", [120, 80, 260, 200], "box_pixel"),
    case("named", "x0=10, y0=20, x1=30, y1=40", [10, 20, 30, 40], "box_pixel"),
    case("named-colon", "x0: 10, y0: 20, x1: 30, y1: 40", [10, 20, 30, 40], "box_pixel"),
    case("named-x1x2", "x1=10, y1=20, x2=30, y2=40", [10, 20, 30, 40], "box_pixel"),
    case("named-minmax", "xmin=10 ymin=20 xmax=30 ymax=40", [10, 20, 30, 40], "box_pixel"),
    case("named-ltrb", "left: 10, top: 20, right: 30, bottom: 40", [10, 20, 30, 40], "box_pixel"),
    case("points-parens", "(10, 20), (30, 40)", [10, 20, 30, 40], "box_pixel"),
    case("points-brackets", "[[10, 20], [30, 40]]", [10, 20, 30, 40], "box_pixel"),
    case("points-to", "from (10, 20) to (30, 40)", [10, 20, 30, 40], "box_pixel"),
    case("template-then-values", "[x0, y0, x1, y1] = [12, 34, 56, 78]", [12, 34, 56, 78], "box_pixel"),
    case("template-parens", "(x0, y0, x1, y1) = (12, 34, 56, 78)", [12, 34, 56, 78], "box_pixel"),
    case("code-fence", "```\n[10, 20, 30, 40]\n```", [10, 20, 30, 40], "box_pixel"),
    case("bold", "**[10, 20, 30, 40]**", [10, 20, 30, 40], "box_pixel"),
    case("negative", "[-5, -10, 30, 40]", [-5, -10, 30, 40], "box_pixel"),
    case("beyond-1000", "[1200, 100, 1300, 200]", [1200, 100, 1300, 200], "box_pixel"),
    case("no-size-pixel", "[100, 200, 800, 900]", [100, 200, 800, 900], "box_pixel", size=None),
    case("inside-image", "[100, 200, 300, 400]", [100, 200, 300, 400], "box_pixel"),
    case("explicit-pixel", "[0.5, 0.5, 0.9, 0.9]", [0.5, 0.5, 0.9, 0.9], "box_pixel", fmt="pixel"),
    case("size-none-tuple", "[10, 20, 30, 40]", [10, 20, 30, 40], "box_pixel", size=(None, None)),
    # -- reversed corners
    case("reversed", "[30, 40, 10, 20]", [10, 20, 30, 40], "box_pixel"),
    case("reversed-x", "[30, 20, 10, 40]", [10, 20, 30, 40], "box_pixel"),
    case("reversed-y", "[10, 40, 30, 20]", [10, 20, 30, 40], "box_pixel"),
    case("reversed-unit", "[0.5, 0.5, 0.25, 0.25]", [128, 128, 256, 256], "box_unit"),
    # -- 0-1 boxes
    case("unit", "[0.1, 0.2, 0.3, 0.4]", [51.2, 102.4, 153.6, 204.8], "box_unit"),
    case("unit-wide", "[0.25, 0.25, 0.5, 0.75]", [250, 125, 500, 375], "box_unit", size=WIDE),
    case("unit-full", "[0, 0, 1, 1]", [0, 0, 512, 512], "box_unit"),
    case("unit-sentence", "Box (normalised): (0.5, 0.5, 0.75, 1.0)", [256, 256, 384, 512], "box_unit"),
    case("unit-explicit", "[0.2, 0.2, 0.4, 0.4]", [102.4, 102.4, 204.8, 204.8], "box_unit", fmt="unit"),
    case("unit-no-size", "[0.1, 0.2, 0.3, 0.4]", None, "needs_image_size", size=None),
    case("unit-zero-size", "[0.1, 0.2, 0.3, 0.4]", None, "needs_image_size", size=(0, 0)),
    # -- 0-1000 boxes
    case("k-auto", "[100, 200, 800, 900]", [51.2, 102.4, 409.6, 460.8], "box_1000"),
    case("k-auto-x-only", "[600, 100, 700, 200]", [307.2, 51.2, 358.4, 102.4], "box_1000"),
    case("k-auto-wide-y", "[100, 600, 200, 700]", [100, 300, 200, 350], "box_1000", size=WIDE),
    case("k-explicit", "[100, 200, 300, 400]", [51.2, 102.4, 153.6, 204.8], "box_1000", fmt="norm1000"),
    case("k-explicit-no-size", "[100, 200, 300, 400]", None, "needs_image_size", size=None, fmt="norm1000"),
    case("k-1000-edge", "[0, 0, 1000, 1000]", [0, 0, 512, 512], "box_1000"),
    # -- Qwen / <box> tokens (0-1000)
    case("qwen", "<|box_start|>(100,200),(300,400)<|box_end|>", [51.2, 102.4, 153.6, 204.8], "box_qwen"),
    case("qwen-ref", "<|object_ref_start|>lesion<|object_ref_end|><|box_start|>(100,200),(300,400)<|box_end|>",
         [100, 100, 300, 200], "box_qwen", size=WIDE),
    case("qwen-spaces", "<|box_start|>( 100 , 200 ) , ( 300 , 400 )<|box_end|>", [51.2, 102.4, 153.6, 204.8],
         "box_qwen"),
    case("qwen-reversed", "<|box_start|>(300,400),(100,200)<|box_end|>", [51.2, 102.4, 153.6, 204.8], "box_qwen"),
    case("qwen-small-values", "<|box_start|>(10,20),(30,40)<|box_end|>", [5.12, 10.24, 15.36, 20.48], "box_qwen"),
    case("box-tag", "<box>(100,200),(300,400)</box>", [51.2, 102.4, 153.6, 204.8], "box_qwen"),
    case("box-tag-quad", "<box>[[100, 200, 300, 400]]</box>", [51.2, 102.4, 153.6, 204.8], "box_qwen"),
    case("qwen-pixel-format", "<|box_start|>(100,200),(300,400)<|box_end|>", [100, 200, 300, 400], "box_qwen",
         fmt="pixel"),
    case("qwen-no-size", "<|box_start|>(100,200),(300,400)<|box_end|>", None, "needs_image_size", size=None),
    case("qwen-three-numbers", "<|box_start|>(100,200),(300)<|box_end|>", None, "no_match"),
    # -- JSON
    case("json-bbox2d", '{"bbox_2d": [120, 80, 260, 200]}', [120, 80, 260, 200], "box_json"),
    case("json-list-label", '```json\n[{"bbox_2d": [120, 80, 260, 200], "label": "lesion"}]\n```',
         [120, 80, 260, 200], "box_json"),
    case("json-bbox", '{"bbox": [0.1, 0.2, 0.3, 0.4]}', [51.2, 102.4, 153.6, 204.8], "box_json"),
    case("json-box-1000", '{"box": [100, 200, 800, 900]}', [51.2, 102.4, 409.6, 460.8], "box_json"),
    case("json-named", '{"x0": 10, "y0": 20, "x1": 30, "y1": 40}', [10, 20, 30, 40], "box_json"),
    case("json-minmax", '{"xmin": 10, "ymin": 20, "xmax": 30, "ymax": 40}', [10, 20, 30, 40], "box_json"),
    case("json-single-quotes", "{'bbox_2d': [10, 20, 30, 40]}", [10, 20, 30, 40], "box_json"),
    case("json-reversed", '{"bbox_2d": [260, 200, 120, 80]}', [120, 80, 260, 200], "box_json"),
    # -- several boxes
    case("same-box-twice", "[10, 20, 30, 40] and again [10, 20, 30, 40]", [10, 20, 30, 40], "box_pixel"),
    case("two-boxes", "[10, 20, 30, 40] or [50, 60, 70, 80]", None, "ambiguous"),
    case("two-json", '[{"bbox_2d": [1, 2, 30, 40]}, {"bbox_2d": [50, 60, 70, 80]}]', None, "ambiguous"),
    case("phrase-picks", "First guess [1, 2, 3, 4]. Final answer: [10, 20, 30, 40]", [10, 20, 30, 40], "box_pixel"),
    case("last-phrase-picks", "Answer: [1, 2, 3, 4]\nFinal answer: [10, 20, 30, 40]", [10, 20, 30, 40], "box_pixel"),
    case("think-hides-box", "<think>[1, 2, 3, 4]?</think>[10, 20, 30, 40]", [10, 20, 30, 40], "box_pixel"),
    # -- degenerate
    case("zero-width", "[10, 20, 10, 40]", None, "degenerate_box"),
    case("zero-height", "[10, 20, 30, 20]", None, "degenerate_box"),
    case("point", "[5, 5, 5, 5]", None, "degenerate_box"),
    case("unit-zero", "[0.5, 0.1, 0.5, 0.9]", None, "degenerate_box"),
    case("huge-number", "[" + "9" * 400 + ", 2, 3, 4]", None, "degenerate_box"),
    # -- abstentions and failures
    case("cannot-locate", "I cannot determine the location of the lesion.", ABSTAIN, "abstain_phrase"),
    case("not-sure", "Not sure where the lesion is.", ABSTAIN, "abstain_phrase"),
    case("unsure-but-box", "I'm not sure, but [10, 20, 30, 40]", [10, 20, 30, 40], "box_pixel"),
    case("no-lesion", "There is no lesion.", None, "no_match"),
    case("three-numbers", "[10, 20, 30]", None, "no_match"),
    case("five-numbers", "[10, 20, 30, 40, 50]", None, "no_match"),
    case("template-only", "[x0, y0, x1, y1]", None, "no_match"),
    case("image-size-echo", "The image is 512x512.", None, "no_match"),
    case("exponent", "[1e3, 2, 3, 4]", None, "no_match"),
    case("empty", "", None, "empty"),
    case("none-input", None, None, "empty"),
]


@pytest.mark.parametrize(("text", "size", "fmt", "expected", "method"), BOXES)
def test_box(text, size, fmt, expected, method):
    result = parse_answer(text, answer_type="box", image_size=size, box_format=fmt)
    if expected == ABSTAIN:
        assert (result.outcome, result.value, result.method) == ("abstained", None, method), result
    elif expected is None:
        assert (result.outcome, result.value, result.method) == ("unparseable", None, method), result
    else:
        assert (result.outcome, result.method) == ("answered", method), result
        assert result.value == pytest.approx(expected, abs=1e-6)
        assert all(isinstance(v, float) for v in result.value)
        x0, y0, x1, y1 = result.value
        assert x0 < x1 and y0 < y1
    assert result.detail


def test_box_detail_says_scale():
    assert "scale=1000" in parse_answer("[100, 200, 800, 900]", answer_type="box", image_size=SQ).detail


def test_missing_size_detail_is_clear():
    detail = parse_answer("[0.1, 0.2, 0.3, 0.4]", answer_type="box").detail
    assert "image size" in detail
