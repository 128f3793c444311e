"""Shared pytest fixtures.

`fake_anthropic`: a started `tests.fakes.fake_anthropic.FakeAnthropic` (a real Messages API
server on 127.0.0.1, free port), stopped after the test. Point the real `anthropic` client, or a
`Judge`, at `fake_anthropic.base_url` with `fake_anthropic.api_key`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# `tests.fakes` must import under plain `pytest` too, not only `python -m pytest`.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.fakes.fake_anthropic import FakeAnthropic  # noqa: E402


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A scripted fake Anthropic Messages API on a loopback port, stopped after the test."""
    with FakeAnthropic() as server:
        yield server
