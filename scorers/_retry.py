"""Retry, written once: capped exponential backoff, its jitter, and the waits an HTTP server
asks for (`retry-after-ms`, `Retry-After`).

Used by the judge's error processors (`scorers.processors.exponential_delay`) and the Anthropic
provider's error classification (`scorers._anthropic`) here, and through `collector._retry` by
the collector (the pass-through's retries, the export retries of scoring), which adds gRPC's
`RetryInfo`. This is the lowest package that needs it; `scorers` imports no other package.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = ["capped_backoff", "http_retry_hint", "jitter", "jittered_backoff", "retry_after"]


def capped_backoff(attempt: int, *, initial: float, maximum: float, factor: float = 2.0,
                   max_exponent: int | None = None) -> float:
    """`initial * factor ** attempt`, at most `maximum`.

    Args:
        attempt: retries already made (0 for the first wait).
        initial: the first wait, seconds.
        maximum: the cap, seconds.
        factor: growth per attempt. An int factor with an int `initial` stays in int
            arithmetic, as the callers' own copies did.
        max_exponent: the exponent is clamped here (so a long outage never overflows);
            None: not clamped.
    """
    exponent = attempt if max_exponent is None else min(attempt, max_exponent)
    return min(maximum, initial * factor ** exponent)


def jitter(delay: float) -> float:
    """`delay` scaled by a uniform draw in [0.5, 1.0] (so clients that failed together do not
    retry together)."""
    return delay * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not security


def jittered_backoff(attempt: int, *, initial: float, maximum: float, factor: float = 2.0,
                     max_exponent: int | None = None) -> float:
    """`capped_backoff(...)`, jittered: each wait 50-100 % of the capped exponential one."""
    return jitter(capped_backoff(attempt, initial=initial, maximum=maximum, factor=factor,
                                 max_exponent=max_exponent))


def retry_after(value: str | None, *, clamp: bool = False) -> float | None:
    """A `Retry-After` value in seconds: delta-seconds, or an HTTP date (a date in the past
    is 0).

    Args:
        value: the header's value (None or "": no hint).
        clamp: how numbers and dates that make no wait are read. False (the judge's reading):
            a number must be finite and >= 0, else it is no hint (None), and a date whose
            timestamp cannot be computed raises `ValueError`. True (the pass-through's
            reading): any number is taken, at least 0 (NaN is 0, infinity stays), and such a
            date is no hint.

    Returns:
        Seconds to wait, or None when `value` holds no usable hint.
    """
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return _date_wait(value, clamp)
    if clamp:
        return max(0.0, seconds)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _date_wait(value: str, clamp: bool) -> float | None:
    try:
        when = parsedate_to_datetime(value)
        if clamp:
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def http_retry_hint(headers: Mapping[str, Any]) -> float | None:
    """The wait an HTTP reply's headers ask for, in seconds, or None.

    `retry-after-ms` (milliseconds, finite and >= 0) wins over `retry-after` (seconds or an
    HTTP date, read as `retry_after(value)`). Header names are matched case-insensitively.

    Raises:
        ValueError: as `retry_after` with `clamp=False`.
    """
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    value = lowered.get("retry-after-ms")
    if value is not None:
        try:
            ms = float(value)
        except ValueError:
            ms = math.nan
        if math.isfinite(ms) and ms >= 0:
            return ms / 1000.0
    value = lowered.get("retry-after")
    return retry_after(value) if value is not None else None
