"""Which scorer gets which run (DESIGN §5, §8): the configured scorers and one `plan_jobs` for
`serve` and `score`.

A `ScorerSpec` is a scorer as the sidecar runs it: the scorer plus its config-level filter,
sampling and timeout (DESIGN §8 `scorers[]`). The config builds these; the scheduler and
workers read them. A `Selection` is the part of a spec that selection reads (plain data, so a
build process can plan jobs without the scorers themselves); `plan_jobs` turns runs into one job
per (run, scorer) that passes the scorer's filter and sampling, and counts the rest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from collector.scoring.queue import Job, job_for
from scorers import Scorer, ScorerRun
from scorers.sampling import NoSampling, RatioSampling, is_sampled

__all__ = ["JobPlan", "RunFilter", "ScorerSpec", "Selection", "plan_jobs", "selections"]


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a scorer sees. Empty fields match everything.

    Attributes:
        agents: agent names (`target.entityName`) or ids (`target.entityId`).
        conventions: `target.convention` values (`genai`, `mastra`, …).
        attributes: key → value that must equal the run's resource attribute or request
            context entry of that key (either place matches).
    """

    agents: tuple[str, ...] = ()
    conventions: tuple[str, ...] = ()
    attributes: Mapping[str, Any] = field(default_factory=dict)

    def matches(self, run: ScorerRun) -> bool:
        """True when `run` passes every non-empty field."""
        t = run.target
        if self.agents and (t is None or (t.entity_name not in self.agents
                                          and t.entity_id not in self.agents)):
            return False
        if self.conventions and (t is None or t.convention not in self.conventions):
            return False
        if self.attributes:
            resource = t.resource if t is not None else {}
            for key, want in self.attributes.items():
                if resource.get(key, _MISSING) != want and \
                        run.request_context.get(key, _MISSING) != want:
                    return False
        return True


_MISSING = object()


@dataclass(frozen=True, slots=True)
class ScorerSpec:
    """One configured scorer.

    Attributes:
        scorer: the scorer itself.
        sampling: which traces it scores (deterministic by trace id).
        filter: which runs it sees.
        timeout: seconds one run of it may take, judge calls included.
        judge: the name of the configured judge whose limits its judge calls go through
            (`default`: the `judge:` block).
    """

    scorer: Scorer
    sampling: NoSampling | RatioSampling = field(default_factory=NoSampling)
    filter: RunFilter = field(default_factory=RunFilter)
    timeout: float = 30.0
    judge: str = "default"

    @property
    def id(self) -> str:
        """The scorer's id."""
        return self.scorer.id


@dataclass(frozen=True, slots=True)
class Selection:
    """What decides whether a scorer gets a run: its filter and sampling (plain data, so a
    build process can plan jobs without the scorers themselves)."""

    scorer_id: str
    filter: RunFilter
    sampling: NoSampling | RatioSampling


def selections(specs: Sequence[ScorerSpec]) -> list[Selection]:
    """The selection part of each spec, in order."""
    return [Selection(s.id, s.filter, s.sampling) for s in specs]


@dataclass(slots=True)
class JobPlan:
    """The jobs some runs give, and what to count once they are queued.

    Attributes:
        jobs: one per (run, scorer) that passed the filter and sampling.
        conventions: runs by `target.convention` (`scorecar_agent_runs_total`).
        skipped: (scorer id, `filtered` | `sampled_out`) counts.
        runs: the run object of each job, when planned in this process (None when the plan
            came from a build process: the workers then read the job's JSON).
    """

    jobs: list[Job] = field(default_factory=list)
    conventions: Counter[str] = field(default_factory=Counter)
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)
    runs: list[ScorerRun] | None = field(default_factory=list)

    def extend(self, other: JobPlan) -> None:
        """Add another plan's jobs and counts."""
        self.jobs.extend(other.jobs)
        self.conventions.update(other.conventions)
        self.skipped.update(other.skipped)
        if self.runs is not None and other.runs is not None:
            self.runs.extend(other.runs)
        else:
            self.runs = None


def plan_jobs(runs: Sequence[ScorerRun], chosen: Sequence[Selection], *,
              keep_runs: bool = True) -> JobPlan:
    """One job per (run, scorer) that passes the scorer's filter and sampling."""
    plan = JobPlan(runs=[] if keep_runs else None)
    for run in runs:
        t = run.target
        plan.conventions[(t.convention if t else None) or "unknown"] += 1
        for sel in chosen:
            if not sel.filter.matches(run):
                plan.skipped[sel.scorer_id, "filtered"] += 1
            elif not is_sampled(sel.sampling, t.trace_id if t else None, run.run_id):
                plan.skipped[sel.scorer_id, "sampled_out"] += 1
            else:
                plan.jobs.append(job_for(run, sel.scorer_id))
                if plan.runs is not None:
                    plan.runs.append(run)
    return plan
