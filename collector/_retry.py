"""Retry, written once, for every room of the collector (the Collector's `exporterhelper`
retry sender): capped exponential backoff and its jitter, the waits an HTTP server asks for
(`retry-after-ms`, `Retry-After`), and the wait a gRPC server asks for (`google.rpc.RetryInfo`).

The backoff and the HTTP hints are `scorers._retry`'s (the lowest package that needs them: the
judge retries too); gRPC's `RetryInfo` is read here, as only the collector speaks gRPC.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped,unused-ignore]

from scorers._retry import capped_backoff, http_retry_hint, jitter, jittered_backoff, retry_after

__all__ = ["capped_backoff", "http_retry_hint", "jitter", "jittered_backoff", "retry_after",
           "retry_info"]


def retry_info(trailing_metadata: Iterable[tuple[str, str | bytes]] | None) -> float | None:
    """The `google.rpc.RetryInfo` delay, in seconds, in a gRPC error's
    `grpc-status-details-bin` trailer (a `google.rpc.Status`), if any.

    Args:
        trailing_metadata: the failed call's trailing metadata
            (`grpc.aio.AioRpcError.trailing_metadata()`), or None.

    Returns:
        The first `RetryInfo` detail's `retry_delay`; None without one, or when the status
        detail does not parse.
    """
    for key, value in trailing_metadata or ():
        if key != "grpc-status-details-bin" or not isinstance(value, bytes):
            continue
        try:
            status = status_pb2.Status.FromString(value)
        except Exception:  # noqa: BLE001 - a malformed detail is no RetryInfo
            return None
        for detail in status.details:
            if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                info = error_details_pb2.RetryInfo()
                detail.Unpack(info)
                return float(info.retry_delay.seconds + info.retry_delay.nanos / 1e9)
    return None
