"""Reason codes are a closed set: whatever decoding, extracting and building count on every
capture (and on every capture missing one span) is a `Reason` member, so the Prometheus label
values and the stderr summary never grow a code nobody documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from collector.otlp import Decoded, decode_json_bytes
from tests.transforms._runs import checked_build_runs, decode_file
from transforms import Trace, group_traces
from transforms.reasons import Reason

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = sorted((ROOT / "tests" / "testdata" / "captures").glob("*/*.otlp.jsonl")) + sorted(
    (ROOT / "examples" / "traces").glob("*.otlp.jsonl"))


def test_every_code_counted_on_every_capture_is_a_member() -> None:
    seen: set[str] = set()
    for path in CAPTURES:
        decoded = decode_file(path)
        assert all(isinstance(k, Reason) for k in decoded.refused), path
        seen.update(decoded.refused)
        for trace in group_traces(decoded.spans, decoded.logs).values():
            seen.update(checked_build_runs(trace).reasons)
            for drop in range(len(trace.spans)):  # partial traces count other codes
                spans = trace.spans[:drop] + trace.spans[drop + 1:]
                seen.update(checked_build_runs(Trace(trace.trace_id, spans, trace.logs)).reasons)
    # The captures exercise the common codes (a sanity check that the loop saw something).
    assert {"orphan", "no_root", "nested_call", "capture_off", "log_without_trace"} <= seen


def test_decoding_refuses_only_members() -> None:
    out = decode_json_bytes(b"\xff{not json")
    assert out.refused == {Reason.INVALID_UTF8: 1, Reason.MALFORMED_JSON: 1}
    assert all(isinstance(k, Reason) for k in out.refused)
    with pytest.raises(ValueError):
        Decoded().refuse("made_up_code", "a code outside the closed set")


def test_codes_are_plain_strings_for_labels_and_the_summary() -> None:
    assert Reason.TOO_DEEP == "too_deep" and f"{Reason.TOO_DEEP}" == "too_deep"
    assert len({r.value for r in Reason}) == len(Reason)
    assert all(r.value == r.name.lower() for r in Reason)
