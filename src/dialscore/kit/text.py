"""Characters no stored text may hold (P74): NUL, which PostgreSQL refuses in text, and lone
UTF-16 surrogates, which are not characters and cannot be written as UTF-8."""

from __future__ import annotations

import re
from typing import Any

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

NUL_PROBLEM = "must not contain NUL characters (\\u0000)"
SURROGATE_PROBLEM = "must not contain lone surrogates (\\ud800 to \\udfff)"
# What a refused character is shown as where a request is echoed back.
REPLACEMENT = "\ufffd"

_SURROGATE = re.compile("[\ud800-\udfff]")


def text_problem(text: str) -> str | None:
    """What is wrong with ``text``, to follow its field's name; None when nothing is."""
    if "\x00" in text:
        return NUL_PROBLEM
    # ASCII text, most of what is sent, holds no surrogate: its search is skipped.
    if not text.isascii() and _SURROGATE.search(text) is not None:
        return SURROGATE_PROBLEM
    return None


def value_problem(value: Any) -> str | None:
    """What is wrong with any string of a JSON value, keys included; None when nothing is.
    Iterative, so it never recurses however deep the value is."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem is not None:
                return problem
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return None


def scrub(value: Any) -> Any:
    """A JSON value with every NUL and lone surrogate of its strings (keys included) replaced
    by U+FFFD, so that it can be stored and sent back."""
    if isinstance(value, str):
        return _SURROGATE.sub(REPLACEMENT, value).replace("\x00", REPLACEMENT)
    if isinstance(value, dict):
        return {scrub(key): scrub(item) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub(item) for item in value]
    return value


def _storable(text: str) -> str:
    problem = text_problem(text)
    if problem is not None:
        raise PydanticCustomError("text_characters", "{problem}", {"problem": problem})
    return text


# A string of a request model that is stored or used whole: refused with the request.
StorableText = AfterValidator(_storable)
# What the document says of such a string that must not be blank either: a character other
# than a space or NUL, and no NUL anywhere. (Lone surrogates have no JSON Schema pattern.)
STORABLE_NOT_BLANK = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
