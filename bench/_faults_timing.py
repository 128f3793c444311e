"""Export timing against a real `scorecar serve` with its shipped readiness defaults (quiet 1 s,
max_wait 30 s, max_trace_age 600 s, log_wait 5 s, rescore_late on): every committed capture is
sent over OTLP/HTTP with its pieces apart in wall-clock time, as agents' SDKs export them, all
scenarios at once (fresh trace ids each):

- `logs+0.5s`, `logs+2s`, `logs+5s`: the spans, then their log records that much later;
- `logs-1s`: the log records 1 s before the spans;
- `agent+6s`: every span but the run roots (agent spans) and their ancestors, the roots 6 s later;
- `batches-15s`: the spans by end time (the batch processor's order) in four batches 15 s apart,
  the run roots and their ancestors last, at +50 s.

Figure per scenario: runs scored whole (the record's input and output are those `scorecar
inspect` rebuilds from the whole capture) of all runs, and runs scored more than once. Goal:
all whole, none twice.

    python bench/faults.py timing [--quick]
"""

from __future__ import annotations

import json
import secrets
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._faults_crash import mark  # noqa: E402
from collector.otlp import decode_json_bytes  # noqa: E402
from scorers.types import score_id_for  # noqa: E402
from tests.e2e._serve import metrics, total  # noqa: E402
from transforms import Span, Trace, build_runs, run_roots  # noqa: E402

CAPTURES = ROOT / "tests" / "testdata" / "captures"
SCORER = "tone"


@dataclass
class Send:
    """One capture sent in one scenario: requests at offsets, and the runs to expect."""

    scenario: str
    capture: str
    requests: list[tuple[float, str, bytes]] = field(default_factory=list)  # (at, path, body)
    expected: dict[str, dict[str, Any]] = field(default_factory=dict)  # score id -> in/out


def _fresh_ids(lines: list[str]) -> list[str]:
    """The capture's lines with every trace id replaced by a new random one."""
    ids: set[str] = set()
    for line in lines:
        d = decode_json_bytes(line.encode())
        ids.update(s.trace_id for s in d.spans)
        ids.update(lg.trace_id for lg in d.logs)
    new = {old: secrets.token_hex(16) for old in ids}
    out = []
    for line in lines:
        for old, fresh in new.items():
            line = line.replace(old, fresh).replace(old.upper(), fresh)
        out.append(line)
    return out


def _filter(doc: dict[str, Any], keep_span: Any, keep_log: Any) -> dict[str, Any] | None:
    """`doc` with only the spans / log records the predicates keep (None when empty)."""
    out: dict[str, Any] = {}
    for key, scopes_key, items_key, keep in (("resourceSpans", "scopeSpans", "spans", keep_span),
                                             ("resourceLogs", "scopeLogs", "logRecords",
                                              keep_log)):
        resources = []
        for rs in doc.get(key, []):
            scopes = []
            for ss in rs.get(scopes_key, []):
                items = [x for x in ss.get(items_key, []) if keep(x)]
                if items:
                    scopes.append({**ss, items_key: items})
            if scopes:
                resources.append({**rs, scopes_key: scopes})
        if resources:
            out[key] = resources
    return out or None


def _requests(docs: list[dict[str, Any]], at: float, keep_span: Any, keep_log: Any
              ) -> list[tuple[float, str, bytes]]:
    out = []
    for doc in docs:
        part = _filter(doc, keep_span, keep_log)
        if part is None:
            continue
        if "resourceSpans" in part:
            out.append((at, "/v1/traces", json.dumps({"resourceSpans": part["resourceSpans"]})
                        .encode()))
        if "resourceLogs" in part:
            out.append((at, "/v1/logs", json.dumps({"resourceLogs": part["resourceLogs"]})
                        .encode()))
    return out


def _expected(lines: list[str]) -> tuple[dict[str, dict[str, Any]], list[Span], list[Any]]:
    spans: list[Span] = []
    logs: list[Any] = []
    for line in lines:
        d = decode_json_bytes(line.encode())
        spans.extend(d.spans)
        logs.extend(d.logs)
    out: dict[str, dict[str, Any]] = {}
    for tid in sorted({s.trace_id for s in spans} | {lg.trace_id for lg in logs}):
        trace = Trace(tid, [s for s in spans if s.trace_id == tid],
                      [lg for lg in logs if lg.trace_id == tid])
        for run in build_runs(trace).runs:
            assert run.target is not None and run.target.span_id
            out[score_id_for(tid, run.target.span_id, SCORER)] = {
                "input": run.input.model_dump(mode="json", by_alias=True),
                "output": [m.model_dump(mode="json", by_alias=True) for m in run.output]}
    return out, spans, logs


def _held(spans: list[Span], logs: list[Any]) -> set[str]:
    """Span ids of the run roots and their ancestors."""
    held: set[str] = set()
    for tid in {s.trace_id for s in spans}:
        ts = [s for s in spans if s.trace_id == tid]
        parent = {s.span_id: s.parent_span_id for s in ts}
        for root in run_roots(Trace(tid, ts, [lg for lg in logs if lg.trace_id == tid])):
            sid: str | None = root.span_id
            while sid is not None and sid in parent and sid not in held:
                held.add(sid)
                sid = parent[sid]
    return held


def _sid(x: dict[str, Any]) -> str:
    return str(x.get("spanId", "")).lower()


def plan(scenarios: list[str], captures: list[Path]) -> list[Send]:
    """Every (scenario, capture) send, with fresh trace ids."""
    sends: list[Send] = []
    for path in captures:
        original = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        has_logs = any(decode_json_bytes(ln.encode()).logs for ln in original)
        for scenario in scenarios:
            if scenario.startswith("logs") and not has_logs:
                continue
            lines = _fresh_ids(original)
            docs = [json.loads(ln) for ln in lines]
            send = Send(scenario, f"{path.parent.name}/{path.name}")
            send.expected, spans, logs = _expected(lines)
            if not send.expected:
                continue
            every = lambda _x: True  # noqa: E731
            none = lambda _x: False  # noqa: E731
            if scenario.startswith("logs+"):
                delay = float(scenario[5:-1])
                send.requests = (_requests(docs, 0.0, every, none)
                                 + _requests(docs, delay, none, every))
            elif scenario == "logs-1s":
                send.requests = (_requests(docs, 0.0, none, every)
                                 + _requests(docs, 1.0, every, none))
            else:
                held = _held(spans, logs)
                order = sorted((s for s in spans if s.span_id not in held),
                               key=lambda s: s.end_time_unix_nano)
                if scenario == "agent+6s":
                    batches = [(0.0, {s.span_id for s in order})]
                else:  # batches-15s
                    size = -(-len(order) // 4) or 1
                    batches = [(15.0 * n, {s.span_id for s in order[n * size:(n + 1) * size]})
                               for n in range(4)]
                last = 6.0 if scenario == "agent+6s" else 50.0
                batches.append((last, held))
                for at, ids in batches:
                    send.requests += _requests(
                        docs, at, lambda x, ids=ids: _sid(x) in ids,
                        lambda x, ids=ids, first=at == 0.0: _sid(x) in ids
                        or (first and not _sid(x)))
            sends.append(send)
    return sends


def _post(url: str, body: bytes) -> int:
    """POST as an OTLP/HTTP exporter would, retrying 503/429 after Retry-After."""
    for _ in range(20):
        req = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            if exc.code not in (429, 503):
                return exc.code
            time.sleep(float(exc.headers.get("Retry-After") or 1))
    return 503


def measure(scenarios: list[str], captures: list[Path], wait: float = 120.0) -> dict[str, Any]:
    from tests.e2e._serve import ServeProcess, base_config, read_jsonl

    sends = plan(scenarios, captures)
    with tempfile.TemporaryDirectory(prefix="scorecar-timing-") as name:
        tmp = Path(name)
        config = base_config(tmp, scorers=[{"scorer": f"builtin:{SCORER}"}])
        config["assembly"] = {}  # the shipped defaults
        with ServeProcess(config, tmp) as serve:
            base = f"http://{serve.http_endpoint}"
            schedule = sorted((at, path, body) for s in sends for at, path, body in s.requests)
            answers: Counter[int] = Counter()
            start = time.monotonic()
            lock = threading.Lock()

            def send_at(at: float, path: str, body: bytes) -> None:
                if (delay := start + at - time.monotonic()) > 0:
                    time.sleep(delay)
                code = _post(base + path, body)
                with lock:
                    answers[code] += 1

            threads = [threading.Thread(target=send_at, args=item, daemon=True)
                       for item in schedule]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            want = {k for s in sends for k in s.expected}
            deadline = time.monotonic() + wait
            records: list[dict[str, Any]] = []
            while time.monotonic() < deadline:
                records = read_jsonl(tmp / "scores.jsonl")
                if {r["id"] for r in records} >= want:
                    break
                time.sleep(0.5)
            time.sleep(8.0)  # a second scoring of anything would come by now
            records = read_jsonl(tmp / "scores.jsonl")
            samples = metrics(serve.metrics_url)
    by_id: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_id[r["id"]].append(r)
    figure: dict[str, Any] = {"answers": dict(answers), "scenarios": {}}
    for scenario in scenarios:
        runs = whole = twice = missing = 0
        for s in (s for s in sends if s.scenario == scenario):
            for sid, exp in s.expected.items():
                runs += 1
                got = by_id.get(sid, [])
                missing += not got
                twice += len(got) > 1
                whole += bool(got) and got[-1]["input"] == exp["input"] and \
                    got[-1]["output"] == exp["output"]
        figure["scenarios"][scenario] = {"runs": runs, "whole": whole, "twice": twice,
                                         "missing": missing}
    for reason in ("partial", "rescored", "late", "late_not_rescored"):
        figure[reason] = total(samples, "scorecar_transform_reasons_total", reason=reason)
    return figure


def main(quick: bool = False) -> int:
    scenarios = ["logs+0.5s", "logs+2s", "logs+5s", "logs-1s", "agent+6s", "batches-15s"]
    captures = sorted(CAPTURES.glob("*/*.otlp.jsonl"))
    if quick:
        captures = captures[::8]
    f = measure(scenarios, captures)
    ok = True
    print(f"{len(captures)} captures; answers {f['answers']}; partial {f['partial']:.0f}, "
          f"rescored {f['rescored']:.0f}, late {f['late']:.0f}, "
          f"late_not_rescored {f['late_not_rescored']:.0f}")
    print("| scenario | runs scored whole | scored more than once | not scored |")
    print("|---|---|---|---|")
    for scenario, s in f["scenarios"].items():
        good = s["runs"] > 0 and s["whole"] == s["runs"] and s["twice"] == 0
        ok &= good
        print(f"| {scenario} | {s['whole']} of {s['runs']} {mark(s['whole'] == s['runs'])} | "
              f"{s['twice']} {mark(s['twice'] == 0)} | {s['missing']} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(quick="--quick" in sys.argv))
