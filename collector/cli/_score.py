"""`scorecar score FILE…`: score OTLP JSON files offline (backfill, CI checks) with the same
scorers, filters, sampling, timeouts and judge limits as `serve`, writing one `ScoreRecord` per
(run, scorer) with `source: TEST` (DESIGN §8).

Selection and sampling are `serve`'s own (`plan_jobs`), and so is one run under its timeout
(`run_scorer`).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from collector.cli._inspect import inspect_files
from collector.scoring import ScorerSpec, plan_jobs, run_scorer, selections
from scorers import ScoreRecord, ScorerRun, score_record, use_judge_provider
from scorers.judge import JudgeProvider

__all__ = ["OfflineResult", "score_files"]


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
