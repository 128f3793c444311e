"""Prometheus score metrics (DESIGN §7): `scorecar_score` and `scorecar_scorer_runs_total`,
observed by `PrometheusSink` from each exported `ScoreRecord`.

`ScoreMetrics` registers them on a registry of its own or on the process's (the collector
registers its own metrics — receivers, assembly, queue, judge, forward — beside them), so tests
and several sidecars in one process never collide.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterable, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from scorers.types import ScoreRecord

__all__ = ["CONTENT_TYPE_LATEST", "LabelCap", "PrometheusSink", "ScoreMetrics", "exposition"]

logger = logging.getLogger(__name__)

SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


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


def exposition(registry: CollectorRegistry, *, created_series: bool = False) -> bytes:
    """The text exposition format of every metric on `registry` (for `/metrics`), without the
    `*_created` series unless `created_series`."""
    if created_series:
        return generate_latest(registry)
    return generate_latest(_WithoutCreated(registry))


class ScoreMetrics:
    """The score metrics `PrometheusSink` observes, on `registry` (a new one by default): the
    process registers its own metrics beside them on the same registry.

    Args:
        registry: where the metrics are registered.
        max_agents: distinct `agent` label values kept before the rest become `other`.
        created_series: `render()` also exposes the `*_created` series.
    """

    def __init__(self, registry: CollectorRegistry | None = None, *, max_agents: int = 100,
                 created_series: bool = False) -> None:
        self._created_series = created_series
        r = self.registry = registry or CollectorRegistry(auto_describe=True)
        self.agent_label = LabelCap(max_agents)
        self.score = Histogram("scorecar_score", "Scores by scorer and agent.",
                               ["scorer", "agent"], buckets=SCORE_BUCKETS, registry=r)
        self.scorer_runs = Counter("scorecar_scorer_runs", "Scorer jobs finished, by status "
                                   "(scored, not_scorable, failed, skipped).",
                                   ["scorer", "agent", "status"], registry=r)

    def render(self) -> bytes:
        """The text exposition format of the registry."""
        return exposition(self.registry, created_series=self._created_series)


class PrometheusSink:
    """Observes each exported `ScoreRecord` on `Metrics`: `scorecar_scorer_runs_total{scorer,
    agent,status}` for every record, `scorecar_score{scorer,agent}` for every score.

    The `agent` label is the record's agent name through `metrics.agent_label` (capped; unknown
    agents are `unknown`, agents past the cap `other`). Never fails.

    Args:
        metrics: the score metrics (the process's, or a `ScoreMetrics` of its own).
    """

    name = "prometheus"

    def __init__(self, metrics: ScoreMetrics) -> None:
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
