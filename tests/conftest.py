"""Shared pytest fixtures.

`fake_anthropic`: a started `tests.fakes.fake_anthropic.FakeAnthropic` (a strict Messages API
server on 127.0.0.1, free port), stopped after the test. Point the real `anthropic` client, or a
`Judge`, at `fake_anthropic.base_url` with `fake_anthropic.api_key`. At teardown of a test that
passed, `verify()` fails it when a scripted reply went unused, the script ran out, a
`structured()` reply met an unstructured request, or a request was refused as the real API would
refuse it (a test provoking that takes the refusals with `take_rejections()`).
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

# `tests.fakes` must import under plain `pytest` too, not only `python -m pytest`.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.fakes.fake_anthropic import FakeAnthropic  # noqa: E402
from tests.fakes.fake_openai import FakeOpenAI  # noqa: E402

_CALL_PASSED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_CALL_PASSED] = report.passed
    return report


@pytest.fixture
def fake_anthropic(request: pytest.FixtureRequest) -> Iterator[FakeAnthropic]:
    """A scripted, strict fake Anthropic Messages API on a loopback port, stopped after the test.

    The SDK schema must be there: this venv has `anthropic` and pydantic.
    """
    with FakeAnthropic() as server:
        assert server.schema is not None, "the anthropic SDK is needed to check request bodies"
        yield server
    if request.node.stash.get(_CALL_PASSED, False):
        server.verify()  # a test that failed or was skipped is not failed again


@pytest.fixture
def fake_openai(request: pytest.FixtureRequest) -> Iterator[FakeOpenAI]:
    """A scripted, strict fake OpenAI chat-completions API (and Azure OpenAI's deployment
    route) on a loopback port, stopped after the test; `verify()`d like `fake_anthropic`."""
    with FakeOpenAI(strict=True) as server:
        yield server
    if request.node.stash.get(_CALL_PASSED, False):
        server.verify()
