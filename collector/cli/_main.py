"""The `scorecar` command line (DESIGN §8): the click group `main`, whose commands live one
per module and are imported only when run (or listed by `--help`), so that `scorecar inspect`
never pays for the sidecar, the config or the demo."""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version

import click

__all__ = ["main"]

# command name -> "module:attribute" of its click command
_COMMANDS = {
    "check-config": "collector.cli._check_config:check_config_command",
    "demo": "collector.cli._demo:demo_command",
    "inspect": "collector.cli._inspect:inspect_command",
    "score": "collector.cli._score:score_command",
    "serve": "collector.cli._serve:serve_command",
}


class _LazyGroup(click.Group):
    """A group whose commands are imported from `_COMMANDS` on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in _COMMANDS:
            module, _, attr = _COMMANDS[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), attr)
            assert isinstance(command, click.Command)
            self.add_command(command, cmd_name)
        return command


def _version() -> str:
    try:
        return version("scorecar")
    except PackageNotFoundError:  # running from a source tree without install
        return "0+unknown"


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), prog_name="scorecar")
def main() -> None:
    """scorecar: score LLM agents from their OpenTelemetry traces."""
