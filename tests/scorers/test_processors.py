"""Error processors and retries, over HTTP against the fake Anthropic server.

The processors see what the provider raised (the `scorers.errors` tree, the SDK error as its
cause). Waits are asserted as lower bounds measured between recorded request arrivals (never upper
bounds); the exact waits the processor chose are asserted on its decisions.
"""

from __future__ import annotations

import asyncio
from email.utils import formatdate
from time import time
from typing import Any

import anthropic
import pytest

from scorers import (
    Judge,
    JudgeAuthError,
    JudgeRequestError,
    JudgeUnavailableError,
    Matcher,
    PromptStep,
    ScorerRun,
    ScorerRunError,
    StreamErrorRetryProcessor,
    create_scorer,
)
from scorers._anthropic import AnthropicProvider
from scorers.judge import JudgeRequest
from scorers.processors import RetryDecision, exponential_delay
from tests.fakes.fake_anthropic import (
    FakeAnthropic,
    context_too_long,
    disconnect,
    forbidden,
    overloaded,
    rate_limited,
    raw,
    server_error,
    structured,
    unauthorized,
)


def make_run() -> ScorerRun:
    return ScorerRun(input="question", output="answer")


def scorer_with(fake: FakeAnthropic, *processors: Any, **judge_fields: Any) -> Any:
    judge = Judge(instructions="Judge.", base_url=fake.base_url, api_key=fake.api_key,
                  error_processors=list(processors), **judge_fields)
    return create_scorer(id="retry", description="", judge=judge).generate_score(
        PromptStep(description="s", create_prompt=lambda run: "Score it."))


async def provider_error(fake: FakeAnthropic, reply: Any) -> BaseException:
    """The exception the Anthropic provider raises for `reply` (what the processors see)."""
    fake.enqueue(reply)
    request = JudgeRequest(model="claude-haiku-5-5", system="s", max_tokens=5,
                           messages=[{"role": "user", "content": "x"}], api_key=fake.api_key,
                           base_url=fake.base_url, timeout=5)
    try:
        await AnthropicProvider().complete(request)
    except Exception as exc:  # noqa: BLE001 - we want whatever the provider raised
        assert isinstance(exc.__cause__, anthropic.APIError)  # the SDK error is kept
        return exc
    raise AssertionError("the provider did not raise")


class Waits(list[float]):
    """A judge's `sleep`: records each wait between retries and returns at once (no wall clock)."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


# --------------------------------------------------------------------------- retries over HTTP


async def test_429_is_retried_after_the_capped_retry_after(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(rate_limited(retry_after=1), rate_limited(retry_after=1),
                           structured({"score": 0.9}))
    processor = StreamErrorRetryProcessor(max_retries=3, max_retry_after=0.2)
    waits = Waits()
    result = await scorer_with(fake_anthropic, processor, sleep=waits).run(make_run())
    assert result.score == 0.9
    assert len(fake_anthropic.message_requests) == 3
    assert waits == [0.2, 0.2]  # Retry-After 1 s, capped
    execution = result.judge["generate_score"].executions[0]
    assert (execution.attempt_count, execution.model_call_count) == (1, 3)


async def test_retry_after_ms_wins_over_retry_after(fake_anthropic: FakeAnthropic) -> None:
    error = await provider_error(fake_anthropic, rate_limited(retry_after=30, retry_after_ms=150))
    assert isinstance(error, JudgeUnavailableError)
    assert error.retry_after == pytest.approx(0.15)
    decision = await StreamErrorRetryProcessor(max_retry_after=5).process_api_error(
        error=error, retry_count=0)
    assert decision == RetryDecision(retry=True, delay=pytest.approx(0.15))
    fake_anthropic.clear()
    fake_anthropic.enqueue(rate_limited(retry_after=30, retry_after_ms=150),
                           structured({"score": 0.1}))
    waits = Waits()
    result = await scorer_with(fake_anthropic, StreamErrorRetryProcessor(max_retry_after=5),
                               sleep=waits).run(make_run())
    assert result.score == 0.1
    assert waits == [pytest.approx(0.15)]


async def test_retry_after_as_an_http_date(fake_anthropic: FakeAnthropic) -> None:
    error = await provider_error(fake_anthropic, rate_limited(
        retry_after=formatdate(time() + 3600, usegmt=True)))
    seconds = error.retry_after  # type: ignore[attr-defined]
    assert seconds is not None and 3000 < seconds <= 3600  # an hour, to the second (no race)
    past = await provider_error(fake_anthropic, rate_limited(
        retry_after=formatdate(time() - 60, usegmt=True)))
    assert past.retry_after == 0.0  # type: ignore[attr-defined]


async def test_retry_after_is_capped_but_a_longer_delay_wins(
        fake_anthropic: FakeAnthropic) -> None:
    error = await provider_error(fake_anthropic, rate_limited(retry_after=100))
    capped = await StreamErrorRetryProcessor(max_retry_after=2.5).process_api_error(
        error=error, retry_count=0)
    assert capped.delay == 2.5
    longer = await StreamErrorRetryProcessor(delay=7, max_retry_after=2.5).process_api_error(
        error=error, retry_count=0)
    assert longer.delay == 7
    no_header = await provider_error(fake_anthropic, overloaded())
    plain = await StreamErrorRetryProcessor(delay=0.5).process_api_error(
        error=no_header, retry_count=0)
    assert plain == RetryDecision(retry=True, delay=0.5)


async def test_delay_may_be_a_callable_of_the_retry_count(fake_anthropic: FakeAnthropic) -> None:
    counts: list[int] = []

    def backoff(retry_count: int) -> float:
        counts.append(retry_count)
        return 0.1 * (2 ** retry_count)

    fake_anthropic.enqueue(overloaded(), server_error(), structured({"score": 0.3}))
    waits = Waits()
    result = await scorer_with(
        fake_anthropic, StreamErrorRetryProcessor(max_retries=5, delay=backoff),
        sleep=waits).run(make_run())
    assert result.score == 0.3
    assert counts == [0, 1]
    assert waits == [pytest.approx(0.1), pytest.approx(0.2)]


async def test_async_delay_and_bad_delays(fake_anthropic: FakeAnthropic) -> None:
    error = await provider_error(fake_anthropic, overloaded())

    async def slow(retry_count: int) -> float:
        await asyncio.sleep(0)
        return 1.25

    assert (await StreamErrorRetryProcessor(delay=slow).process_api_error(
        error=error, retry_count=0)).delay == 1.25
    for bad in (-3.0, float("nan")):
        assert (await StreamErrorRetryProcessor(delay=bad).process_api_error(
            error=error, retry_count=0)).delay == 0.0


@pytest.mark.parametrize("reply", [overloaded(), server_error(), rate_limited(), disconnect()])
async def test_transient_failures_are_retried(fake_anthropic: FakeAnthropic, reply: Any) -> None:
    fake_anthropic.enqueue(reply, structured({"score": 0.8}))
    result = await scorer_with(fake_anthropic, StreamErrorRetryProcessor()).run(make_run())
    assert result.score == 0.8
    assert len(fake_anthropic.message_requests) == 2


async def test_timeouts_are_retried(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(structured({"score": 0.0}, delay=2.0), structured({"score": 0.6}))
    result = await scorer_with(fake_anthropic, StreamErrorRetryProcessor(),
                               timeout=0.2).run(make_run())
    assert result.score == 0.6
    assert len(fake_anthropic.message_requests) == 2


async def test_the_processors_max_retries_caps_retries(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(overloaded(), overloaded(), overloaded())  # a 4th: script exhausted
    with pytest.raises(ScorerRunError) as info:
        await scorer_with(fake_anthropic, StreamErrorRetryProcessor(max_retries=2)).run(make_run())
    assert isinstance(info.value.__cause__, JudgeUnavailableError)
    assert len(fake_anthropic.message_requests) == 3
    execution = info.value.partial_result.judge["generate_score"].executions[0]
    assert (execution.status, execution.attempt_count, execution.model_call_count) == (
        "failed", 1, 3)
    assert execution.error is not None and execution.error.code == "overloaded_error"


async def test_max_processor_retries_caps_the_total(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(server_error(), server_error())
    with pytest.raises(ScorerRunError):
        await scorer_with(fake_anthropic, StreamErrorRetryProcessor(max_retries=5),
                          max_processor_retries=1).run(make_run())
    assert len(fake_anthropic.message_requests) == 2


async def test_the_default_cap_is_10_with_error_processors(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(*[server_error() for _ in range(11)])
    with pytest.raises(ScorerRunError):
        await scorer_with(fake_anthropic, StreamErrorRetryProcessor(max_retries=50)).run(
            make_run())
    assert len(fake_anthropic.message_requests) == 11  # 1 call + 10 retries


async def test_no_error_processors_means_no_retries(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(rate_limited(retry_after=0))
    with pytest.raises(ScorerRunError) as info:
        await scorer_with(fake_anthropic, max_processor_retries=5).run(make_run())
    assert isinstance(info.value.__cause__, JudgeUnavailableError)
    assert len(fake_anthropic.message_requests) == 1


@pytest.mark.parametrize("reply", [unauthorized(), forbidden()])
async def test_auth_failures_are_never_retried(fake_anthropic: FakeAnthropic, reply: Any) -> None:
    fake_anthropic.enqueue(reply)
    processor = StreamErrorRetryProcessor(max_retries=5, retry_unknown_errors=True,
                                          matchers=[lambda error: True])
    with pytest.raises(ScorerRunError) as info:
        await scorer_with(fake_anthropic, processor).run(make_run())
    assert isinstance(info.value.__cause__, JudgeAuthError)
    assert len(fake_anthropic.message_requests) == 1


async def test_an_auth_error_anywhere_in_the_chain_is_never_retried() -> None:
    wrapped = RuntimeError("a wrapper's own error")
    wrapped.__cause__ = JudgeAuthError("refused")
    processor = StreamErrorRetryProcessor(max_retries=5, retry_unknown_errors=True,
                                          matchers=[lambda error: True])
    for error in (JudgeAuthError("refused"), wrapped):
        decision = await processor.process_api_error(error=error, retry_count=0)
        assert decision.retry is False


async def test_the_processor_reads_only_what_the_provider_classified() -> None:
    processor = StreamErrorRetryProcessor(max_retries=2, delay=0.5, max_retry_after=10)
    busy = JudgeUnavailableError("busy", retry_after=4.0)
    assert await processor.process_api_error(error=busy, retry_count=0) == RetryDecision(
        retry=True, delay=4.0)
    not_transient = JudgeUnavailableError("garbage reply", retryable=False)
    assert (await processor.process_api_error(error=not_transient, retry_count=0)).retry is False
    foreign = ConnectionError("a provider that does not classify its errors")
    assert (await processor.process_api_error(error=foreign, retry_count=0)).retry is False
    assert (await StreamErrorRetryProcessor(retry_unknown_errors=True).process_api_error(
        error=foreign, retry_count=0)).retry is True


async def test_a_matcher_sees_the_sdk_error_in_the_chain(fake_anthropic: FakeAnthropic) -> None:
    error = await provider_error(fake_anthropic, context_too_long())
    assert isinstance(error, JudgeRequestError)
    assert isinstance(error.__cause__, anthropic.BadRequestError)
    processor = StreamErrorRetryProcessor(matchers=[
        lambda e: isinstance(e, anthropic.BadRequestError) and e.status_code == 400])
    assert (await processor.process_api_error(error=error, retry_count=0)).retry is True


async def test_unknown_errors_only_with_retry_unknown_errors(
        fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(raw(200, "<html>gateway</html>", content_type="text/html"),
                           structured({"score": 1.0}))
    with pytest.raises(ScorerRunError) as info:
        await scorer_with(fake_anthropic, StreamErrorRetryProcessor()).run(make_run())
    assert isinstance(info.value.__cause__, JudgeUnavailableError)
    assert len(fake_anthropic.message_requests) == 1
    fake_anthropic.clear()
    fake_anthropic.enqueue(raw(200, "<html>gateway</html>", content_type="text/html"),
                           structured({"score": 0.7}))
    result = await scorer_with(fake_anthropic, StreamErrorRetryProcessor(
        retry_unknown_errors=True)).run(make_run())
    assert result.score == 0.7
    assert len(fake_anthropic.message_requests) == 2


async def test_400_is_not_retried_unless_a_matcher_says_so(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(context_too_long())
    with pytest.raises(ScorerRunError) as info:
        await scorer_with(fake_anthropic, StreamErrorRetryProcessor(max_retries=3)).run(make_run())
    assert isinstance(info.value.__cause__, JudgeRequestError)
    assert len(fake_anthropic.message_requests) == 1

    fake_anthropic.clear()
    fake_anthropic.enqueue(context_too_long(), context_too_long())
    bad_request = Matcher(match=lambda e: getattr(e, "status_code", None) == 400, max_retries=1,
                          delay=0.05)
    waits = Waits()
    with pytest.raises(ScorerRunError):
        await scorer_with(fake_anthropic, StreamErrorRetryProcessor(
            max_retries=5, matchers=[bad_request]), sleep=waits).run(make_run())
    assert len(fake_anthropic.message_requests) == 2  # the matcher's own max_retries
    assert waits == [0.05]  # the matcher's own delay


async def test_first_matching_matcher_wins_with_its_own_policy(
        fake_anthropic: FakeAnthropic) -> None:
    error = await provider_error(fake_anthropic, overloaded())
    processor = StreamErrorRetryProcessor(
        max_retries=1, delay=0.0,
        matchers=[Matcher(match=lambda e: getattr(e, "status_code", 0) == 529, max_retries=4,
                          delay=lambda n: 0.5 + n),
                  Matcher(match=lambda e: True, max_retries=0)])
    assert (await processor.process_api_error(error=error, retry_count=3)) == RetryDecision(
        retry=True, delay=3.5)
    assert (await processor.process_api_error(error=error, retry_count=4)).retry is False
    other = await provider_error(fake_anthropic, server_error())
    assert (await processor.process_api_error(error=other, retry_count=0)).retry is False


async def test_only_the_failing_steps_judge_call_is_retried(
        fake_anthropic: FakeAnthropic) -> None:
    calls = {"preprocess": 0}

    def preprocess(run: ScorerRun) -> dict[str, str]:
        calls["preprocess"] += 1
        return {"q": "question"}

    judge = Judge(instructions="Judge.", base_url=fake_anthropic.base_url,
                  api_key=fake_anthropic.api_key,
                  error_processors=[StreamErrorRetryProcessor(max_retries=3)])
    scorer = (create_scorer(id="steps", description="", judge=judge)
              .preprocess(preprocess)
              .analyze(PromptStep(description="a", output_schema={"type": "object"},
                                  create_prompt=lambda run: "analyze"))
              .generate_score(PromptStep(description="s", create_prompt=lambda run: "score")))
    fake_anthropic.enqueue(structured({"ok": True}), rate_limited(retry_after=0),
                           overloaded(), structured({"score": 0.5}))
    result = await scorer.run(make_run())
    assert result.score == 0.5
    assert calls["preprocess"] == 1
    prompts = [r.user_text for r in fake_anthropic.message_requests]
    assert prompts == ["analyze", "score", "score", "score"]
    assert result.judge["analyze"].executions[0].model_call_count == 1
    assert result.judge["generate_score"].executions[0].model_call_count == 3


async def test_retries_and_format_fallback_are_counted_separately(
        fake_anthropic: FakeAnthropic) -> None:
    # attempt 1: 429 then an unparsable reply; attempt 2 (fallback): 529 then a valid reply
    from tests.fakes.fake_anthropic import text

    fake_anthropic.enqueue(rate_limited(retry_after=0), text("nope"), overloaded(),
                           text('{"score": 0.2}'))
    result = await scorer_with(fake_anthropic, StreamErrorRetryProcessor(max_retries=1)).run(
        make_run())
    assert result.score == 0.2
    execution = result.judge["generate_score"].executions[0]
    assert (execution.attempt_count, execution.model_call_count) == (2, 4)


def test_bad_processor_options_are_refused() -> None:
    with pytest.raises(ValueError):
        StreamErrorRetryProcessor(max_retries=-1)
    with pytest.raises(ValueError):
        StreamErrorRetryProcessor(max_retry_after=-1)


def test_exponential_delay() -> None:
    delay = exponential_delay()
    assert [delay(n) for n in range(7)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert exponential_delay(0.5, 3.0, 10.0)(2) == 4.5
    with pytest.raises(ValueError):
        exponential_delay(factor=0.5)
