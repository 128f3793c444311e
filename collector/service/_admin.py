"""The 9464 port: Prometheus `/metrics`, `/healthz` (the process is alive) and `/readyz`
(receivers up, queue writable), on aiohttp in the sidecar's event loop (DESIGN §7).
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from collector._telemetry import Metrics
from exporters.prometheus import CONTENT_TYPE_LATEST

__all__ = ["AdminServer", "split_endpoint"]

ReadyCheck = Callable[[], list[str]]
"""Returns the reasons the sidecar is not ready (empty: ready)."""


def split_endpoint(endpoint: str) -> tuple[str, int]:
    """`host:port` (IPv6 as `[::1]:port`) → (host, port)."""
    host, _, port = endpoint.rpartition(":")
    return host.strip("[]") or "0.0.0.0", int(port)


class AdminServer:
    """`/metrics`, `/healthz`, `/readyz` on one port.

    Args:
        metrics: what `/metrics` renders.
        ready: the readiness check; `/readyz` answers 503 with its reasons when not empty.
        endpoint: `host:port` (port 0: a free port, see `start()`'s result).
    """

    def __init__(self, metrics: Metrics, ready: ReadyCheck, *,
                 endpoint: str = "0.0.0.0:9464") -> None:
        self._metrics = metrics
        self._ready = ready
        self._endpoint = endpoint
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    async def _metrics_handler(self, request: web.Request) -> web.Response:
        body = self._metrics.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        problems = self._ready()
        if problems:
            return web.Response(status=503, text="not ready: " + "; ".join(problems) + "\n")
        return web.Response(text="ready\n")

    async def start(self) -> int:
        """Listen; returns the bound port."""
        app = web.Application()
        app.router.add_get("/metrics", self._metrics_handler)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        host, port = split_endpoint(self._endpoint)
        site = web.TCPSite(runner, host, port, reuse_address=True)
        await site.start()
        self._runner = runner
        server = site._server  # aiohttp exposes the bound sockets only here
        sockets = getattr(server, "sockets", None) or []
        self.port = int(sockets[0].getsockname()[1]) if sockets else port
        return self.port

    async def stop(self) -> None:
        """Stop listening (idempotent, safe without start)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
