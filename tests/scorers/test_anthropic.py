"""The Anthropic provider classifies its own failures: the `scorers.errors` tree, with the SDK
error as `__cause__`, over HTTP against the fake Messages API."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from scorers._anthropic import AnthropicProvider, judge_error
from scorers.errors import (
    JudgeAuthError,
    JudgeRequestError,
    JudgeUnavailableError,
)
from scorers.judge import JudgeRequest
from tests.fakes.fake_anthropic import (
    FakeAnthropic,
    context_too_long,
    disconnect,
    forbidden,
    overloaded,
    rate_limited,
    raw,
    server_error,
    text,
    unauthorized,
)


def request_to(fake: FakeAnthropic, **fields: Any) -> JudgeRequest:
    return JudgeRequest(model="claude-haiku-5-5", system="s", max_tokens=5,
                        messages=[{"role": "user", "content": "x"}], api_key=fake.api_key,
                        base_url=fake.base_url, **fields)


@pytest.mark.parametrize(("reply", "error", "cause", "retryable", "code"), [
    (rate_limited(retry_after=2), JudgeUnavailableError, anthropic.RateLimitError, True,
     "rate_limit_error"),
    (overloaded(), JudgeUnavailableError, anthropic.APIStatusError, True, "overloaded_error"),
    (server_error(), JudgeUnavailableError, anthropic.InternalServerError, True, "api_error"),
    (disconnect(), JudgeUnavailableError, anthropic.APIConnectionError, True,
     "connection_error"),
    (unauthorized(), JudgeAuthError, anthropic.AuthenticationError, False,
     "authentication_error"),
    (forbidden(), JudgeAuthError, anthropic.PermissionDeniedError, False, "permission_error"),
    (context_too_long(), JudgeRequestError, anthropic.BadRequestError, False,
     "invalid_request_error"),
    (raw(200, "this is not json"), JudgeUnavailableError, Exception, False, None),
])
async def test_failures_are_raised_as_the_error_tree_with_the_sdk_error_as_cause(
        fake_anthropic: FakeAnthropic, reply: Any, error: type[Exception],
        cause: type[Exception], retryable: bool, code: str | None) -> None:
    fake_anthropic.enqueue(reply)
    with pytest.raises(error) as info:
        await AnthropicProvider().complete(request_to(fake_anthropic))
    assert isinstance(info.value.__cause__, cause)
    assert info.value.retryable is retryable  # type: ignore[attr-defined]
    assert info.value.code == code  # type: ignore[attr-defined]
    assert fake_anthropic.api_key not in str(info.value)


async def test_retry_after_is_read_from_the_reply(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(rate_limited(retry_after=2), overloaded())
    provider = AnthropicProvider()
    with pytest.raises(JudgeUnavailableError) as info:
        await provider.complete(request_to(fake_anthropic))
    assert info.value.retry_after == 2.0
    with pytest.raises(JudgeUnavailableError) as info:
        await provider.complete(request_to(fake_anthropic))
    assert info.value.retry_after is None


async def test_a_timeout_is_unavailable(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(text("too late", delay=2.0))
    with pytest.raises(JudgeUnavailableError) as info:
        await AnthropicProvider().complete(request_to(fake_anthropic, timeout=0.2))
    assert isinstance(info.value.__cause__, anthropic.APITimeoutError)
    assert info.value.code == "timeout"


async def test_no_api_key_is_an_auth_error_before_any_request(
        fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE",
                 "ANTHROPIC_CONFIG_DIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")
    request = JudgeRequest(model="m", system="s", max_tokens=5, messages=[],
                           base_url=fake_anthropic.base_url)
    with pytest.raises(JudgeAuthError, match="ANTHROPIC_API_KEY") as info:
        await AnthropicProvider().complete(request)
    assert not info.value.retryable
    assert fake_anthropic.requests == []


def test_auth_is_recognised_by_status_and_code_as_well() -> None:
    class Bare(Exception):
        pass

    by_status = Bare("x")
    by_status.status_code = 401  # type: ignore[attr-defined]
    by_code = Bare("y")
    by_code.body = {"error": {"type": "invalid_api_key"}}  # type: ignore[attr-defined]
    assert isinstance(judge_error(by_status), JudgeAuthError)
    assert isinstance(judge_error(by_code), JudgeAuthError)
    other = Bare("other")
    assert judge_error(other) is other  # nothing applies: left as it is
