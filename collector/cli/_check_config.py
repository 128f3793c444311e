"""`scorecar check-config`: validate the configuration and print it as the sidecar would use it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

__all__ = ["check_config_command"]


@click.command("check-config")
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
