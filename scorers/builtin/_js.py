"""JavaScript string semantics the Mastra formulas depend on.

Mastra's scorers run on JavaScript strings: `length` and indexing count UTF-16 code units (an
emoji is 2), `\\s` and `trim()` use JavaScript's whitespace set (which has U+FEFF and lacks
U+0085 and U+001C–U+001F, unlike Python's `str.isspace`), and `\\d` is ASCII only. These helpers
reproduce that, so a score is the same number in both languages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "JS_WHITESPACE",
    "collapse_ws",
    "js_len",
    "js_truthy",
    "remove_ws",
    "split_ws",
    "trim",
    "utf16",
]

JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""The characters JavaScript's `\\s` and `String.prototype.trim` treat as whitespace."""

_WS_CLASS = "[" + re.escape(JS_WHITESPACE) + "]"
_WS_RUN = re.compile(_WS_CLASS + "+")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def trim(text: str) -> str:
    """`text.trim()`."""
    return text.strip(JS_WHITESPACE)


def collapse_ws(text: str) -> str:
    """`text.replace(/\\s+/g, " ")`."""
    return _WS_RUN.sub(" ", text)


def remove_ws(text: str) -> str:
    """`text.replace(/\\s+/g, "")`."""
    return _WS_RUN.sub("", text)


def split_ws(text: str) -> list[str]:
    """`text.split(/\\s+/)` (empty pieces kept, as JavaScript keeps them)."""
    return _WS_RUN.split(text)


def js_len(text: str) -> int:
    """`text.length`: UTF-16 code units."""
    return len(text) + len(_ASTRAL.findall(text))


def _units(text: str) -> list[int]:
    return memoryview(text.encode("utf-16-le")).cast("H").tolist()


def utf16(*texts: str) -> list[Sequence[Any]]:
    """The strings as JavaScript indexes them, comparable with each other: themselves when
    none has an astral character, else all as lists of UTF-16 code units (so `[i]`, slices
    and equality of items match JavaScript's)."""
    if all(t.isascii() or not _ASTRAL.search(t) for t in texts):
        return list(texts)
    return [_units(t) for t in texts]


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness: `[]` and `{}` are true, `0`, `""`, `null` and NaN are false."""
    if value is None or value is False:
        return False
    if isinstance(value, bool):
        return True
    if isinstance(value, (int, float)):
        return value == value and value != 0
    if isinstance(value, str):
        return value != ""
    return True
