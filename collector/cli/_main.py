"""The `scorecar` command line (DESIGN §8)."""

from __future__ import annotations

import asyncio
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import click

__all__ = ["main"]


def _version() -> str:
    try:
        return version("scorecar")
    except PackageNotFoundError:  # running from a source tree without install
        return "0+unknown"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), prog_name="scorecar")
def main() -> None:
    """scorecar: score LLM agents from their OpenTelemetry traces."""


@main.command("inspect")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(dir_okay=False, path_type=Path))
def inspect_command(files: tuple[Path, ...]) -> None:
    """Print the scorer runs rebuilt from OTLP JSON FILES (one JSON object per line).

    FILES hold OTLP/JSON export requests, one per line (the Collector's file exporter) or
    one document. All files are grouped by trace id together. Summary and reason counts go
    to stderr. Exit 0 even with no runs; 2 when a file cannot be read.
    """
    from collector.cli._inspect import UnreadableInputError, inspect_files, write_report

    try:
        result = inspect_files(files)
    except UnreadableInputError as exc:
        click.echo(f"scorecar inspect: cannot read {exc}", err=True)
        sys.exit(2)
    write_report(result, sys.stdout, sys.stderr)


@main.command("check-config")
@click.option("-c", "--config", "config_path", default=None,
              type=click.Path(dir_okay=False, path_type=Path),
              help="The YAML config (default: the built-in defaults); SCORECAR_* environment "
                   "variables override it.")
def check_config_command(config_path: Path | None) -> None:
    """Validate the configuration and print it as the sidecar would use it: YAML, secrets
    masked, then the resolved scorers. Exit 0 when valid; 2 with every problem on stderr."""
    from collector.config import load_config, render_effective_config
    from scorers.errors import ConfigError

    try:
        config = load_config(config_path)
    except ConfigError as exc:
        click.echo(f"scorecar check-config: {exc}", err=True)
        sys.exit(2)
    click.echo(render_effective_config(config), nl=False)


_CONFIG_OPTION = click.option("-c", "--config", "config_path", type=click.Path(
    dir_okay=False, path_type=Path), default=None, help="The YAML config (default: built-in "
    "defaults; SCORECAR_* environment variables override either).")
_LOG_OPTIONS = [
    click.option("--log-format", type=click.Choice(["text", "json"]), default="text",
                 show_default=True, help="Log lines as text or as JSON objects."),
    click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
                 default="info", show_default=True),
]


def _log_options(f: Any) -> Any:
    for option in reversed(_LOG_OPTIONS):
        f = option(f)
    return f


def _load(config_path: Path | None) -> tuple[Any, Any]:
    """The config and its scorer specs; every problem printed and exit 2 when invalid."""
    from collector.config import build_scorer_specs, load_config
    from scorers.errors import ConfigError

    try:
        config = load_config(config_path)
        specs = build_scorer_specs(config)
    except ConfigError as exc:
        click.echo(f"scorecar: {exc}", err=True)
        sys.exit(2)
    return config, specs


@main.command("serve")
@_CONFIG_OPTION
@click.option("--grace", type=float, default=20.0, show_default=True,
              help="Seconds to finish in-flight jobs and flush exporters on SIGTERM.")
@_log_options
def serve_command(config_path: Path | None, grace: float, log_format: str,
                  log_level: str) -> None:
    """Run the sidecar: OTLP receivers, scoring, exporters and /metrics until SIGTERM."""
    from collector.service import setup_logging

    setup_logging(log_level, "json" if log_format == "json" else "text")
    config, specs = _load(config_path)
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


@main.command("demo")
@click.option("--once", is_flag=True, help="Exit after printing the scores.")
@click.option("--protocol", type=click.Choice(["grpc", "http"]), default="grpc",
              show_default=True, help="How the demo agents export to the sidecar.")
@click.option("--records", "records_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Keep the score records (JSON lines) in this file.")
@_log_options
def demo_command(once: bool, protocol: str, records_path: Path | None, log_format: str,
                 log_level: str) -> None:
    """Start the sidecar on free loopback ports, send it real agent traces from six
    instrumentation libraries through the OpenTelemetry exporter, and print the scores.
    No API key needed."""
    from collector.cli._demo import run_demo
    from collector.service import setup_logging

    setup_logging("warning" if log_level == "info" else log_level,
                  "json" if log_format == "json" else "text")
    try:
        code = asyncio.run(run_demo(once=once, protocol=protocol, records_path=records_path))
    except KeyboardInterrupt:
        code = 0
    sys.exit(code)


@main.command("score")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(dir_okay=False, path_type=Path))
@_CONFIG_OPTION
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the score records here (JSON lines; default: stdout).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def score_command(files: tuple[Path, ...], config_path: Path | None, output: Path | None,
                  no_progress: bool) -> None:
    """Score the agent runs in OTLP JSON FILES offline, writing one score record per
    (run, scorer) as JSON lines (source TEST). Scorers come from the config's `scorers:`
    (default: the built-in code scorers of `scorecar demo`)."""
    from collector.cli._inspect import UnreadableInputError
    from collector.cli._score import score_files

    config, specs = _load(config_path)
    if not specs:
        from collector.cli._demo import demo_specs

        specs = demo_specs(with_judge=False)
    provider = _limited_provider(config)
    try:
        if output is None:
            result = asyncio.run(score_files(files, specs, sys.stdout, provider=provider,
                                             concurrency=config.judge.max_concurrency,
                                             progress=not no_progress))
        else:
            output.parent.mkdir(parents=True, exist_ok=True)
            with output.open("w", encoding="utf-8") as out:
                result = asyncio.run(score_files(files, specs, out, provider=provider,
                                                 concurrency=config.judge.max_concurrency,
                                                 progress=not no_progress))
    except UnreadableInputError as exc:
        click.echo(f"scorecar score: cannot read {exc}", err=True)
        sys.exit(2)
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(result.statuses.items())) or "no records"
    skipped = ", ".join(f"{k}: {v}" for k, v in sorted(result.skipped.items()))
    click.echo(f"scorecar score: {result.runs} run(s) -> {summary}"
               + (f" (not scored: {skipped})" if skipped else ""), err=True)


def _limited_provider(config: Any) -> Any:
    from collector._telemetry import Metrics
    from collector.scoring import LimitedProvider
    from scorers.judge import default_provider

    j = config.judge
    return LimitedProvider(default_provider(), max_concurrency=j.max_concurrency,
                           requests_per_minute=j.requests_per_minute,
                           tokens_per_minute=j.tokens_per_minute, metrics=Metrics(),
                           api_key=j.api_key.get_secret_value() if j.api_key else None,
                           base_url=j.base_url)

