"""What the commands share: the `--config` and log options, and loading the config and its
scorers (every problem printed, exit 2)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

__all__ = ["CONFIG_OPTION", "load_or_exit", "log_options"]

CONFIG_OPTION = click.option("-c", "--config", "config_path", type=click.Path(
    dir_okay=False, path_type=Path), default=None, help="The YAML config (default: built-in "
    "defaults; SCORECAR_* environment variables override either).")
_LOG_OPTIONS = [
    click.option("--log-format", type=click.Choice(["text", "json"]), default="text",
                 show_default=True, help="Log lines as text or as JSON objects."),
    click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
                 default="info", show_default=True),
]


def log_options(f: Any) -> Any:
    """Add `--log-format` and `--log-level` to a command."""
    for option in reversed(_LOG_OPTIONS):
        f = option(f)
    return f


def load_or_exit(config_path: Path | None) -> tuple[Any, Any]:
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
