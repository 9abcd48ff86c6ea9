"""Issue 13: common Chinese answer phrases and abstentions."""
from __future__ import annotations

import pytest

from tests.workers.parsing.cases import ABSTAINED, ANSWERED, UNPARSEABLE, case, check

ORGANS = ["liver", "spleen", "pancreas", "left kidney"]

CHINESE = [
    case("da-an-shi", "答案是B", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("da-an-fullwidth-colon", "答案：B", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("da-an-colon", "答案: B", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("zheng-que-da-an", "正确答案是B", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("zheng-que-xuan-xiang", "正确选项是B", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("xuan", "选B", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("wo-xuan", "我选B", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("ying-xuan", "应选B", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("xuan-ze", "选择B", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("da-an-wei", "答案为B", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("zui-zhong", "最终答案：B", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("full-stop", "答案是B。", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("fullwidth-letter", "答案是Ｂ", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("after-reasoning", "根据图像，病灶位于脾脏。答案：B", ORGANS, None, ANSWERED, "B", "answer_phrase"),
    case("comma-reason", "答案是C，因为病灶在胰腺。", ORGANS, None, ANSWERED, "C", "answer_phrase"),
    case("option-text", "答案是spleen", ORGANS, None, ANSWERED, "B", "answer_phrase_text"),
    case("two-letters", "答案是A或B", ORGANS, None, UNPARSEABLE, None, "no_match"),
    case("last-wins", "答案是A。最终答案：D", ORGANS, None, ANSWERED, "D", "answer_phrase"),
    case("xuan-xiang-is-not-a-phrase", "选项A和B都不对。", ORGANS, None, UNPARSEABLE, None, "no_match"),
    case("bu-que-ding", "不确定", ORGANS, None, ABSTAINED, None, "abstain_phrase"),
    case("wo-bu-que-ding", "我不确定。", ORGANS, None, ABSTAINED, None, "abstain_phrase"),
    case("wu-fa-que-ding", "无法确定", ORGANS, None, ABSTAINED, None, "abstain_phrase"),
    case("wu-fa-pan-duan", "根据这张图像无法判断。", ORGANS, None, ABSTAINED, None, "abstain_phrase"),
    case("phrase-abstain", "答案：无法确定", ORGANS, None, ABSTAINED, None, "abstain_phrase"),
]


@pytest.mark.parametrize(("text", "options", "kwargs", "outcome", "value", "method"), CHINESE)
def test_chinese_answer_phrases(text, options, kwargs, outcome, value, method):
    check(text, options, kwargs, outcome, value, method)


def test_chinese_multi_choice_list():
    check("答案：A、C", ORGANS, {}, ANSWERED, ["A", "C"], "answer_phrase", "multi_choice")
