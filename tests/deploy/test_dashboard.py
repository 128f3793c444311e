"""The Grafana dashboard the chart ships (`helm/scorecar/dashboards/scorecar.json`).

The JSON itself is checked (identity, unique panel ids, a sane grid, every data source a
variable, only metrics and labels `exporters/prometheus.py` exposes, the scorer links to the
evaluation spans), then every panel's every PromQL expression is sent to a real Prometheus
(Debian's `prometheus`, started here on a free loopback port) that scrapes a running
`scorecar demo`, with the dashboard variables substituted as Grafana would: each must return
data.

What the demo does, so that every series a panel reads exists and moves: the demo scores the
real captures of six libraries with its code scorers and, pointed at the fake Anthropic
server, the answer_relevancy judge (the fake answers every structured request with a valid
verdict; its first reply of each round is a 529 `overloaded`: a judge error, and that run's
answer_relevancy score fails). After
the demo's table (everything scored) and a baseline scrape, the test sends the same captures
again under fresh trace ids through the official OTLP exporter (a second round of scores, so
every rate is taken over real increases), re-sends one batch unchanged (an agent's exporter
retrying: duplicates) and one malformed OTLP/HTTP request (a refusal), in both rounds.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import prometheus_client
import pytest

from collector._telemetry import Metrics
from tests.deploy._prometheus import (
    GRAFANA_INTERVALS,
    Prometheus,
    expressions,
    find_prometheus,
    grouping_labels,
    load_dashboard,
    matcher_labels,
    metric_names,
    panels,
    parse_label_values,
    prometheus_version,
    regex_value,
    substitute,
    variables,
)
from tests.fakes.fake_anthropic import (
    FakeAnthropic,
    RecordedRequest,
    Reply,
    overloaded,
    structured,
    text,
)

ROOT = Path(__file__).resolve().parents[2]

DEMO_CANNOT_PRODUCE = {
    "scorecar_forward_total": "the demo does not forward (forward.endpoint is not set)",
    "scorecar_runs_skipped_total": (
        "the demo's scorers have no filter and no sampling, it sets no daily token budget and "
        "its queue never fills, so no run is ever skipped"),
}
"""Series the demo never exposes, with why. Their queries must still be valid PromQL and
return nothing; once the demo produces one, the test fails until it is removed from here."""

SCRAPE_LABELS = {"instance", "job"}
NO_EVALUATION_SPANS = {"scorecar_runs_skipped_total"}
"""Series of runs that were never scored, so there are no evaluation spans to link to."""


# ---------------------------------------------------------------------- what scorecar exposes


def exposed_series() -> dict[str, set[str]]:
    """Every series name `Metrics` exposes (with the `_total`, `_bucket`, `_sum` and `_count`
    suffixes) -> its label names (`le` for buckets)."""
    out: dict[str, set[str]] = {}
    for metric in vars(Metrics()).values():
        if not isinstance(metric, prometheus_client.Counter | prometheus_client.Gauge
                          | prometheus_client.Histogram):
            continue
        name, labels = metric._name, set(metric._labelnames)  # noqa: SLF001 - no public API
        if isinstance(metric, prometheus_client.Counter):
            out[f"{name}_total"] = labels
        elif isinstance(metric, prometheus_client.Histogram):
            out[f"{name}_bucket"] = labels | {"le"}
            out[f"{name}_sum"] = labels
            out[f"{name}_count"] = labels
        else:
            out[name] = labels
    return out


def _links(panel: dict[str, Any]) -> list[dict[str, Any]]:
    field_config = panel.get("fieldConfig", {})
    found = list(field_config.get("defaults", {}).get("links", []))
    for override in field_config.get("overrides", []):
        for prop in override.get("properties", []):
            if prop.get("id") == "links":
                found.extend(prop["value"])
    return found


# ---------------------------------------------------------------------- the JSON itself


def test_dashboard_is_the_provisionable_scorecar_dashboard() -> None:
    dash = load_dashboard()
    assert dash["uid"] == "scorecar"
    assert dash["id"] is None  # provisioned or imported: Grafana assigns the id
    assert dash["schemaVersion"] >= 41  # what Grafana 12 writes
    assert dash["title"] and dash["panels"]
    assert dash["annotations"]["list"] == []  # nothing bound to a data source by name


def test_panel_ids_are_unique_and_the_grid_is_sane() -> None:
    all_panels = list(panels(load_dashboard()))
    ids = [p["id"] for p in all_panels]
    assert all(isinstance(i, int) and i > 0 for i in ids)
    assert len(ids) == len(set(ids)), f"duplicate panel ids: {sorted(ids)}"
    boxes = []
    for p in all_panels:
        g = p["gridPos"]
        assert g["w"] > 0 and g["h"] > 0 and g["x"] >= 0 and g["y"] >= 0, p["title"]
        assert g["x"] + g["w"] <= 24, f"{p['title']!r} is wider than the 24-column grid"
        boxes.append((p["title"], g["x"], g["y"], g["x"] + g["w"], g["y"] + g["h"]))
    for i, (a, ax0, ay0, ax1, ay1) in enumerate(boxes):
        for b, bx0, by0, bx1, by1 in boxes[i + 1:]:
            overlap = ax0 < bx1 and bx0 < ax1 and ay0 < by1 and by0 < ay1
            assert not overlap, f"panels {a!r} and {b!r} overlap"
    for p in all_panels:
        assert p["title"] and (p["type"] == "row" or p.get("description")), p["id"]


def test_every_data_source_is_a_dashboard_variable() -> None:
    dash = load_dashboard()
    vars_ = variables(dash)
    assert vars_["datasource"]["type"] == "datasource"
    assert vars_["datasource"]["query"] == "prometheus"
    assert vars_["tracing"]["type"] == "datasource"
    assert vars_["tracing"]["query"] == "tempo"
    prometheus = {"type": "prometheus", "uid": "${datasource}"}
    for panel in panels(dash):
        if panel["type"] == "row":
            assert "targets" not in panel
            continue
        assert panel["datasource"] == prometheus, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == prometheus, (panel["title"], target["refId"])
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
    for var in vars_.values():
        if var["type"] == "query":
            assert var["datasource"] == prometheus, var["name"]


def test_scorer_and_agent_variables_list_label_values_with_all() -> None:
    vars_ = variables(load_dashboard())
    for name, selector_metric in (("scorer", "scorecar_scorer_runs_total"),
                                  ("agent", "scorecar_scorer_runs_total")):
        var = vars_[name]
        assert var["type"] == "query" and var["includeAll"] and var["multi"], name
        assert var["allValue"] == ".*", name
        match, label = parse_label_values(var["definition"])
        assert label == name and match.startswith(selector_metric), var["definition"]
        assert var["query"]["query"] == var["definition"], name
    # The agents follow the chosen scorers.
    assert '$scorer' in vars_["agent"]["definition"]


def test_queries_read_only_metrics_and_labels_scorecar_exposes() -> None:
    exposed = exposed_series()
    dash = load_dashboard()
    used: set[str] = set()
    for panel, target in expressions(dash):
        expr = target["expr"]
        names = metric_names(expr)
        where = f"{panel['title']!r} {target['refId']}"
        assert names, f"{where} reads no scorecar metric: {expr}"
        unknown = names - exposed.keys()
        assert not unknown, f"{where} reads {unknown}, which scorecar (collector/_telemetry.py) does not expose"
        used |= names
        for metric, labels in matcher_labels(expr).items():
            extra = labels - exposed[metric] - SCRAPE_LABELS
            assert not extra, f"{where} matches {metric} on labels it does not have: {extra}"
        known = set().union(*(exposed[n] for n in names)) | SCRAPE_LABELS
        extra = grouping_labels(expr) - known
        assert not extra, f"{where} groups by labels no metric of it has: {extra}"
        # Grafana's own variables only: intervals, the dashboard's variables.
        refs = set(re.findall(r"\$\{?(\w+)", expr))
        assert refs <= set(GRAFANA_INTERVALS) | set(variables(dash)), (where, refs)
    # Every metric family scorecar exposes has a panel.
    families = {re.sub(r"_(bucket|sum|count)$", "", n) for n in exposed}
    shown = {re.sub(r"_(bucket|sum|count)$", "", n) for n in used}
    assert families <= shown, f"no panel shows {sorted(families - shown)}"


def _decode_explore(url: str, values: dict[str, str]) -> tuple[dict[str, str], dict[str, Any]]:
    """The Explore URL's parameters and its decoded `panes`, after Grafana's substitution."""
    for name, value in values.items():
        url = url.replace("${" + name + "}", urllib.parse.quote(value, safe=""))
    assert "${" not in url, f"a variable was left in the link: {url}"
    parsed = urllib.parse.urlsplit(url)
    assert parsed.path == "/explore", url
    params = dict(urllib.parse.parse_qsl(parsed.query))
    return params, json.loads(params["panes"])


def test_scorer_panels_link_to_their_evaluation_spans() -> None:
    """A click on a scorer's series (or table row) opens Explore on the tracing data source
    with a TraceQL search for that scorer's evaluation spans, named `evaluation {scorer_id}`
    (DESIGN §7), over the dashboard's time range."""
    dash = load_dashboard()
    linked = 0
    sample = {"tracing": "tempo-uid", "__org": "1", "__from": "1700000000000",
              "__to": "1700003600000"}
    for panel in panels(dash):
        grouped_by_scorer = any("scorer" in grouping_labels(t["expr"])
                                and metric_names(t["expr"]) - NO_EVALUATION_SPANS
                                for t in panel.get("targets", []))
        links = _links(panel)
        if grouped_by_scorer:
            assert links, f"{panel['title']!r} shows scorers but links to no evaluation spans"
        for link in links:
            series_var = re.findall(r"\$\{(__field\.labels\.scorer|__data\.fields\.scorer)\}",
                                    link["url"])
            assert series_var, f"{panel['title']!r}: the link does not use the clicked scorer"
            if series_var[0].startswith("__field"):
                for target in panel["targets"]:
                    assert "scorer" in grouping_labels(target["expr"]), (
                        f"{panel['title']!r} {target['refId']}: its series have no scorer label "
                        "for the link")
            params, panes = _decode_explore(link["url"], {**sample, series_var[0]: "tone"})
            assert params["orgId"] == "1" and params["schemaVersion"] == "1"
            (pane,) = panes.values()
            assert pane["datasource"] == "tempo-uid"
            (query,) = pane["queries"]
            assert query["datasource"] == {"type": "tempo", "uid": "tempo-uid"}
            assert query["queryType"] == "traceql"
            assert query["query"] == '{ name = "evaluation tone" }'
            assert pane["range"] == {"from": sample["__from"], "to": sample["__to"]}
            assert link["title"] and link.get("targetBlank") is True
            linked += 1
    assert linked >= 2
    (dash_link,) = dash["links"]
    _, panes = _decode_explore(dash_link["url"], sample)
    assert next(iter(panes.values()))["queries"][0]["query"] == '{ name =~ "evaluation .+" }'


# ---------------------------------------------------------------------- against Prometheus


def _judge_reply(request: RecordedRequest) -> Reply:
    """A valid answer-relevancy verdict for a structured request, a short reason otherwise."""
    body = request.body if isinstance(request.body, dict) else {}
    config = body.get("output_config")
    if request.forced_tool or "output_format" in body or (
            isinstance(config, dict) and "format" in config):
        return structured({"results": [
            {"statement": "The answer talks about the weather asked for.", "result": "yes",
             "reason": "It addresses the question."},
            {"statement": "It adds a remark.", "result": "unsure", "reason": "Partly related."},
        ]}, input_tokens=120, output_tokens=40)
    return text("The answer addresses the user's question.", input_tokens=90, output_tokens=12)


def _retryable_judge_error() -> Reply:
    """A 529 `overloaded_error` (counted as outcome `retryable`)."""
    return overloaded(headers={"retry-after-ms": "10"})


class DemoProcess:
    """`scorecar demo --records FILE` (no `--once`) as a subprocess, stdout read by a thread."""

    _PORTS = re.compile(r"OTLP/gRPC :(\d+), OTLP/HTTP :(\d+), metrics http://127\.0\.0\.1:(\d+)/")

    def __init__(self, records: Path, env: dict[str, str]) -> None:
        self.records = records
        self.lines: list[str] = []
        self.grpc_port = self.http_port = self.metrics_port = 0
        self._changed = threading.Condition()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "collector.cli", "demo", "--records", str(records)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            stdin=subprocess.DEVNULL)
        self._reader = threading.Thread(target=self._read, name="demo-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        """The first stdout line matching `pattern`; fails if the demo exits or times out."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines:
                    if m := regex.search(line):
                        return m
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"scorecar demo never printed /{pattern}/ "
                                         f"(exit code {self.proc.poll()}); its output:\n"
                                         + "\n".join(self.lines[-60:]))
                self._changed.wait(min(left, 0.5))

    def wait_for_ports(self, timeout: float = 60.0) -> None:
        """Read the OTLP and metrics ports from the demo's first line."""
        m = self.wait_for(self._PORTS.pattern, timeout)
        self.grpc_port, self.http_port, self.metrics_port = (int(g) for g in m.groups())

    def record_count(self) -> int:
        """Score records written to the `--records` file so far."""
        try:
            return sum(1 for line in self.records.read_text(encoding="utf-8").splitlines()
                       if line.strip())
        except FileNotFoundError:
            return 0

    def stop(self) -> None:
        """Ctrl-C (the demo stops the sidecar and exits), then SIGKILL after 20 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._reader.join(timeout=5)


def _send_round(demo: DemoProcess, *, fresh_traces: bool) -> int:
    """Send traffic a real agent fleet would: (when `fresh_traces`) the demo's captures under
    new trace ids, then one batch again unchanged (an exporter retrying: duplicates) and one
    malformed OTLP/HTTP request (refused). Returns how many new agent traces were sent."""
    from collector.cli import demo_trace_files, otlp_span_exporter, send_spans
    from collector.otlp import read_otlp_file

    files = demo_trace_files()
    exporter = otlp_span_exporter(f"127.0.0.1:{demo.grpc_port}", "grpc")
    sent = 0
    try:
        if fresh_traces:
            for path in files:
                spans = read_otlp_file(path).spans
                new_ids = {s.trace_id: uuid.uuid4().hex for s in spans}
                send_spans([dataclasses.replace(s, trace_id=new_ids[s.trace_id])
                            for s in spans], exporter)
                sent += len(new_ids)
        send_spans(read_otlp_file(files[0]).spans, exporter)
    finally:
        exporter.shutdown()
    request = urllib.request.Request(
        f"http://127.0.0.1:{demo.http_port}/v1/traces", data=b"\x0a\xff\xff not protobuf",
        headers={"Content-Type": "application/x-protobuf"}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400
    return sent


def _wait_records(demo: DemoProcess, count: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while demo.record_count() < count:
        if time.monotonic() > deadline or demo.proc.poll() is not None:
            raise AssertionError(f"the demo wrote {demo.record_count()} of {count} score "
                                 "records; its output:\n" + "\n".join(demo.lines[-40:]))
        time.sleep(0.1)


@dataclasses.dataclass
class Live:
    """The running demo, the Prometheus scraping it, the fake judge API and Prometheus's version."""

    prometheus: Prometheus
    demo: DemoProcess
    fake: FakeAnthropic
    version: str


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """A `scorecar demo` scored two rounds of real traces, scraped by a real Prometheus."""
    binary = find_prometheus()  # no Prometheus: the test fails with the install command
    version = prometheus_version(binary)
    tmp = tmp_path_factory.mktemp("dashboard")
    fake = FakeAnthropic(default_reply=_judge_reply).start()
    demo: DemoProcess | None = None
    prometheus: Prometheus | None = None
    try:
        fake.enqueue(_retryable_judge_error())
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SCORECAR_"))}
        env.update(fake.env(), PYTHONUNBUFFERED="1")
        demo = DemoProcess(tmp / "scores.jsonl", env)
        demo.wait_for_ports()
        prometheus = Prometheus(binary, tmp, [f"127.0.0.1:{demo.metrics_port}"]).start()
        demo.wait_for(r"/metrics stays up", timeout=120)  # the table: everything is scored
        first_round = demo.record_count()
        assert first_round > 0
        assert fake.message_requests, "the demo's judge never called the fake Anthropic server"
        _send_round(demo, fresh_traces=False)
        prometheus.wait_scrapes(after=time.time(), count=2)
        fake.enqueue(_retryable_judge_error())
        assert _send_round(demo, fresh_traces=True) > 0
        _wait_records(demo, 2 * first_round)
        prometheus.wait_scrapes(after=time.time(), count=2)
        yield Live(prometheus, demo, fake, version)
    finally:
        if prometheus is not None:
            prometheus.stop()
        if demo is not None:
            demo.stop()
        fake.stop()


def _is_finite(sample: dict[str, Any]) -> bool:
    return math.isfinite(float(sample["value"][1]))


@pytest.mark.slow
def test_every_panel_query_returns_data_from_a_real_prometheus(live: Live) -> None:
    """Every expression of every panel, with the variables as Grafana would set them (`All`,
    and every value the variable query lists), returns at least one finite value (above 0 for
    a rate or an increase: the second round of traces moved every counter)."""
    dash = load_dashboard()
    vars_ = variables(dash)
    prom = live.prometheus
    listed = {}
    for name in ("scorer", "agent"):
        match, label = parse_label_values(substitute(vars_[name]["definition"],
                                                     {"scorer": ".*"}))
        listed[name] = prom.label_values(label, match)
    constants = {name: v["query"] for name, v in vars_.items() if v["type"] == "textbox"}
    choices = {
        "All": {"scorer": ".*", "agent": ".*"},
        "every listed value": {name: regex_value(values) for name, values in listed.items()},
    }
    problems: list[str] = []
    checked = 0
    for choice, selected in choices.items():
        values = {**GRAFANA_INTERVALS, **constants, **selected}
        for panel, target in expressions(dash):
            expr = substitute(target["expr"], values)
            assert "$" not in expr, expr
            where = f"panel {panel['id']} {panel['title']!r} {target['refId']} ({choice})"
            result = prom.query(expr)  # bad PromQL raises PromQLError here
            checked += 1
            cannot = metric_names(expr) & DEMO_CANNOT_PRODUCE.keys()
            if cannot:
                if result:
                    problems.append(f"{where}: the demo now produces {sorted(cannot)}: remove "
                                    "it from DEMO_CANNOT_PRODUCE")
                continue
            if not result:
                problems.append(f"{where} returned nothing: {expr}")
            elif not any(_is_finite(s) for s in result):
                problems.append(f"{where} returned only NaN/Inf: {expr} -> {result}")
            elif re.search(r"\b(rate|increase)\(", expr) and not any(
                    _is_finite(s) and float(s["value"][1]) > 0 for s in result):
                # The second round moved every counter the demo produces.
                problems.append(f"{where} shows no activity: {expr} -> {result}")
    assert checked >= 2 * 20
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_variable_queries_list_the_demo_scorers_and_agents(live: Live) -> None:
    vars_ = variables(load_dashboard())
    prom = live.prometheus
    match, label = parse_label_values(vars_["scorer"]["definition"])
    scorers = prom.label_values(label, match)
    assert {"completeness", "keyword_coverage", "tone", "tool_call_accuracy",
            "answer_relevancy"} <= set(scorers)
    # The agent list follows the scorer choice: one scorer, and All.
    one = substitute(vars_["agent"]["definition"], {"scorer": "tone"})
    match, label = parse_label_values(one)
    assert set(prom.label_values(label, match)) == {"weather-agent", "Weather Agent"}
    match, label = parse_label_values(substitute(vars_["agent"]["definition"],
                                                 {"scorer": "no_such_scorer"}))
    assert prom.label_values(label, match) == []


@pytest.mark.slow
def test_the_judge_ran_against_the_fake_and_its_errors_are_counted(live: Live) -> None:
    """The judge panels read what really happened: every fake reply counted by outcome."""
    prom = live.prometheus
    replies = len(live.fake.message_requests)
    counted = prom.query("sum(scorecar_judge_requests_total)")
    assert float(counted[0]["value"][1]) == replies
    errors = prom.query('sum(scorecar_judge_requests_total{outcome="retryable"})')
    assert float(errors[0]["value"][1]) == 2  # one 529 per round
    assert not getattr(live.fake, "rejections", []), "the fake refused judge requests"
    records = [json.loads(line) for line in
               live.demo.records.read_text(encoding="utf-8").splitlines() if line]
    judged = Counter(r["status"] for r in records if r["scorerId"] == "answer_relevancy")
    # the demo's judge retries as `serve`'s default judge block does: each 529 is retried
    assert judged["scored"] >= 2 * 10 and judged["failed"] == 0, judged
    assert live.version.startswith("prometheus, version ")
