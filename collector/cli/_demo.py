"""`scorecar demo`: the sidecar on free loopback ports, real OTLP from six instrumentation
libraries sent through the official OpenTelemetry exporter, a table of the scores, and
`/metrics` left up until Ctrl-C (DESIGN §8). No API key and no other service needed; with
`ANTHROPIC_API_KEY` set, a judge scorer runs too.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import click
from rich.console import Console
from rich.table import Table

from collector.cli._options import log_options
from collector.cli._replay import demo_trace_files, otlp_span_exporter, send_spans
from collector.config import Config, build_judge, load_config
from collector.otlp import read_otlp_file
from collector.scoring import ScorerSpec
from collector.service import Sidecar, setup_logging
from scorers import ScoreRecord
from scorers.builtin import get_builtin

__all__ = ["DEMO_SCORERS", "demo_command", "demo_config", "demo_specs", "run_demo"]

DEMO_SCORERS: tuple[tuple[str, dict[str, object]], ...] = (
    ("completeness", {}), ("keyword_coverage", {}), ("tone", {}),
    ("tool_call_accuracy", {"expected_tool": "get_weather"}),
)
"""Code scorers the demo runs (id, options): no API key needed. Every demo agent was asked
about the weather, so `get_weather` is the tool it should have called."""
JUDGE_SCORER = "answer_relevancy"


def demo_config(data_dir: Path, jsonl: Path) -> Config:
    """Loopback, free ports, a short quiet period, and a JSON-lines file of the records."""
    return load_config(None, env={
        "SCORECAR_RECEIVERS__GRPC__ENDPOINT": "127.0.0.1:0",
        "SCORECAR_RECEIVERS__HTTP__ENDPOINT": "127.0.0.1:0",
        "SCORECAR_EXPORTERS__PROMETHEUS__ENDPOINT": "127.0.0.1:0",
        "SCORECAR_EXPORTERS__JSONL__PATH": str(jsonl),
        "SCORECAR_STORAGE__PATH": str(data_dir),
        "SCORECAR_ASSEMBLY__QUIET_PERIOD": "0.3",
    })


def demo_specs(with_judge: bool) -> list[ScorerSpec]:
    """The built-in code scorers, plus answer relevancy when a key is available."""
    specs = [ScorerSpec(get_builtin(i, **options)) for i, options in DEMO_SCORERS]
    if with_judge:
        # The sidecar's default judge block: the SDK's key and URL variables, and its retries
        # (429/529/5xx retried up to 3 times, as under `scorecar serve`).
        judge = build_judge(load_config(None, env={}).judge)
        specs.append(ScorerSpec(get_builtin(JUDGE_SCORER, judge=judge), timeout=120.0))
    return specs


def _input_text(record: ScoreRecord) -> str:
    value = record.input if isinstance(record.input, dict) else {}
    messages = value.get("inputMessages") or []
    if not messages:
        return ""
    content = messages[-1].get("content") or {}
    text = content.get("content") if isinstance(content, dict) else content
    return str(text or "")


def _table(records: Sequence[ScoreRecord], library: dict[str, str]) -> Table:
    """One row per agent run, one column per scorer."""
    scorers = sorted({r.scorer_id for r in records})
    runs: dict[str, dict[str, ScoreRecord]] = {}
    for r in records:
        runs.setdefault(r.run_id, {})[r.scorer_id] = r
    table = Table(title="scorecar demo: scores of real agent traces, one row per agent run")
    table.add_column("library")
    table.add_column("agent")
    table.add_column("user input", max_width=40, overflow="ellipsis", no_wrap=True)
    for s in scorers:
        table.add_column(s, justify="right")

    def order(item: tuple[str, dict[str, ScoreRecord]]) -> tuple[str, str]:
        first = next(iter(item[1].values()))
        return (library.get(first.trace_id or "", ""), first.created_at.isoformat())

    for _, by_scorer in sorted(runs.items(), key=order):
        first = next(iter(by_scorer.values()))
        cells = []
        for s in scorers:
            rec = by_scorer.get(s)
            cells.append("" if rec is None else f"{rec.score:.2f}" if rec.score is not None
                         else rec.status)
        table.add_row(library.get(first.trace_id or "", "?"),
                      str(first.entity.get("name") or first.entity_id or "?"),
                      _input_text(first), *cells)
    return table


async def run_demo(*, once: bool, protocol: str = "grpc", out: IO[str] | None = None,
                   records_path: Path | None = None) -> int:
    """Run the demo; returns the process exit code (0: every run was scored).

    Args:
        once: exit after the table instead of keeping `/metrics` up until Ctrl-C.
        protocol: how the demo agents export (`grpc` or `http`).
        out: where the table goes (stdout by default).
        records_path: keep the score records (JSON lines) there; by default they live in a
            temporary directory removed at exit.
    """
    console = Console(file=out, width=140)
    with_judge = bool(os.environ.get("ANTHROPIC_API_KEY"))
    with tempfile.TemporaryDirectory(prefix="scorecar-demo-") as tmp:
        jsonl = records_path or Path(tmp) / "scores.jsonl"
        if records_path is not None:
            records_path.parent.mkdir(parents=True, exist_ok=True)
            records_path.unlink(missing_ok=True)
        config = demo_config(Path(tmp) / "data", jsonl)
        sidecar = Sidecar(config, demo_specs(with_judge))
        ports = await sidecar.start()
        try:
            endpoint = f"127.0.0.1:{ports.grpc if protocol == 'grpc' else ports.http}"
            files = demo_trace_files()
            console.print(f"scorecar demo: sidecar on OTLP/gRPC :{ports.grpc}, OTLP/HTTP "
                          f":{ports.http}, metrics http://127.0.0.1:{ports.metrics}/metrics")
            exporter = otlp_span_exporter(endpoint, "http" if protocol == "http" else "grpc")
            sent = 0
            library: dict[str, str] = {}
            for path in files:
                spans = read_otlp_file(path).spans
                await asyncio.to_thread(send_spans, spans, exporter)
                sent += len(spans)
                library.update((s.trace_id, path.name.split(".")[0]) for s in spans)
            exporter.shutdown()
            console.print(f"sent {sent} spans of real agent traces captured from "
                          f"{', '.join(p.name.split('.')[0] for p in files)} through the "
                          "OpenTelemetry OTLP exporter; scoring…")
            drained = await sidecar.drain(timeout=180.0 if with_judge else 60.0)
            records = [ScoreRecord.model_validate_json(line)
                       for line in jsonl.read_text(encoding="utf-8").splitlines() if line]
            console.print(_table(records, library))
            failed = sum(r.status == "failed" for r in records)
            where = (f"in {records_path}" if records_path is not None
                     else "kept with --records FILE")
            console.print(f"{len(records)} score records ({failed} failed): JSON lines {where}; "
                          "counted on /metrics as scorecar_score and "
                          "scorecar_scorer_runs_total.")
            if not with_judge:
                console.print("Set ANTHROPIC_API_KEY to also run the "
                              f"{JUDGE_SCORER} LLM-judge scorer.")
            if not once:
                console.print(f"/metrics stays up at http://127.0.0.1:{ports.metrics}/metrics "
                              "— press Ctrl-C to stop.")
                await asyncio.Event().wait()
            return 0 if drained and records and not failed else 1
        finally:
            await sidecar.stop(grace=5.0)


@click.command("demo")
@click.option("--once", is_flag=True, help="Exit after printing the scores.")
@click.option("--protocol", type=click.Choice(["grpc", "http"]), default="grpc",
              show_default=True, help="How the demo agents export to the sidecar.")
@click.option("--records", "records_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Keep the score records (JSON lines) in this file.")
@log_options
def demo_command(once: bool, protocol: str, records_path: Path | None, log_format: str,
                 log_level: str) -> None:
    """Start the sidecar on free loopback ports, send it real agent traces from six
    instrumentation libraries through the OpenTelemetry exporter, and print the scores.
    No API key needed."""
    setup_logging("warning" if log_level == "info" else log_level,
                  "json" if log_format == "json" else "text")
    try:
        code = asyncio.run(run_demo(once=once, protocol=protocol, records_path=records_path))
    except KeyboardInterrupt:
        code = 0
    sys.exit(code)
