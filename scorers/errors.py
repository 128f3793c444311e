"""The scorecar error tree.

```
ScorecarError                 retryable = False, retry_after = None
├─ ConfigError                bad configuration; raised at startup only
├─ ScorerError                a scorer could not produce a score (execution: the failed judge call)
│  ├─ ScorerRunError          a step failed (failed_step, completed_steps, partial_result)
│  ├─ JudgeUnavailableError   retryable = True: the provider could not be reached or was busy
│  │                          (retry_after: the wait it asked for, in seconds)
│  ├─ JudgeAuthError          401/403: a configuration error, never retried
│  ├─ JudgeRequestError       the provider refused the request itself (400, 404, 413, 422 …)
│  └─ JudgeParseError         the judge's reply did not parse or validate, fallback included
├─ ExportError                a score sink refused or failed (retryable= says whether to resend)
└─ collector.cli._inspect.UnreadableInputError   `scorecar inspect` cannot read a file
```

Judge providers raise the `Judge…Error`s themselves, with the provider's own error (e.g. the
`anthropic` SDK's `RateLimitError`) as `__cause__`. Retry wrappers — the judge's error
processors, the sidecar's rate limiter, the exporters' retry loop — only look at `exc.retryable`
and `exc.retry_after`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scorers.types import JudgeExecution

__all__ = [
    "ConfigError",
    "ExportError",
    "JudgeAuthError",
    "JudgeParseError",
    "JudgeRequestError",
    "JudgeUnavailableError",
    "ScorecarError",
    "ScorerError",
    "ScorerRunError",
]


class ScorecarError(Exception):
    """Root of every error scorecar raises on purpose.

    Attributes:
        retryable: whether doing the same thing again may succeed.
        retry_after: seconds the other side asked us to wait before retrying, or None.
    """

    retryable: bool = False
    retry_after: float | None = None


class ConfigError(ScorecarError):
    """The configuration is invalid; lists every problem at once."""


class ScorerError(ScorecarError):
    """A scorer could not produce a score.

    Args:
        message: what went wrong.
        code: the provider's error code (`overloaded_error`, `http_400`, `timeout` …), or None.
        execution: the record of the failed judge call (`JudgeExecution`: model, attempts,
            HTTP calls, tokens, duration), when the failure happened in one.
    """

    def __init__(self, message: str = "", *, code: str | None = None,
                 execution: JudgeExecution | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.execution = execution


class JudgeUnavailableError(ScorerError):
    """The judge could not be reached or answered busy.

    Args:
        message: what went wrong.
        retry_after: the wait the provider asked for (Retry-After), in seconds, or None.
        retryable: False for a failure no provider marks transient (e.g. a 200 whose body is
            not an API reply): retried only by `retry_unknown_errors`.
        code: the provider's error code, or None.
        execution: the failed judge call's record, once the call has given up.
    """

    retryable = True

    def __init__(self, message: str = "", *, retry_after: float | None = None,
                 retryable: bool = True, code: str | None = None,
                 execution: JudgeExecution | None = None) -> None:
        super().__init__(message, code=code, execution=execution)
        self.retry_after = retry_after
        self.retryable = retryable


class JudgeAuthError(ScorerError):
    """The judge refused our credentials (401/403), or there are none. Never retried."""


class JudgeRequestError(ScorerError):
    """The provider refused the request itself (e.g. 400 prompt too long). Not retried."""


class JudgeParseError(ScorerError):
    """The judge's reply did not parse or validate, even after the format fallback."""


class ScorerRunError(ScorerError):
    """A step of a scorer's pipeline failed.

    Attributes:
        failed_step: snake_case name of the step that failed (`prepare_run` possible).
        completed_steps: names of the steps that finished before it.
        partial_result: a `ScorerResult` holding what the completed steps produced and the
            failed judge execution, if any.
        scorer_id: the scorer's id.
    """

    def __init__(self, message: str, *, scorer_id: str, failed_step: str,
                 completed_steps: list[str], partial_result: Any) -> None:
        super().__init__(f"Scorer Run Failed: {message}")
        self.scorer_id = scorer_id
        self.failed_step = failed_step
        self.completed_steps = completed_steps
        self.partial_result = partial_result


class ExportError(ScorecarError):
    """A score sink refused or failed; `retryable` says whether to send the same records again."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


def error_chain(error: BaseException) -> Iterator[BaseException]:
    """The error, then its causes (`__cause__`, cycle-safe): where a provider's classified error
    and the SDK error under it are found."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__
