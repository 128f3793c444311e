"""Before/after check for refactors of the transforms (not a test; run as a script).

Writes what `scorecar inspect` prints (stdout and stderr, through `collector.cli._inspect`'s
`inspect_files` + `write_report`) for every capture under tests/testdata/captures and
examples/traces, one pair of files per capture, plus the runs and reason counts of every
capture with each one of its spans left out (partial traces: a missing agent span, a
missing model call, …) into `partial/`. Run it before a change and after, then diff:

    python tests/transforms/_snapshot.py /tmp/transforms-before
    python tests/transforms/_snapshot.py /tmp/transforms-after
    diff -r /tmp/transforms-before /tmp/transforms-after
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from collector.cli._inspect import inspect_files, write_report  # noqa: E402
from collector.otlp import Decoded, decode_json_bytes  # noqa: E402
from transforms import build_runs, group_traces  # noqa: E402


def captures() -> list[Path]:
    """Every capture file, in a fixed order."""
    found = sorted((ROOT / "tests" / "testdata" / "captures").glob("*/*.otlp.jsonl"))
    return found + sorted((ROOT / "examples" / "traces").glob("*.otlp.jsonl"))


def _name(path: Path) -> str:
    return f"{path.parent.name}__{path.name.removesuffix('.otlp.jsonl')}"


def _inspect(paths: list[Path]) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    write_report(inspect_files(paths), out, err)
    return out.getvalue(), err.getvalue()


def _partials(path: Path) -> str:
    decoded = Decoded()
    for line in path.read_bytes().splitlines():
        if line.strip():
            decoded.extend(decode_json_bytes(line))
    lines: list[str] = []
    for i, left_out in enumerate(decoded.spans):
        spans = decoded.spans[:i] + decoded.spans[i + 1:]
        lines.append(f"# without span {left_out.span_id} {left_out.name!r}")
        for trace in group_traces(spans, decoded.logs).values():
            built = build_runs(trace)
            lines.append("reasons: " + ", ".join(
                f"{k}={v}" for k, v in sorted(built.reasons.items())))
            for run in built.runs:
                lines.append(json.dumps(run.model_dump(mode="json", by_alias=True),
                                        ensure_ascii=False, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def main(out_dir: Path) -> None:
    """Write every capture's inspect output (and the partial-trace runs) under `out_dir`."""
    (out_dir / "partial").mkdir(parents=True, exist_ok=True)
    paths = captures()
    for path in paths:
        stdout, stderr = _inspect([path])
        (out_dir / f"{_name(path)}.stdout").write_text(stdout, encoding="utf-8")
        (out_dir / f"{_name(path)}.stderr").write_text(stderr, encoding="utf-8")
        (out_dir / "partial" / f"{_name(path)}.txt").write_text(_partials(path),
                                                                 encoding="utf-8")
    stdout, stderr = _inspect(paths)  # all together: traces grouped across files
    (out_dir / "all.stdout").write_text(stdout, encoding="utf-8")
    (out_dir / "all.stderr").write_text(stderr, encoding="utf-8")
    print(f"{len(paths)} captures -> {out_dir}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/transforms-after"))
