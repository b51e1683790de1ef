"""What JSON columns hold (kit.db.json_text): orjson's text, the standard library's where
orjson refuses a value; read back by the standard library as the value written."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from dialscore.kit.db import json_text


def nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        {"phones": [{"number": "+14155552671", "callableNow": True, "rate": 0.25}]},
        {"big": -(10**4299)},  # beyond 64 bits: the standard library writes it
        {"x": nested(300)},  # deeper than orjson goes
        "Zoë, naïve ☎",
    ],
)
def test_a_value_reads_back_as_written(value: Any) -> None:
    assert json.loads(json_text(value)) == value


def test_keys_that_are_not_strings_are_written_as_json_writes_them() -> None:
    assert json.loads(json_text({1: "a", "b": 2})) == json.loads(json.dumps({1: "a", "b": 2}))


def test_a_float_that_is_not_finite_is_written_as_null() -> None:
    assert json.loads(json_text({"rate": math.nan, "cap": math.inf})) == {
        "rate": None,
        "cap": None,
    }
