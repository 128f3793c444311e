"""`scorecar serve`: run the sidecar until SIGTERM."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import click

from collector.cli._options import CONFIG_OPTION, load_or_exit, log_options

__all__ = ["serve_command"]


@click.command("serve")
@CONFIG_OPTION
@click.option("--grace", type=float, default=20.0, show_default=True,
              help="Seconds to finish in-flight jobs and flush exporters on SIGTERM.")
@log_options
def serve_command(config_path: Path | None, grace: float, log_format: str,
                  log_level: str) -> None:
    """Run the sidecar: OTLP receivers, scoring, exporters and /metrics until SIGTERM."""
    from collector.service import setup_logging

    setup_logging(log_level, "json" if log_format == "json" else "text")
    config, specs = load_or_exit(config_path)
    profile_to = os.environ.get("SCORECAR_PROFILE")  # developers: cProfile of the whole run
    if not profile_to:
        asyncio.run(_serve(config, specs, grace))
        return
    import cProfile

    with cProfile.Profile() as profiler:
        asyncio.run(_serve(config, specs, grace))
    profiler.dump_stats(profile_to)


async def _serve(config: Any, specs: Any, grace: float) -> None:
    import logging
    import signal

    from collector.service import Sidecar

    log = logging.getLogger("scorecar")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    sidecar = Sidecar(config, specs)
    try:
        ports = await sidecar.start()
        log.info("scorecar listening: otlp grpc port %s, otlp http port %s, metrics port %s; "
                 "%d scorer(s): %s", ports.grpc, ports.http, ports.metrics, len(specs),
                 ", ".join(s.id for s in specs) or "none",
                 extra={"grpc_port": ports.grpc, "http_port": ports.http,
                        "metrics_port": ports.metrics})
        await stop.wait()
        log.info("scorecar stopping (grace %gs)", grace)
    finally:
        await sidecar.stop(grace)
    log.info("scorecar stopped")
