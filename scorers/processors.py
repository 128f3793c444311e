"""Judge error processors: when and how long to wait before retrying a failed judge call.

A port of Mastra's `StreamErrorRetryProcessor` (reference §3). An error processor has
`process_api_error(*, error, retry_count) -> RetryDecision | None` (sync or async); the judge
asks its processors in order after a failed HTTP call, waits `decision.delay` seconds when one says
`retry`, and calls again — at most `max_processor_retries` times per judge call (default 10 when
error processors are configured, 0 without any). Only the failing call is retried.

The provider has already classified the error (`scorers.errors`; for Anthropic, see
`scorers._anthropic`), keeping its SDK's error as `__cause__`. Decision logic of
`StreamErrorRetryProcessor`:

1. `JudgeAuthError` (401/403, a refused or missing key) anywhere in the chain: never retried.
2. The user's matchers are tried in order, each on the error and its causes (so on the SDK's
   own error and its `status_code` too); the first matcher that matches wins and brings its
   own `max_retries`/`delay`.
3. Else errors marked `retryable` are retried (for Anthropic: HTTP 408, 409, 429, 5xx, 529
   `overloaded_error`, connection errors and timeouts).
4. Else, only with `retry_unknown_errors=True`.
5. The wait is `max(delay, min(retry_after, max_retry_after))`, `retry_after` being what the
   provider read from the reply (`retry-after-ms` first, then `retry-after`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from scorers._retry import capped_backoff
from scorers.errors import JudgeAuthError, ScorecarError, error_chain

__all__ = [
    "ErrorProcessor",
    "Matcher",
    "RetryDecision",
    "StreamErrorRetryProcessor",
    "exponential_delay",
]

Delay = float | Callable[[int], float | Awaitable[float]]
MatchFn = Callable[[BaseException], bool]


@dataclass(frozen=True)
class RetryDecision:
    """What an error processor decided.

    Attributes:
        retry: whether to call the model again.
        delay: seconds to wait first.
    """

    retry: bool
    delay: float = 0.0


@runtime_checkable
class ErrorProcessor(Protocol):
    """Anything that decides whether a failed judge call is retried."""

    def process_api_error(self, *, error: BaseException,
                          retry_count: int) -> RetryDecision | None | Awaitable[
                              RetryDecision | None]:
        """Decide for one failed call; `retry_count` is how many retries already happened."""
        ...


@dataclass(frozen=True)
class Matcher:
    """A user rule: errors for which `match(error)` is true get their own retry policy.

    Attributes:
        match: predicate over an error (tried on the error and each of its causes).
        max_retries: this rule's cap (default: the processor's `max_retries`).
        delay: this rule's wait, seconds or a callable of the retry count
            (default: the processor's `delay`).
    """

    match: MatchFn
    max_retries: int | None = None
    delay: Delay | None = None


def _classified(error: BaseException) -> ScorecarError | None:
    """The first scorecar error in the chain: what the provider said about the failure."""
    return next((e for e in error_chain(error) if isinstance(e, ScorecarError)), None)


def is_auth_error(error: BaseException) -> bool:
    """True when `error` or one of its causes is a `JudgeAuthError` (never retried)."""
    return any(isinstance(e, JudgeAuthError) for e in error_chain(error))


def is_provider_retryable(error: BaseException) -> bool:
    """True when the provider marked the error `retryable` (e.g. `JudgeUnavailableError`)."""
    classified = _classified(error)
    return classified is not None and classified.retryable


def retry_after_seconds(error: BaseException) -> float | None:
    """The wait the provider asked for (`retry_after` of the scorecar error), or None."""
    classified = _classified(error)
    return classified.retry_after if classified is not None else None


async def _resolve_delay(delay: Delay, retry_count: int) -> float:
    value = delay(retry_count) if callable(delay) else delay
    if inspect.isawaitable(value):
        value = await value
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return 0.0
    return seconds if math.isfinite(seconds) and seconds > 0 else 0.0  # <0/NaN → 0


def exponential_delay(initial: float = 1.0, factor: float = 2.0,
                      maximum: float = 30.0) -> Callable[[int], float]:
    """A `delay` for `StreamErrorRetryProcessor`: `initial * factor**retry_count`, capped.

    The sidecar's default judge config uses `exponential_delay()` (1 s, 2 s, 4 s, …).
    """
    if initial < 0 or factor < 1 or maximum < 0:
        raise ValueError("need initial >= 0, factor >= 1 and maximum >= 0")

    def delay(retry_count: int) -> float:
        return float(capped_backoff(retry_count, initial=initial, maximum=maximum, factor=factor))

    return delay


def _matches(matcher: Matcher, error: BaseException) -> bool:
    try:
        return bool(matcher.match(error))
    except Exception:  # a broken matcher does not match
        return False


@dataclass(frozen=True)
class _Policy:
    max_retries: int
    delay: Delay


class StreamErrorRetryProcessor:
    """Retries judge calls that failed with a transient error (Mastra's processor of that name).

    Args:
        max_retries: retries for errors without a matcher of their own (default 1).
        delay: seconds to wait, or a callable of the retry count (0, 1, …) returning seconds
            (sync or async); negative or NaN means 0.
        max_retry_after: cap, in seconds, on the provider's Retry-After (not on `delay`).
        matchers: callables `(error) -> bool` or `Matcher`s, tried first, in order.
        retry_unknown_errors: also retry errors nothing recognises (never auth errors).
    """

    def __init__(self, *, max_retries: int = 1, delay: Delay = 0.0,
                 max_retry_after: float = 30.0,
                 matchers: Sequence[Matcher | MatchFn] = (),
                 retry_unknown_errors: bool = False) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if max_retry_after < 0:
            raise ValueError("max_retry_after must be >= 0")
        self.max_retries = max_retries
        self.delay = delay
        self.max_retry_after = max_retry_after
        self.matchers: tuple[Matcher, ...] = tuple(
            m if isinstance(m, Matcher) else Matcher(match=m) for m in matchers)
        self.retry_unknown_errors = retry_unknown_errors

    def __repr__(self) -> str:
        return (f"StreamErrorRetryProcessor(max_retries={self.max_retries}, delay={self.delay!r}, "
                f"max_retry_after={self.max_retry_after}, matchers={len(self.matchers)}, "
                f"retry_unknown_errors={self.retry_unknown_errors})")

    def _policy(self, error: BaseException) -> _Policy | None:
        chain = list(error_chain(error))
        for matcher in self.matchers:  # the first matcher that matches any error of the chain
            if any(_matches(matcher, err) for err in chain):
                return _Policy(
                    self.max_retries if matcher.max_retries is None else matcher.max_retries,
                    self.delay if matcher.delay is None else matcher.delay)
        if is_provider_retryable(error) or self.retry_unknown_errors:
            return _Policy(self.max_retries, self.delay)
        return None

    async def process_api_error(self, *, error: BaseException,
                                retry_count: int) -> RetryDecision:
        """Decide whether to retry after `error`, the `retry_count`-th retry having failed."""
        if is_auth_error(error):
            return RetryDecision(retry=False)
        policy = self._policy(error)
        if policy is None or retry_count >= policy.max_retries:
            return RetryDecision(retry=False)
        configured = await _resolve_delay(policy.delay, retry_count)
        retry_after = retry_after_seconds(error) or 0.0
        return RetryDecision(retry=True,
                             delay=max(configured, min(retry_after, self.max_retry_after)))
