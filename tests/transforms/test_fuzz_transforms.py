"""Fuzzing `build_runs` with real captured traces mutated span by span (hypothesis; the
strategy lives in bench/_faults_fuzz.py): cut, wrongly typed and deeply nested attributes,
keys of other conventions, parent cycles, duplicate and missing spans, reversed times.

Every mutated trace must build without an exception, count only `Reason` codes, and give runs
the queue can store (`model_dump_json`). Deterministic (`derandomize=True`).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from bench import _faults_fuzz as fz
from tests.transforms._spans import TRACE, genai_agent_trace
from transforms import Trace, build_runs


@pytest.mark.slow
@settings(max_examples=500, deadline=None, database=None, derandomize=True,
          phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))
@given(trace=fz.mutated_trace())
def test_mutated_captured_traces_build_storable_runs(trace: Trace) -> None:
    fig = fz.Figure()
    fz.transforms_case(fig, trace)
    assert (fig.crashes, fig.hangs) == (0, 0), "\n".join(fig.examples)


def test_a_lone_surrogate_escape_in_message_json_gives_a_storable_run() -> None:
    # Found by fuzzing: JSON text in a content attribute escaping a lone surrogate made a run
    # that could not be serialized, failing the scheduling pass of every trace with it.
    spans = genai_agent_trace()
    for s in spans:
        value = s.attributes.get("gen_ai.input.messages")
        if isinstance(value, str):
            s.attributes["gen_ai.input.messages"] = value.replace("Paris", "Par\\ud800is")
    [run] = build_runs(Trace(TRACE, spans)).runs
    assert "Par\ufffdis" in run.input.input_messages[-1].text
    run.model_dump_json(by_alias=True)
