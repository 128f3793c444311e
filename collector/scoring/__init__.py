"""Off the request path, in data order: build runs from ready traces, select scorers (one
`plan_jobs` for `serve` and `score`), schedule jobs into the queue, score them under the judge
limits, export records to the sinks with acknowledgement."""

from collector.scoring._build import (
    BuildPool,
    TracePlan,
    build_plan,
    default_processes,
)
from collector.scoring._limits import (
    LimitedProvider,
    Outcome,
    TokenBudget,
    classify_error,
    estimate_tokens,
)
from collector.scoring._specs import (
    RunFilter,
    ScorerSpec,
)
from collector.scoring._workers import (
    JobPlan,
    Scheduler,
    Selection,
    WorkerPool,
    plan_jobs,
    selections,
)
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

__all__ = ["BuildPool", "DEFAULT_DONE_RETENTION", "Job", "JobPlan", "JobQueue", "LimitedProvider", "LiveCache", "MemoryQueue", "Outcome", "QueueFull", "QueueUnwritable", "RunFilter", "Scheduler", "ScorerSpec", "Selection", "SqliteQueue", "TokenBudget", "TracePlan", "WorkerPool", "build_plan", "classify_error", "default_processes", "estimate_tokens", "job_for", "plan_jobs", "selections"]
