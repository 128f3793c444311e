"""`StreamErrorRetryProcessor` decisions the HTTP tests left open (found by bench/mutation.py).

The processor is asked directly, as the judge's call loop asks it: defaults, bounds of its
options, and delays that make no sense.
"""

from __future__ import annotations

import pytest

from scorers import JudgeRequestError, JudgeUnavailableError, Matcher, StreamErrorRetryProcessor
from scorers.processors import RetryDecision, exponential_delay

BUSY = JudgeUnavailableError("busy")


async def decide(processor: StreamErrorRetryProcessor, error: BaseException = BUSY,
                 retry_count: int = 0) -> RetryDecision:
    return await processor.process_api_error(error=error, retry_count=retry_count)


async def test_by_default_one_retry_without_waiting() -> None:
    processor = StreamErrorRetryProcessor()
    assert await decide(processor) == RetryDecision(retry=True, delay=0.0)
    assert await decide(processor, retry_count=1) == RetryDecision(retry=False)


async def test_the_providers_retry_after_is_capped_at_30_s_by_default() -> None:
    processor = StreamErrorRetryProcessor()
    decision = await decide(processor, JudgeUnavailableError("busy", retry_after=100.0))
    assert decision == RetryDecision(retry=True, delay=30.0)


async def test_zero_retries_and_a_zero_cap_are_valid_settings() -> None:
    assert await decide(StreamErrorRetryProcessor(max_retries=0)) == RetryDecision(retry=False)
    no_wait = StreamErrorRetryProcessor(max_retry_after=0.0)
    decision = await decide(no_wait, JudgeUnavailableError("busy", retry_after=5.0))
    assert decision == RetryDecision(retry=True, delay=0.0)


@pytest.mark.parametrize(("options", "message"), [
    ({"max_retries": -1}, "max_retries must be >= 0"),
    ({"max_retry_after": -0.5}, "max_retry_after must be >= 0"),
])
def test_negative_options_are_refused_with_the_option_named(
        options: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        StreamErrorRetryProcessor(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize("delay", ["soon", None, float("nan"), float("inf"), -3.0])
async def test_a_delay_that_is_not_a_finite_positive_number_means_no_wait(
        delay: object) -> None:
    processor = StreamErrorRetryProcessor(delay=lambda retry_count: delay)  # type: ignore[arg-type,return-value]
    assert await decide(processor) == RetryDecision(retry=True, delay=0.0)


async def test_a_broken_matcher_does_not_match() -> None:
    def broken(error: BaseException) -> bool:
        raise RuntimeError("matcher bug")

    processor = StreamErrorRetryProcessor(matchers=[broken])
    # A 400 is not retryable: only a matching matcher could make it so.
    assert await decide(processor, JudgeRequestError("bad request")) == RetryDecision(
        retry=False)


async def test_a_matcher_without_its_own_delay_waits_the_processors_delay() -> None:
    processor = StreamErrorRetryProcessor(
        delay=3.0, matchers=[Matcher(match=lambda e: "bad" in str(e), max_retries=2)])
    error = JudgeRequestError("bad request")
    assert await decide(processor, error, 1) == RetryDecision(retry=True, delay=3.0)
    assert await decide(processor, error, 2) == RetryDecision(retry=False)


def test_exponential_delay_accepts_its_boundaries() -> None:
    assert exponential_delay(initial=0.0)(3) == 0.0
    constant = exponential_delay(initial=2.0, factor=1.0)
    assert [constant(n) for n in range(3)] == [2.0, 2.0, 2.0]
    capped = exponential_delay(initial=1.0, factor=1.5, maximum=0.5)
    assert capped(0) == 0.5
    assert exponential_delay(maximum=0.0)(2) == 0.0


@pytest.mark.parametrize("options", [{"initial": -1.0}, {"factor": 0.5}, {"maximum": -1.0}])
def test_exponential_delay_refuses_shrinking_or_negative_waits(
        options: dict[str, float]) -> None:
    with pytest.raises(ValueError,
                       match=r"^need initial >= 0, factor >= 1 and maximum >= 0$"):
        exponential_delay(**options)
