"""What both receivers check before they read a request: the bearer token and the request rate.

TLS itself is the transports' (gRPC server credentials, an `ssl.SSLContext` for aiohttp); this
module builds the server context from a `TlsConfig`. A refused request is counted in
`scorecar_spans_refused_total{reason}` (`unauthenticated`, `rate_limited`) and answered without
saying why beyond that: the token is never logged, compared in constant time, and never part of
an error.
"""

from __future__ import annotations

import hmac
import logging
import ssl
from collections import OrderedDict

from aiolimiter import AsyncLimiter
from pydantic import SecretStr

from collector._telemetry import Metrics
from collector.config import TlsConfig
from collector.receivers._request import refuse

__all__ = ["Guard", "grpc_peer_host", "server_ssl_context"]

log = logging.getLogger("scorecar.receivers")

UNAUTHENTICATED = "unauthenticated"
# Clients remembered by the rate limiter; past it the least recently seen is forgotten (it starts
# again with a full bucket), so a flood of addresses cannot grow memory.
_MAX_PEERS = 10_000


def server_ssl_context(tls: TlsConfig) -> ssl.SSLContext | None:
    """The server-side TLS context `tls` describes (None: plaintext).

    With `client_ca_file`, a client certificate signed by it is required (mTLS).
    """
    if tls.cert_file is None:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(tls.cert_file, tls.key_file)
    if tls.client_ca_file is not None:
        ctx.load_verify_locations(cafile=tls.client_ca_file)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


class Guard:
    """Bearer-token check and per-client rate limit of one receiver (both optional).

    Args:
        metrics: `spans_refused{reason="unauthenticated"|"rate_limited"}` is counted here.
        bearer_token: the token clients must send as `Authorization: Bearer <token>`;
            None: no auth.
        max_requests_per_second: requests per second per client address (a token bucket
            holding as many); None: no limit.
    """

    def __init__(self, metrics: Metrics, *, bearer_token: SecretStr | str | None = None,
                 max_requests_per_second: float | None = None) -> None:
        self._metrics = metrics
        if isinstance(bearer_token, SecretStr):
            bearer_token = bearer_token.get_secret_value()
        self._token = bearer_token.encode() if bearer_token else None
        if max_requests_per_second is not None and max_requests_per_second <= 0:
            raise ValueError("max_requests_per_second must be positive")
        self._rate = max_requests_per_second
        self._limiters: OrderedDict[str, AsyncLimiter] = OrderedDict()

    @property
    def active(self) -> bool:
        """Whether anything is checked."""
        return self._token is not None or self._rate is not None

    async def check(self, authorization: str | None, peer: str) -> None:
        """Refuse the request unless its token is right and its client is within its rate.

        Args:
            authorization: the `Authorization` header (gRPC: `authorization` metadata).
            peer: the client's address (the rate limit's key).

        Raises:
            Refused: `unauthenticated` or `rate_limited` (counted).
        """
        if self._token is not None and not self._authorized(authorization):
            log.debug("refused a request without the right bearer token from %s", peer)
            raise refuse(self._metrics, UNAUTHENTICATED, "unauthenticated", UNAUTHENTICATED)
        if self._rate is not None:
            limiter = self._limiter(peer)
            if not limiter.has_capacity():
                wait = 1.0 / self._rate
                raise refuse(self._metrics, "rate_limited", "rate_limited",
                             f"over the limit of {self._rate:g} requests per second per client; "
                             f"retry in {wait:.3g} s", retry_after=wait)
            await limiter.acquire()  # there is capacity: returns without waiting

    def _authorized(self, authorization: str | None) -> bool:
        assert self._token is not None
        scheme, _, credentials = (authorization or "").strip().partition(" ")
        given = credentials.strip().encode() if scheme.lower() == "bearer" else b""
        # Constant time in the token's content; always compared, even when empty.
        return hmac.compare_digest(given, self._token)

    def _limiter(self, peer: str) -> AsyncLimiter:
        limiter = self._limiters.get(peer)
        if limiter is None:
            assert self._rate is not None
            burst = max(1.0, self._rate)
            limiter = AsyncLimiter(burst, burst / self._rate)
            self._limiters[peer] = limiter
            if len(self._limiters) > _MAX_PEERS:
                self._limiters.popitem(last=False)
        else:
            self._limiters.move_to_end(peer)
        return limiter


def grpc_peer_host(peer: str) -> str:
    """The client's address from gRPC's `context.peer()` (`ipv4:10.0.0.1:5000` → `10.0.0.1`)."""
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        host, sep, port = rest.rpartition(":")
        return host.strip("[]") if sep and port.isdigit() else rest
    return peer
