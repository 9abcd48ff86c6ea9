"""Shared shape of the issue-13 parser tables: (text, options, kwargs, outcome, value, method)."""
from __future__ import annotations

import pytest

from workers.parsing import parse_answer

ANSWERED, ABSTAINED, UNPARSEABLE = "answered", "abstained", "unparseable"


def case(id_: str, text, options, kwargs: dict | None, outcome: str, value, method: str):
    return pytest.param(text, list(options), dict(kwargs or {}), outcome, value, method, id=id_)


def check(text, options, kwargs, outcome, value, method, answer_type: str = "single_choice"):
    result = parse_answer(text, answer_type=answer_type, options=options, **kwargs)
    assert (result.outcome, result.value, result.method) == (outcome, value, method), result
    assert result.detail and "internal parser error" not in result.detail
    return result
