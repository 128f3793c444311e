"""Crash safety: `kill -9` at random moments while agents stream runs; restart each time.

Figure: runs lost (a run whose spans an agent saw acknowledged but that never got its scores)
and score ids changed (one id exported with two different values). Goal: 0, 0.

Also the helpers the other fault figures share (`_faults_outage`, `_faults_storm`,
`_faults_overload`, `_faults_disk`): unique copies of the weather agent's traces, raw OTLP
requests, a `/metrics` reader.

    python bench/faults.py crash [--quick]
"""

from __future__ import annotations

import dataclasses
import random
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# Run as a script, bench/ comes first on sys.path and its modules would shadow packages.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


# --------------------------------------------------------------------------- shared helpers


def agent_runs(n: int, rng: random.Random, *, unique_text: bool = False) -> list[list[Any]]:
    """`n` copies of the weather agent's two traces (two runs), each with fresh trace ids.

    `unique_text` also makes every copy's content unique ("Paris" → "Paris-<k>"), so two
    copies never ask a judge the same thing.
    """
    from collector.otlp import read_otlp_file

    spans = read_otlp_file(ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl").spans
    out = []
    for k in range(n):
        ids = {t: f"{rng.getrandbits(128):032x}" for t in {s.trace_id for s in spans}}
        copy = []
        for s in spans:
            attrs = s.attributes
            if unique_text:
                attrs = {key: v.replace("Paris", f"Paris-{k}") if isinstance(v, str) else v
                         for key, v in attrs.items()}
            copy.append(dataclasses.replace(s, trace_id=ids[s.trace_id], attributes=attrs))
        out.append(copy)
    return out


def run_ids(batches: list[list[Any]]) -> set[str]:
    """The run ids the sidecar will build from these batches."""
    from transforms import build_runs, group_traces

    return {r.run_id for batch in batches for t in group_traces(batch).values()
            for r in build_runs(t).runs}


def request_body(spans: list[Any]) -> bytes:
    """One serialized `ExportTraceServiceRequest` holding `spans` (timestamps kept)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from collector.cli import to_readable_spans

    return bytes(encode_spans(to_readable_spans(spans)).SerializeToString())


class RawAgent:
    """An agent calling TraceService/Export with raw bytes, seeing every status code."""

    def __init__(self, endpoint: str, timeout: float = 5.0) -> None:
        import grpc  # type: ignore[import-untyped]

        self._grpc = grpc
        self.channel = grpc.insecure_channel(endpoint, options=[
            ("grpc.max_send_message_length", 64 << 20)])
        self._call = self.channel.unary_unary(EXPORT)
        self.timeout = timeout

    def export(self, body: bytes) -> str:
        """Send one request; return the gRPC status code name (`OK`, `UNAVAILABLE`, …)."""
        try:
            self._call(body, timeout=self.timeout)
        except self._grpc.RpcError as exc:
            return str(exc.code().name)
        return "OK"

    def close(self) -> None:
        """Close the channel."""
        self.channel.close()


def http_export(endpoint: str, body: bytes, timeout: float = 5.0) -> tuple[int, str | None]:
    """POST one protobuf request to `/v1/traces`; return (status, Retry-After)."""
    req = urllib.request.Request(f"http://{endpoint}/v1/traces", data=body, method="POST",
                                 headers={"Content-Type": "application/x-protobuf"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.headers.get("Retry-After")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Retry-After")


def readyz(url: str) -> tuple[int, str]:
    """`/readyz`: (status, body)."""
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def mark(ok: bool) -> str:
    """`ok` or `MISSED` for a goal."""
    return "ok" if ok else "MISSED"


# --------------------------------------------------------------------------- the figure


def measure(runs: int = 1_000, kills: int = 20, seed: int = 20261201,
            wait: float = 300.0) -> dict[str, Any]:
    """Stream `runs` agent runs (2 per batch) into `scorecar serve`; kill -9 it `kills` times at
    random moments (between requests, during a request, while assembling/scoring/exporting),
    restarting it each time; then wait for every acknowledged run's scores.

    Returns:
        runs, kills, lost (acknowledged runs without every score), changed (score ids with two
        values), records, resent (requests the agent had to send again).
    """
    from tests.e2e._serve import ServeProcess, base_config, export_or_die, read_jsonl

    rng = random.Random(seed)
    batches = agent_runs(max(1, runs // 2), rng)
    expected = run_ids(batches)
    # kill points spread over the stream, a few of them after it (assembly, scoring, export)
    tail = max(1, kills // 5)
    kill_at = sorted(rng.sample(range(1, len(batches)), min(kills - tail, len(batches) - 1)))
    with tempfile.TemporaryDirectory(prefix="scorecar-crash-") as name:
        tmp = Path(name)
        config = base_config(tmp, scorers=[{"scorer": "tests.e2e.e2e_scorers:random_score"},
                                           {"scorer": "builtin:tone"}])
        config["assembly"] = {"quiet_period": 0.1, "max_wait": 5.0, "build_processes": 1}
        serve = ServeProcess(config, tmp)
        killed = resent = 0
        started = time.monotonic()
        try:
            serve.start(timeout=60)
            i = 0
            while i < len(batches):
                in_flight = bool(kill_at) and kill_at[0] <= i and rng.random() < 0.5
                if kill_at and kill_at[0] <= i and not in_flight:
                    kill_at.pop(0)
                    serve.kill()
                    killed += 1
                    serve.start(timeout=60)
                kill_after = None
                if in_flight:
                    kill_at.pop(0)
                    kill_after = rng.uniform(0, 0.02)
                if export_or_die(serve, batches[i], kill_after):
                    i += 1  # acknowledged: must be scored whatever happens next
                else:
                    resent += 1  # not acknowledged: the agent sends it again
                if serve.proc is not None and serve.proc.poll() is not None:
                    killed += 1
                    serve.start(timeout=60)
            while killed < kills:  # die while assembling, scoring and exporting
                time.sleep(rng.uniform(0.05, 0.6))
                serve.kill()
                killed += 1
                serve.start(timeout=60)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                records = read_jsonl(tmp / "scores.jsonl")
                if {r["runId"] for r in records} >= expected and \
                        len({r["id"] for r in records}) >= 2 * len(expected):
                    break
                time.sleep(0.5)
            code = serve.terminate(timeout=60)
        finally:
            serve.kill()
        records = read_jsonl(tmp / "scores.jsonl")
    values: dict[str, set[Any]] = defaultdict(set)
    per_run: dict[str, set[str]] = defaultdict(set)
    for r in records:
        values[r["id"]].add(r["score"])
        per_run[r["runId"]].add(r["id"])
    lost = sum(1 for run in expected if len(per_run.get(run, ())) < 2)
    changed = sum(1 for v in values.values() if len(v) > 1)
    return {"runs": len(expected), "kills": killed, "lost": lost, "changed": changed,
            "records": len(records), "ids": len(values), "resent": resent, "exit_code": code,
            "seconds": time.monotonic() - started}


def main(quick: bool = False) -> int:
    """Print the crash-safety figure; 0 when both goals are met."""
    r = measure(runs=150, kills=5) if quick else measure()
    print(f"crash safety{' (--quick)' if quick else ''}: {r['runs']} runs, {r['kills']} kill -9 "
          f"+ restarts, {r['resent']} requests re-sent by the agent, {r['seconds']:.0f} s")
    print(f"  runs lost          {r['lost']:>6}   goal 0  {mark(r['lost'] == 0)}")
    print(f"  score ids changed  {r['changed']:>6}   goal 0  {mark(r['changed'] == 0)}")
    print(f"  ({r['records']} records exported for {r['ids']} score ids; duplicates with the "
          "same value are at-least-once re-deliveries)")
    return 0 if r["lost"] == 0 and r["changed"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main("--quick" in sys.argv))
