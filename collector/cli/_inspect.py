"""`scorecar inspect FILE…`: OTLP JSON -> the ScorerRuns scorers would see (DESIGN §8).

Every file is read first (OTLP JSON lines as the Collector's file exporter writes them, or
one JSON document, possibly pretty-printed), spans and log records are grouped by trace id
across lines and files, and each trace's runs are printed as one JSON object per line,
sorted by (startedAt, traceId, spanId), every field present. A summary and the reason counts
go to stderr.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import click

from collector.otlp import Decoded, UnreadableInputError, read_otlp_file
from scorers.types import ScorerRun
from transforms import build_runs, group_traces

__all__ = ["InspectResult", "inspect_command", "inspect_files", "write_report"]


@dataclass(slots=True)
class InspectResult:
    """Runs rebuilt from some OTLP JSON files, and what was refused or not used."""

    runs: list[ScorerRun] = field(default_factory=list)
    reasons: Counter[str] = field(default_factory=Counter)
    spans: int = 0
    logs: int = 0
    traces: int = 0
    errors: list[str] = field(default_factory=list)


def inspect_files(paths: Iterable[Path]) -> InspectResult:
    """Read every file, group by trace id across files, and build every trace's runs."""
    decoded = Decoded()
    for path in paths:
        decoded.extend(read_otlp_file(path))
    result = InspectResult(spans=len(decoded.spans), logs=len(decoded.logs),
                           errors=list(decoded.errors))
    result.reasons.update(decoded.refused)
    traces = group_traces(decoded.spans, decoded.logs)
    result.traces = len(traces)
    for trace in traces.values():
        built = build_runs(trace)
        result.runs.extend(built.runs)
        result.reasons.update(built.reasons)
    result.runs.sort(key=_sort_key)
    return result


def _sort_key(run: ScorerRun) -> tuple[str, str, str]:
    t = run.target
    if t is None:
        return ("", "", "")
    started = t.started_at.isoformat() if t.started_at else ""
    return (started, t.trace_id or "", t.span_id or "")


def write_report(result: InspectResult, out: IO[str], err: IO[str]) -> None:
    """Runs as JSON lines on `out` (camelCase, nulls kept); summary and reasons on `err`."""
    for run in result.runs:
        try:
            line = json.dumps(run.model_dump(mode="json", by_alias=True, exclude_none=False),
                              ensure_ascii=False, separators=(",", ":"))
        except (ValueError, TypeError, RecursionError) as exc:  # never crash on one run
            result.reasons["serialize_error"] += 1
            result.errors.append(f"run {run.run_id}: not serializable: {exc}")
            continue
        out.write(line)
        out.write("\n")
    conventions = Counter(r.target.convention for r in result.runs if r.target)
    err.write(f"scorecar inspect: {len(result.runs)} run(s) from {result.traces} trace(s), "
              f"{result.spans} span(s), {result.logs} log record(s)")
    if conventions:
        err.write(" [" + ", ".join(f"{k}: {v}" for k, v in sorted(
            conventions.items(), key=lambda kv: str(kv[0]))) + "]")
    err.write("\n")
    if result.reasons:
        err.write("reasons: " + ", ".join(f"{k}={v}" for k, v in sorted(
            result.reasons.items())) + "\n")
    for e in result.errors[:10]:
        err.write(f"  {e}\n")


@click.command("inspect")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(dir_okay=False, path_type=Path))
def inspect_command(files: tuple[Path, ...]) -> None:
    """Print the scorer runs rebuilt from OTLP JSON FILES (one JSON object per line).

    FILES hold OTLP/JSON export requests, one per line (the Collector's file exporter) or
    one document. All files are grouped by trace id together. Summary and reason counts go
    to stderr. Exit 0 even with no runs; 2 when a file cannot be read.
    """
    try:
        result = inspect_files(files)
    except UnreadableInputError as exc:
        click.echo(f"scorecar inspect: cannot read {exc}", err=True)
        sys.exit(2)
    write_report(result, sys.stdout, sys.stderr)
