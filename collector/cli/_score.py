"""`scorecar score FILE…`: score OTLP JSON files offline (backfill, CI checks) with the same
scorers, filters, sampling, timeouts and judge limits as `serve`, writing one `ScoreRecord` per
(run, scorer) with `source: TEST` (DESIGN §8).

Selection and sampling are `serve`'s own (`plan_jobs`), and so is one run under its timeout
(`run_scorer`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from collector.cli._inspect import inspect_files
from collector.cli._options import CONFIG_OPTION, load_or_exit
from collector.otlp import UnreadableInputError
from collector.scoring import ScorerSpec, plan_jobs, run_scorer, selections
from scorers import ScoreRecord, ScorerRun, score_record, use_judge_provider
from scorers.judge import JudgeProvider

__all__ = ["OfflineResult", "score_command", "score_files"]


class OfflineResult:
    """What `score_files` did: records by status, runs, and the reason counts of the build."""

    def __init__(self) -> None:
        self.statuses: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.runs = 0
        self.reasons: Counter[str] = Counter()


async def _one(spec: ScorerSpec, run: ScorerRun) -> ScoreRecord:
    outcome, _ = await run_scorer(spec, run)
    if isinstance(outcome, TimeoutError):
        # Offline wording (any TimeoutError, the scorer's own too), kept as it always was;
        # `serve` says "did not finish within … s" and only when the deadline expired.
        outcome = TimeoutError(f"scorer {spec.id!r} took longer than its timeout "
                               f"({spec.timeout:g}s)")
    return score_record(spec.scorer, run, outcome, source="TEST")


async def score_files(paths: Sequence[Path], specs: Sequence[ScorerSpec], out: IO[str], *,
                      provider: JudgeProvider | None = None, concurrency: int = 8,
                      progress: bool = True) -> OfflineResult:
    """Rebuild the runs of `paths` (as `inspect` does) and score each with every matching spec.

    Args:
        paths: OTLP JSON files (Collector file-exporter lines or one document each).
        specs: the scorers, with their filters, sampling and timeouts.
        out: where the JSON lines go.
        provider: the judge provider (the sidecar's rate-limited one), or the default.
        concurrency: jobs at once.
        progress: show a progress bar on stderr.
    """
    built = inspect_files(paths)
    result = OfflineResult()
    result.runs = len(built.runs)
    result.reasons.update(built.reasons)
    plan = plan_jobs(built.runs, selections(specs))
    for (_, reason), n in plan.skipped.items():
        result.skipped[reason] += n
    by_id = {spec.id: spec for spec in specs}  # (scorer ids are distinct, as in `serve`)
    assert plan.runs is not None
    jobs = [(by_id[job.scorer_id], run) for job, run in zip(plan.jobs, plan.runs)]
    gate = asyncio.Semaphore(concurrency)
    bar = Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   transient=True, disable=not progress)

    with bar:
        task = bar.add_task("score", total=len(jobs))

        async def job(spec: ScorerSpec, run: ScorerRun) -> ScoreRecord:
            async with gate:
                with use_judge_provider(provider):  # each job is its own task (PII numbering)
                    record = await _one(spec, run)
            bar.advance(task)
            return record

        # Records come out in input order (runs as inspect sorts them, scorers as configured).
        records = await asyncio.gather(*(job(s, r) for s, r in jobs))
    for record in records:
        result.statuses[record.status] += 1
        # Not `JsonlSink`'s `model_dump_json`: pydantic writes some floats (0.00001 for 1e-05)
        # and NaN (null) differently from `json.dumps`, and these lines stay as they were.
        out.write(json.dumps(record.model_dump(mode="json", by_alias=True),
                             ensure_ascii=False, separators=(",", ":")))
        out.write("\n")
    out.flush()
    return result


@click.command("score")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(dir_okay=False, path_type=Path))
@CONFIG_OPTION
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the score records here (JSON lines; default: stdout).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def score_command(files: tuple[Path, ...], config_path: Path | None, output: Path | None,
                  no_progress: bool) -> None:
    """Score the agent runs in OTLP JSON FILES offline, writing one score record per
    (run, scorer) as JSON lines (source TEST). Scorers come from the config's `scorers:`
    (default: the built-in code scorers of `scorecar demo`)."""
    config, specs = load_or_exit(config_path)
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
