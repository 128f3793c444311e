"""Off the request path, in data order: build runs from ready traces, select scorers (one
`plan_jobs` for `serve` and `score`), schedule jobs into the queue, score them under the judge
limits, export records to the sinks with acknowledgement."""

from collector.scoring._build import (
    BuildPool,
    TracePlan,
    build_plan,
    default_processes,
)
from collector.scoring._export import ExportLoop
from collector.scoring._handover import Handover
from collector.scoring._limits import (
    LimitedProvider,
    Outcome,
    TokenBudget,
    classify_error,
    estimate_tokens,
)
from collector.scoring._schedule import Scheduler
from collector.scoring._score import JobScorer, run_scorer
from collector.scoring._select import (
    JobPlan,
    RunFilter,
    ScorerSpec,
    Selection,
    plan_jobs,
    selections,
)
from collector.scoring._workers import WorkerPool
from collector.scoring.queue import (
    DEFAULT_DONE_RETENTION,
    Job,
    JobQueue,
    LiveCache,
    MemoryQueue,
    QueueFull,
    QueueUnwritable,
    SqliteQueue,
    job_for,
)

__all__ = ["BuildPool", "DEFAULT_DONE_RETENTION", "ExportLoop", "Handover", "Job", "JobPlan", "JobQueue", "JobScorer", "LimitedProvider", "LiveCache", "MemoryQueue", "Outcome", "QueueFull", "QueueUnwritable", "RunFilter", "Scheduler", "ScorerSpec", "Selection", "SqliteQueue", "TokenBudget", "TracePlan", "WorkerPool", "build_plan", "classify_error", "default_processes", "estimate_tokens", "job_for", "plan_jobs", "run_scorer", "selections"]
