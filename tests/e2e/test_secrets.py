"""Secrets never leak: `scorecar serve` (debug logging) runs a judge scorer against the strict
fake Messages API and exports to an OTLP backend whose first exports fail, with a recognisable
API key and exporter header; bad configurations holding both are refused. Neither value may
appear in any log line, /metrics, score record, OTLP export, data file or CLI output
(the scenario is bench/_faults_secrets.py; `python bench/faults.py secrets` prints the figure).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import _faults_secrets as secrets_bench


@pytest.mark.slow
def test_the_judge_key_and_exporter_header_appear_nowhere(tmp_path: Path) -> None:
    out = secrets_bench.run_scenario(tmp_path)

    # the scenario used both secrets where they belong, through its error paths
    assert out.key_reached_judge and out.judge_requests >= 2 + 2
    assert out.header_reached_backend
    assert out.records >= 2
    assert out.failed_configs == 8  # every bad config refused by check-config and by serve
    for name, field in (("inline_key", "api_key"), ("bad_headers", "timeout"),
                        ("header_as_list", "headers"), ("key_in_endpoint", "protocol")):
        assert field in out.texts[f"bad config {name} (check-config, serve)"]
    # and neither appears anywhere the sidecar writes
    assert out.hits() == dict.fromkeys(out.texts, 0)
