"""The `scorecar` command line (DESIGN §8)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

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
