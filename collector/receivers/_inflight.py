"""Early refusal under overload (DESIGN §6): each receiver bounds the requests it is handling,
and their bytes together with the bytes acknowledged but not decoded yet (the sink's). Past either bound a request is refused at once, retryably (`UNAVAILABLE` +
`RetryInfo` / 503 + `Retry-After`, counted `spans_refused{reason="overloaded"}`), so that the
agent's exporter backs off instead of waiting on a sidecar that cannot keep up (the
OpenTelemetry Collector's memory limiter does the same)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from collector._telemetry import Metrics
from collector.receivers._request import refuse

__all__ = ["Inflight"]

_MIB = 1024 * 1024
RETRY_AFTER = 1.0
"""The wait asked of a client refused for load: short, as the load is."""


class Inflight:
    """Requests and request bytes between arrival and answer, for one receiver.

    Args:
        metrics: where refusals are counted.
        max_requests: requests handled at once; None: no bound.
        max_mib: their bytes (as received, before inflating) plus `undecoded()`; None: no
            bound. A request larger than the bound alone is let in when nothing else is held,
            so it is slowed, never refused for good.
        undecoded: bytes acknowledged but not decoded yet (the sink's backlog).
    """

    def __init__(self, metrics: Metrics, *, max_requests: int | None = None,
                 max_mib: float | None = None,
                 undecoded: Callable[[], int] | None = None) -> None:
        if (max_requests is not None and max_requests < 1) or (max_mib is not None
                                                              and max_mib <= 0):
            raise ValueError("in-flight bounds must be positive")
        self._metrics = metrics
        self._max_requests = max_requests
        self._max_bytes = None if max_mib is None else int(max_mib * _MIB)
        self._undecoded = undecoded or (lambda: 0)
        self.requests = 0
        """Requests in flight now."""
        self.bytes = 0
        """Their bytes."""

    @contextmanager
    def admit(self, size: int) -> Iterator[None]:
        """Hold a place for one request of `size` bytes while the block runs.

        Raises:
            Refused: `overloaded`, when a bound would be passed (counted).
        """
        if self._max_requests is not None and self.requests >= self._max_requests:
            raise refuse(self._metrics, "overloaded", "overloaded",
                         f"{self.requests} requests in flight (max_inflight_requests); retry "
                         f"in {RETRY_AFTER:g} s", RETRY_AFTER)
        if self._max_bytes is not None:
            held = self.bytes + self._undecoded()
            if held and held + size > self._max_bytes:
                raise refuse(self._metrics, "overloaded", "overloaded",
                             f"{held} bytes in flight or not yet decoded (max_inflight_mib); "
                             f"retry in {RETRY_AFTER:g} s", RETRY_AFTER)
        self.requests += 1
        self.bytes += size
        try:
            yield
        finally:
            self.requests -= 1
            self.bytes -= size
