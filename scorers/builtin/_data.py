"""Package data (lexicons, stop words), loaded once on first use."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["load"]


@cache
def load(name: str) -> Any:
    """The parsed JSON file `scorers/builtin/data/<name>`."""
    text = resources.files("scorers.builtin").joinpath("data", name).read_text(encoding="utf-8")
    return json.loads(text)
