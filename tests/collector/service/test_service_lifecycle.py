"""Lifecycle of the service's components, as the Collector generates for each of its own:
start, stop, stop twice, stop without start — each checked by what a user would see (the port
answers or is closed, the data directory is usable again)."""

from __future__ import annotations

import asyncio
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from collector._telemetry import Metrics
from collector.config import Config
from collector.service import AdminServer, Sidecar


def _closed(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) != 0


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def test_admin_port_start_stop_and_stop_without_start() -> None:
    problems: list[str] = []
    admin = AdminServer(Metrics(), lambda: problems, endpoint="127.0.0.1:0")
    await admin.stop()  # without start: nothing to do, no error
    port = await admin.start()
    base = f"http://127.0.0.1:{port}"
    assert await asyncio.to_thread(_get, f"{base}/healthz") == (200, "ok\n")
    assert (await asyncio.to_thread(_get, f"{base}/readyz"))[0] == 200
    problems.append("queue not writable")
    assert await asyncio.to_thread(_get, f"{base}/readyz") == (503, "not ready: queue not writable\n")
    status, body = await asyncio.to_thread(_get, f"{base}/metrics")
    assert status == 200 and "scorecar_spans_received_total" in body
    await admin.stop()
    assert _closed(port)
    await admin.stop()  # twice: still fine


def _config(tmp_path: Path) -> Config:
    return Config.model_validate({
        "receivers": {"grpc": {"endpoint": "127.0.0.1:0"}, "http": {"endpoint": "127.0.0.1:0"}},
        "storage": {"kind": "sqlite", "path": str(tmp_path / "data")},
        "exporters": {"prometheus": {"endpoint": "127.0.0.1:0"}},
        "assembly": {"build_processes": 0},
    })


async def test_sidecar_stop_without_start_releases_its_storage(tmp_path: Path) -> None:
    sidecar = Sidecar(_config(tmp_path), [])
    await sidecar.stop()
    await sidecar.stop()
    # The queue and span log it opened are closed: a new sidecar on the same directory works.
    async with Sidecar(_config(tmp_path), []) as again:
        assert again.ports.grpc and again.ports.http and again.ports.metrics


async def test_sidecar_start_stop_closes_every_port(tmp_path: Path) -> None:
    sidecar = Sidecar(_config(tmp_path), [])
    ports = await sidecar.start()
    assert ports.grpc and ports.http and ports.metrics
    status, _ = await asyncio.to_thread(_get, f"http://127.0.0.1:{ports.metrics}/readyz")
    assert status == 200
    await sidecar.stop()
    assert all(_closed(p) for p in (ports.grpc, ports.http, ports.metrics))
    await sidecar.stop()  # idempotent


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
async def test_sidecar_drains_nothing_quickly_when_idle(tmp_path: Path, kind: str) -> None:
    config = _config(tmp_path).model_copy(update={"storage": _config(tmp_path).storage.model_copy(
        update={"kind": kind})})
    async with Sidecar(config, [], receive=(), admin=False) as sidecar:
        assert await sidecar.drain(timeout=5.0)
        assert sidecar.ports.grpc is None and sidecar.ports.http is None
