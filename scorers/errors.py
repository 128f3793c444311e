"""The scorecar error tree.

```
ScorecarError                 retryable = False
├─ ConfigError                bad configuration; raised at startup only
├─ TransformError             a span that cannot be mapped: counted and dropped
├─ ScorerError                a scorer could not produce a score
│  ├─ ScorerRunError          a step failed (failed_step, completed_steps, partial_result)
│  ├─ JudgeUnavailableError   retryable = True: the provider could not be reached or was busy
│  ├─ JudgeAuthError          401/403: a configuration error, never retried
│  ├─ JudgeRequestError       the provider refused the request itself (400, 404, 413, 422 …)
│  └─ JudgeParseError         the judge's reply did not parse or validate, fallback included
└─ ExportError                a score sink refused or failed
```

Retry wrappers only look at `exc.retryable`.
"""

from __future__ import annotations

from typing import Any

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
    "TransformError",
]


class ScorecarError(Exception):
    """Root of every error scorecar raises on purpose."""

    retryable: bool = False


class ConfigError(ScorecarError):
    """The configuration is invalid; lists every problem at once."""


class TransformError(ScorecarError):
    """A span or log record could not be used; carries a fixed reason code."""

    def __init__(self, reason: str, message: str = "") -> None:
        super().__init__(f"{reason}: {message}" if message else reason)
        self.reason = reason


class ScorerError(ScorecarError):
    """A scorer could not produce a score."""


class JudgeUnavailableError(ScorerError):
    """The judge could not be reached or answered busy after every allowed retry."""

    retryable = True


class JudgeAuthError(ScorerError):
    """The judge refused our credentials (401/403). Never retried."""


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
