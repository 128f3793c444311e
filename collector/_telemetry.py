"""The process's own metrics (DESIGN §7's fixed names): what the receivers, intake, scoring,
the judge's limits and forward count, on one registry with the score metrics of the Prometheus
sink. Below every room of collector/ (each stage is handed the one `Metrics` the service makes);
the admin port renders it.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from exporters.prometheus import ScoreMetrics, exposition

__all__ = ["Metrics"]

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
LAG_BUCKETS = (0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)


class Metrics:
    """Every metric of the process, registered on `self.registry`: its own (receivers, intake,
    scoring, the judge's limits, forward) and the score metrics of `exporters.prometheus`
    (`self.scores`, which `PrometheusSink` observes).

    Args:
        max_agents: distinct `agent` label values kept before the rest become `other`.
        created_series: also expose the `*_created` series of counters and histograms.
    """

    def __init__(self, *, max_agents: int = 100, created_series: bool = False) -> None:
        self._created_series = created_series
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.scores = ScoreMetrics(r, max_agents=max_agents, created_series=created_series)
        """What `PrometheusSink` observes (`scorecar_score`, `scorecar_scorer_runs_total`)."""
        self.agent_label = self.scores.agent_label
        self.score = self.scores.score
        self.scorer_runs = self.scores.scorer_runs
        self.scorer_duration = Histogram("scorecar_scorer_duration_seconds",
                                         "Wall time of one scorer run.", ["scorer"],
                                         buckets=DURATION_BUCKETS, registry=r)
        self.judge_requests = Counter("scorecar_judge_requests", "Judge HTTP calls by outcome "
                                      "(ok, retryable, auth, quota, unknown_model, refused, "
                                      "error).", ["provider", "model", "outcome"], registry=r)
        self.judge_tokens = Counter("scorecar_judge_tokens", "Judge tokens by type (input, "
                                    "output; cached_input and reasoning: the parts of them the "
                                    "provider reports as cached / spent reasoning, else 0).",
                                    ["provider", "model", "type"], registry=r)
        self.judge_request_duration = Histogram("scorecar_judge_request_duration_seconds",
                                                "Wall time of one judge HTTP call.",
                                                ["provider", "model"],
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
        return exposition(self.registry, created_series=self._created_series)
