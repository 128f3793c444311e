"""Disk faults under the SQLite queue and the span log: the disk fills up, then space returns.

Two ways to fill it, both loopback-only and without a loop device:

- `enospc`: `storage.path` on a 16 MiB tmpfs mounted in a private mount namespace
  (`unshare -m`, root only); the disk is filled with a filler file (writes fail with ENOSPC) and
  space returns when it is deleted. Skipped, with the reason, without root or `unshare`.
- `fsize`: `RLIMIT_FSIZE` of the running sidecar set to 0 with `prlimit` (every write to a
  regular file fails with EFBIG: the queue, the span log, the JSON-lines file), then lifted.

Each scenario: agents send runs; the disk fills while some of those runs' traces are still
being assembled (their jobs meet the full disk); agents keep sending (over gRPC and HTTP) during
the fault; then space returns and the agents send what was refused again. Figure: answers
during the fault (goal: only retryable ones — gRPC UNAVAILABLE, HTTP 503 with Retry-After),
refusals counted in the metrics, `/readyz` (goal: 503 during, 200 after), crashes (goal 0), and
acknowledged runs not scored after space returned (goal 0).

    python bench/faults.py disk [--quick]
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._faults_crash import (  # noqa: E402
    RawAgent,
    agent_runs,
    http_export,
    mark,
    readyz,
    request_body,
    run_ids,
)
from tests.e2e._serve import metrics, total  # noqa: E402

Fault = Callable[[Any], None]


def fsize_fault() -> tuple[Fault, Fault]:
    """(on, off): `RLIMIT_FSIZE` of the sidecar process 0, then unlimited."""
    def on(serve: Any) -> None:
        resource.prlimit(serve.proc.pid, resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))

    def off(serve: Any) -> None:
        resource.prlimit(serve.proc.pid, resource.RLIMIT_FSIZE,
                         (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    return on, off


def fill_fault(data: Path) -> tuple[Fault, Fault]:
    """(on, off): fill the file system under `data` with a filler file, then delete it."""
    filler = data / "filler"

    def on(serve: Any) -> None:
        chunk = b"\0" * (1 << 20)
        with contextlib.suppress(OSError), open(filler, "wb") as f:
            while True:
                f.write(chunk)
                f.flush()
        # top up the last bytes, so even a 4 KiB page does not fit
        with contextlib.suppress(OSError), open(filler, "ab", buffering=0) as f:
            while True:
                f.write(b"\0" * 512)

    def off(serve: Any) -> None:
        filler.unlink(missing_ok=True)

    return on, off


def measure(tmp: Path, on: Fault, off: Fault, *, runs: int = 300, fault_seconds: float = 5.0,
            wait: float = 60.0, seed: int = 5) -> dict[str, Any]:
    """One disk-full episode against `scorecar serve` with `storage.path` = `tmp/data`."""
    from tests.e2e._serve import ServeProcess, base_config, read_jsonl

    rng = random.Random(seed)
    batches = agent_runs(max(3, runs // 2), rng)
    third = len(batches) // 3
    before, pending, during = batches[:third], batches[third:2 * third], batches[2 * third:]
    config = base_config(tmp, scorers=[{"scorer": "builtin:tone"}])
    config["assembly"] = {"quiet_period": 0.5, "max_wait": 5.0}
    serve = ServeProcess(config, tmp)
    answers: Counter[str] = Counter()
    retry_after: set[str | None] = set()
    acknowledged: list[list[Any]] = []
    refused: list[list[Any]] = []
    try:
        serve.start(timeout=60)
        agent = RawAgent(serve.grpc_endpoint)
        for batch in before + pending:  # the last third still being assembled at the fault
            if agent.export(request_body(batch)) == "OK":
                acknowledged.append(batch)
        on(serve)
        fault_started = time.monotonic()
        time.sleep(1.0)  # the pending traces become ready and meet the full disk
        ready_during = readyz(serve.metrics_url)[0]
        for i, batch in enumerate(during):
            body = request_body(batch)
            if i % 2:
                status, after = http_export(serve.http_endpoint, body)
                answer = f"HTTP {status}"
                retry_after.add(after)
            else:
                answer = f"gRPC {agent.export(body)}"
            answers[answer] += 1
            (acknowledged if answer in ("HTTP 200", "gRPC OK") else refused).append(batch)
        time.sleep(max(0.0, fault_seconds - (time.monotonic() - fault_started)))
        # (a queue whose WAL still has room may take jobs for a while on a full disk: readiness
        # is looked at again once the receivers have been refusing)
        ready_during = max(ready_during, readyz(serve.metrics_url)[0])
        alive_during = serve.proc is not None and serve.proc.poll() is None
        off(serve)
        # the agents retry what was refused (after the Retry-After the sidecar gave)
        resend_deadline = time.monotonic() + wait
        while refused and time.monotonic() < resend_deadline:
            if agent.export(request_body(refused[0])) == "OK":
                acknowledged.append(refused.pop(0))
            else:
                time.sleep(0.5)
        expected = run_ids(acknowledged)
        deadline = time.monotonic() + wait
        scored: set[str] = set()
        while time.monotonic() < deadline:
            scored = {r["runId"] for r in read_jsonl(tmp / "scores.jsonl")}
            if scored >= expected:
                break
            time.sleep(0.25)
        ready_after = readyz(serve.metrics_url)[0]
        samples = metrics(serve.metrics_url)
        agent.close()
        code = serve.terminate(timeout=60)
    finally:
        serve.kill()
    tracebacks = sum("Traceback" in line for line in serve.lines)
    retryable = {"gRPC UNAVAILABLE", "HTTP 503"}
    return {
        "answers": dict(answers),
        "non_retryable": sum(n for a, n in answers.items() if a not in retryable),
        "retry_after": sorted(str(r) for r in retry_after),
        "spans_refused_storage": total(samples, "scorecar_spans_refused_total", reason="storage"),
        "jobs_refused_storage": total(samples, "scorecar_runs_skipped_total", reason="storage"),
        "ready_during": ready_during, "ready_after": ready_after,
        "crashed": int(not alive_during) + int(code != 0),
        "tracebacks": tracebacks,
        "runs": len(expected), "lost": len(expected - scored), "unsent": len(refused),
    }


def _inner(quick: bool) -> None:
    """In a private mount namespace (root): a tmpfs under storage.path, ENOSPC by filling it."""
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    with tempfile.TemporaryDirectory(prefix="scorecar-disk-") as name:
        tmp = Path(name)
        data = tmp / "data"
        data.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(data)],
                       check=True)
        try:
            on, off = fill_fault(data)
            result = measure(tmp, on, off, runs=150 if quick else 600,
                             fault_seconds=5 if quick else 20)
        finally:
            subprocess.run(["umount", "-l", str(data)], check=False)
    print(json.dumps(result))


def enospc(quick: bool) -> dict[str, Any] | str:
    """The tmpfs scenario in a child process under `unshare -m`, or why it was skipped."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return "skipped: needs root and unshare(1) for a private tmpfs"
    cmd = ["unshare", "-m", sys.executable, "-m", "bench._faults_disk", "--inner"]
    out = subprocess.run([*cmd, *(["--quick"] if quick else [])], cwd=ROOT,
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        return f"failed ({out.returncode}): {out.stderr[-2000:]}"
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def fsize(quick: bool) -> dict[str, Any]:
    """The RLIMIT_FSIZE scenario."""
    with tempfile.TemporaryDirectory(prefix="scorecar-disk-") as name:
        on, off = fsize_fault()
        return measure(Path(name), on, off, runs=150 if quick else 600,
                       fault_seconds=5 if quick else 20)


def ok(r: dict[str, Any]) -> bool:
    """Every goal of one scenario met."""
    return (r["non_retryable"] == 0 and r["crashed"] == 0 and r["lost"] == 0
            and r["unsent"] == 0 and r["ready_during"] == 503 and r["ready_after"] == 200
            and r["spans_refused_storage"] > 0)


def main(quick: bool = False) -> int:
    """Print the disk-fault figure; 0 when every goal is met."""
    code = 0
    for name, result in (("enospc (tmpfs full)", enospc(quick)),
                         ("efbig (RLIMIT_FSIZE 0)", fsize(quick))):
        if isinstance(result, str):
            print(f"disk {name}: {result}")
            code = max(code, 1 if result.startswith("failed") else 0)
            continue
        r = result
        print(f"disk {name}{' (--quick)' if quick else ''}: answers during the fault "
              f"{r['answers']} (Retry-After {', '.join(r['retry_after'])})")
        print(f"  non-retryable answers       {r['non_retryable']:>5}   goal 0  "
              f"{mark(r['non_retryable'] == 0)}")
        print(f"  refusals counted            spans_refused{{storage}} "
              f"{r['spans_refused_storage']:.0f}, runs_skipped{{storage}} "
              f"{r['jobs_refused_storage']:.0f}")
        print(f"  /readyz during / after      {r['ready_during']} / {r['ready_after']}   goal "
              f"503 / 200  {mark(r['ready_during'] == 503 and r['ready_after'] == 200)}")
        print(f"  crashes                     {r['crashed']:>5}   goal 0  {mark(r['crashed'] == 0)}"
              f"   (tracebacks logged: {r['tracebacks']})")
        print(f"  acknowledged runs unscored  {r['lost']:>5}   goal 0  {mark(r['lost'] == 0)}"
              f"   (of {r['runs']}; {r['unsent']} never accepted after space returned)")
        code = max(code, 0 if ok(r) else 1)
    return code


if __name__ == "__main__":
    if "--inner" in sys.argv:
        _inner("--quick" in sys.argv)
    else:
        raise SystemExit(main("--quick" in sys.argv))
