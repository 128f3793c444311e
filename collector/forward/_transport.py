"""The pass-through's transports: one attempt at sending a request body to the next collector,
over gRPC (a plain `Export` call) or HTTP (`application/x-protobuf`), and its outcome.

Retryable answers: gRPC `CANCELLED`, `DEADLINE_EXCEEDED`, `ABORTED`, `OUT_OF_RANGE`,
`UNAVAILABLE`, `DATA_LOSS`, and `RESOURCE_EXHAUSTED` only with `RetryInfo`; HTTP 429, 502, 503,
504; connection errors and timeouts. A server's `RetryInfo` / `Retry-After` comes back with the
outcome (`_Result.retry_after`); anything else is permanent.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp
import grpc  # type: ignore[import-untyped,unused-ignore]

from collector._retry import retry_after, retry_info
from collector.otlp import Signal

__all__: list[str] = []  # the forwarder's own

_GRPC_METHODS: dict[Signal, str] = {
    "traces": "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
    "logs": "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
}
_GRPC_RETRYABLE = frozenset({
    grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED,
    grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DATA_LOSS,
})
_HTTP_RETRYABLE = frozenset({429, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class _Result:
    """One attempt's outcome: ok, retryable (with the server's delay, if any), or permanent."""

    ok: bool
    retryable: bool = False
    retry_after: float | None = None
    why: str = ""


_OK = _Result(ok=True)


class _Transport(Protocol):
    async def open(self) -> None: ...

    async def send(self, signal: Signal, payload: bytes) -> _Result: ...

    async def close(self) -> None: ...


def _read(path: Path | None) -> bytes | None:
    return path.read_bytes() if path is not None else None


class _GrpcTransport:
    def __init__(self, endpoint: str, *, insecure: bool, headers: Mapping[str, str],
                 timeout: float, ca_file: Path | None, cert_file: Path | None,
                 key_file: Path | None, reconnect_backoff: tuple[float, float]) -> None:
        if "://" in endpoint:
            parts = urlsplit(endpoint)
            self._target = parts.netloc.rpartition("@")[2]
            self._secure = parts.scheme == "https"
        else:
            self._target = endpoint
            self._secure = not insecure
        self._files = (ca_file, cert_file, key_file)
        self._metadata = tuple((k.lower(), v) for k, v in headers.items())
        self._timeout = timeout
        low, high = reconnect_backoff
        # No transparent retries (this module counts every attempt) and reconnects no slower
        # than the backoff, so a backend that returns is used within `max_backoff`.
        self._options = [("grpc.enable_retries", 0),
                         ("grpc.initial_reconnect_backoff_ms", max(1, int(low * 1000))),
                         ("grpc.min_reconnect_backoff_ms", max(1, int(low * 1000))),
                         ("grpc.max_reconnect_backoff_ms", max(1, int(high * 1000)))]
        self._channel: grpc.aio.Channel | None = None
        self._calls: dict[Signal, Any] = {}

    async def open(self) -> None:
        if self._secure:
            ca, cert, key = (_read(p) for p in self._files)
            creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                                 certificate_chain=cert)
            self._channel = grpc.aio.secure_channel(self._target, creds, options=self._options)
        else:
            self._channel = grpc.aio.insecure_channel(self._target, options=self._options)
        # No (de)serializers: the body goes out as the bytes it is.
        self._calls = {s: self._channel.unary_unary(m) for s, m in _GRPC_METHODS.items()}

    async def send(self, signal: Signal, payload: bytes) -> _Result:
        try:
            await self._calls[signal](payload, timeout=self._timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
            delay = retry_info(exc.trailing_metadata())
            retryable = code in _GRPC_RETRYABLE or (
                code == grpc.StatusCode.RESOURCE_EXHAUSTED and delay is not None)
            return _Result(False, retryable, delay, code.name)
        return _OK

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None


class _HttpTransport:
    def __init__(self, endpoint: str, *, insecure: bool, headers: Mapping[str, str],
                 timeout: float, ca_file: Path | None, cert_file: Path | None,
                 key_file: Path | None) -> None:
        base = endpoint if "://" in endpoint else \
            f"{'http' if insecure else 'https'}://{endpoint}"
        base = base.rstrip("/")
        self._urls: dict[Signal, str] = {"traces": f"{base}/v1/traces",
                                         "logs": f"{base}/v1/logs"}
        self._headers = {**headers, "Content-Type": "application/x-protobuf"}
        self._timeout = timeout
        self._ssl: ssl.SSLContext | None = None
        if base.startswith("https://"):
            self._ssl = ssl.create_default_context(cafile=ca_file)
            if cert_file is not None:
                self._ssl.load_cert_chain(cert_file, key_file)
        self._session: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self._timeout), raise_for_status=False)

    async def send(self, signal: Signal, payload: bytes) -> _Result:
        assert self._session is not None, "open() first"
        try:
            async with self._session.post(self._urls[signal], data=payload,
                                          headers=self._headers,
                                          ssl=self._ssl if self._ssl is not None else True
                                          ) as resp:
                await resp.read()
                if 200 <= resp.status < 300:
                    return _OK
                return _Result(False, resp.status in _HTTP_RETRYABLE,
                               retry_after(resp.headers.get("Retry-After"), clamp=True),
                               f"HTTP {resp.status}")
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return _Result(False, True, None, type(exc).__name__)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
