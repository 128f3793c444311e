"""Prometheus metrics (DESIGN §7): every metric scorecar exposes, with the fixed names.

One `Metrics` object holds them on its own registry, so tests and several sidecars in one
process never collide. The collector increments the receiver, assembly and queue metrics;
`PrometheusSink` (below) observes each exported `ScoreRecord`.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterable, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from scorers.types import ScoreRecord

__all__ = ["CONTENT_TYPE_LATEST", "LabelCap", "Metrics", "PrometheusSink"]

logger = logging.getLogger(__name__)

SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
LAG_BUCKETS = (0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)


class LabelCap:
    """Bounds the distinct values of one label: the first `limit` values seen are kept, every
    later one is reported as `other` (so a label never explodes the series count)."""

    def __init__(self, limit: int = 100, other: str = "other") -> None:
        self._limit = limit
        self._other = other
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        v = value or "unknown"
        if v in self._seen:
            return v
        with self._lock:
            if len(self._seen) < self._limit:
                self._seen.add(v)
                return v
        return self._other


class _WithoutCreated(Collector):
    """A registry's metrics without the `_created` samples.

    prometheus_client adds a `*_created` series (the creation time) to every counter and
    histogram label set, which doubles the series count for nothing a dashboard uses. Its switch,
    `disable_created_metrics()`, is process-global; this filter is local to one `Metrics`.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        for metric in self._registry.collect():
            metric.samples = [s for s in metric.samples if not s.name.endswith("_created")]
            yield metric


class Metrics:
    """Every scorecar metric, registered on `self.registry`.

    Args:
        max_agents: distinct `agent` label values kept before the rest become `other`.
        created_series: also expose the `*_created` series of counters and histograms.
    """

    def __init__(self, *, max_agents: int = 100, created_series: bool = False) -> None:
        self._created_series = created_series
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.agent_label = LabelCap(max_agents)
        self.score = Histogram("scorecar_score", "Scores by scorer and agent.",
                               ["scorer", "agent"], buckets=SCORE_BUCKETS, registry=r)
        self.scorer_runs = Counter("scorecar_scorer_runs", "Scorer jobs finished, by status "
                                   "(scored, not_scorable, failed, skipped).",
                                   ["scorer", "agent", "status"], registry=r)
        self.scorer_duration = Histogram("scorecar_scorer_duration_seconds",
                                         "Wall time of one scorer run.", ["scorer"],
                                         buckets=DURATION_BUCKETS, registry=r)
        self.judge_requests = Counter("scorecar_judge_requests", "Judge HTTP calls by outcome "
                                      "(ok, retryable, auth, refused, error).",
                                      ["model", "outcome"], registry=r)
        self.judge_tokens = Counter("scorecar_judge_tokens", "Judge tokens by type "
                                    "(input, output).", ["model", "type"], registry=r)
        self.judge_request_duration = Histogram("scorecar_judge_request_duration_seconds",
                                                "Wall time of one judge HTTP call.", ["model"],
                                                buckets=DURATION_BUCKETS, registry=r)
        self.spans_received = Counter("scorecar_spans_received", "Spans (and log records) "
                                      "accepted, by transport (grpc, http).", ["transport"],
                                      registry=r)
        self.spans_refused = Counter("scorecar_spans_refused", "Spans refused by reason; 1 per "
                                     "request refused whole before decoding.", ["reason"],
                                     registry=r)
        self.agent_runs = Counter("scorecar_agent_runs", "Agent runs rebuilt, by convention.",
                                  ["convention"], registry=r)
        self.runs_skipped = Counter("scorecar_runs_skipped", "Runs not scored by a scorer, by "
                                    "reason (filtered, sampled_out, daily_token_budget, "
                                    "queue_full, storage: held until the queue takes them).",
                                    ["scorer", "reason"], registry=r)
        self.queue_depth = Gauge("scorecar_queue_depth", "Jobs waiting or running.", registry=r)
        self.traces_pending = Gauge("scorecar_traces_pending", "Traces buffered, not yet "
                                    "turned into runs.", registry=r)
        self.score_lag = Histogram("scorecar_score_lag_seconds", "Agent span end to score "
                                   "exported.", buckets=LAG_BUCKETS, registry=r)
        self.export = Counter("scorecar_export", "Score record exports by exporter and "
                              "outcome (ok, retry, dropped).", ["exporter", "outcome"],
                              registry=r)
        self.forward = Counter("scorecar_forward", "Spans and log records passed through to "
                               "forward.endpoint, by signal (traces, logs) and outcome "
                               "(forwarded, retried, dropped_full, dropped_permanent, "
                               "dropped_shutdown).", ["signal", "outcome"], registry=r)
        self.build_reasons = Counter("scorecar_transform_reasons", "Spans, logs and runs the "
                                     "run builder did not use, by reason code.", ["reason"],
                                     registry=r)

    def render(self) -> bytes:
        """The text exposition format of every metric (for `/metrics`)."""
        if self._created_series:
            return generate_latest(self.registry)
        return generate_latest(_WithoutCreated(self.registry))


class PrometheusSink:
    """Observes each exported `ScoreRecord` on `Metrics`: `scorecar_scorer_runs_total{scorer,
    agent,status}` for every record, `scorecar_score{scorer,agent}` for every score.

    The `agent` label is the record's agent name through `metrics.agent_label` (capped; unknown
    agents are `unknown`, agents past the cap `other`). Never fails.

    Args:
        metrics: the process's metrics.
    """

    name = "prometheus"

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    async def export(self, records: Sequence[ScoreRecord]) -> None:
        """Count `records` and observe their scores; never raises."""
        m = self.metrics
        for record in records:
            try:
                name = record.entity.get("name")
                agent = m.agent_label(name if isinstance(name, str) else None)
                m.scorer_runs.labels(scorer=record.scorer_id, agent=agent,
                                     status=record.status).inc()
                score = record.score
                if record.status == "scored" and score is not None and math.isfinite(score):
                    m.score.labels(scorer=record.scorer_id, agent=agent).observe(score)
            except Exception:  # a metric must never fail an export
                logger.exception("could not observe score record %s", record.id)

    async def shutdown(self) -> None:
        """Nothing to release."""
