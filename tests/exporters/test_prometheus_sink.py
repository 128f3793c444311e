"""PrometheusSink on a real `ScoreMetrics` registry, read back through prometheus_client's parser:
what a Prometheus scrape of `/metrics` shows after scores were exported."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from exporters import PrometheusSink, ScoreMetrics, ScoreSink
from scorers import score_record, skipped_record
from scorers.builtin import get_builtin
from tests.exporters._records import AGENT, make_records, make_run


def samples(metrics: ScoreMetrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = metrics.render().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def labels(**kv: str) -> frozenset[tuple[str, str]]:
    return frozenset(kv.items())


async def test_runs_are_counted_by_status_and_scores_fill_the_histogram() -> None:
    records = await make_records()
    metrics = ScoreMetrics()
    sink = PrometheusSink(metrics)
    assert isinstance(sink, ScoreSink) and sink.name == "prometheus"
    skipped = skipped_record(get_builtin("completeness"), make_run(), "daily_token_budget")
    await sink.export([records.code, records.judge, records.failed, skipped])
    await sink.export([records.judge])
    await sink.shutdown()

    got = samples(metrics)
    runs = "scorecar_scorer_runs_total"
    assert got[runs, labels(scorer="answer-quality", agent=AGENT, status="scored")] == 2
    assert got[runs, labels(scorer="completeness", agent=AGENT, status="scored")] == 1
    assert got[runs, labels(scorer="broken-judge", agent=AGENT, status="failed")] == 1
    assert got[runs, labels(scorer="completeness", agent=AGENT, status="skipped")] == 1

    judged = {"scorer": "answer-quality", "agent": AGENT}
    assert got["scorecar_score_count", labels(**judged)] == 2
    assert got["scorecar_score_sum", labels(**judged)] == 1.5
    assert got["scorecar_score_bucket", labels(**judged, le="0.7")] == 0
    assert got["scorecar_score_bucket", labels(**judged, le="0.8")] == 2
    assert got["scorecar_score_bucket", labels(**judged, le="1.0")] == 2
    assert got["scorecar_score_bucket", labels(**judged, le="+Inf")] == 2
    # completeness scored 4/7: in the 0.6 bucket, not the 0.5 one.
    code = {"scorer": "completeness", "agent": AGENT}
    assert got["scorecar_score_bucket", labels(**code, le="0.5")] == 0
    assert got["scorecar_score_bucket", labels(**code, le="0.6")] == 1
    # Failed and skipped runs observe no score.
    assert ("scorecar_score_count", labels(scorer="broken-judge", agent=AGENT)) not in got
    # No `_created` series: they would double the series count for nothing.
    assert not [name for name, _ in got if name.endswith("_created")]


async def test_agent_label_is_capped_and_unknown_agents_are_named_so() -> None:
    metrics = ScoreMetrics(max_agents=2)
    sink = PrometheusSink(metrics)
    scorer = get_builtin("completeness")
    runs = [make_run(span_id=f"{i:016x}", agent=f"agent-{i}") for i in range(1, 5)]
    runs.append(make_run(agent=None))
    await sink.export([score_record(scorer, run, await scorer.run(run)) for run in runs])

    got = samples(metrics)
    per_agent = {dict(lbls)["agent"]: value for (name, lbls), value in got.items()
                 if name == "scorecar_scorer_runs_total"}
    assert per_agent == {"agent-1": 1, "agent-2": 1, "other": 3}


async def test_created_series_can_be_kept() -> None:
    records = await make_records()
    metrics = ScoreMetrics(created_series=True)
    await PrometheusSink(metrics).export([records.code])
    assert any(name.endswith("_created") for name, _ in samples(metrics))
