"""The `scorecar` command line (DESIGN §8)."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

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
    from collector.inspect import UnreadableInput, inspect_files, write_report

    try:
        result = inspect_files(files)
    except UnreadableInput as exc:
        click.echo(f"scorecar inspect: cannot read {exc}", err=True)
        sys.exit(2)
    write_report(result, sys.stdout, sys.stderr)


if __name__ == "__main__":  # python -m collector.cli
    main()
