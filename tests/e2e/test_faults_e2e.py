"""CI-sized fault figures (bench/faults.py storm|disk|outage --quick in small): `scorecar serve` as
a process, against a judge in a 429/529 storm, a disk that fills up and empties again, and a
score backend that goes down and comes back. The kill -9 figure is test_crash_e2e.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import _faults_disk, _faults_outage, _faults_overload, _faults_storm


@pytest.mark.slow
def test_a_judge_storm_of_429_and_529_scores_every_run_within_the_retry_budget() -> None:
    # slack 2 s: the suite runs in parallel workers on a small machine; an uncapped wait would
    # be the 30 s Retry-After, far past it
    r = _faults_storm.measure_storm(runs=12, max_retries=1, retry_after=30.0, cap=0.5,
                                    slack=2.0)
    assert r["refused"] > 0, "the storm refused nothing: the figure would prove nothing"
    assert r["scored"] == r["runs"], r
    assert r["max_attempts"] <= r["bound"], r
    # Retry-After 30 s is capped at max_retry_after: no wait is longer than the exponential
    # delay or the cap (plus scheduling slack)
    assert r["waits_over"] == 0, r


@pytest.mark.slow
def test_a_judge_that_answers_401_is_not_retried_and_is_reported_once() -> None:
    r = _faults_storm.measure_auth(runs=6)
    assert r["records"] > 0 and r["failed"] == r["records"], r
    assert r["max_attempts"] == 1, r
    assert r["config_errors"] == 1, r


@pytest.mark.slow
def test_a_full_disk_refuses_retryably_and_loses_nothing_once_space_returns(
        tmp_path: Path) -> None:
    on, off = _faults_disk.fsize_fault()  # every write to a regular file fails (EFBIG)
    r = _faults_disk.measure(tmp_path, on, off, runs=24, fault_seconds=2.0, wait=30.0)
    assert r["answers"] and r["non_retryable"] == 0, r["answers"]
    assert r["retry_after"] == ["5"], r
    assert r["spans_refused_storage"] > 0 and r["jobs_refused_storage"] > 0, r
    assert (r["ready_during"], r["ready_after"]) == (503, 200), r
    assert r["crashed"] == 0 and r["tracebacks"] == 0, r
    assert r["unsent"] == 0 and r["lost"] == 0, r


@pytest.mark.slow
def test_a_score_backend_outage_past_the_queue_bound_loses_no_acknowledged_score() -> None:
    r = _faults_outage.measure(before=1.0, outage=3.0, after=1.0, rate=8.0, max_jobs=24,
                               wait=30.0)
    assert r["export_retry"] > 0, "the backend was never seen down"
    assert r["refused_by_agent"] > 0, "the queue bound was never reached"
    # what the agent was refused is exactly what the sidecar counted
    assert r["refused_by_agent"] == r["refused_metric"] == r["refused_queue_full"], r
    assert r["lost"] == 0 and r["runs_without_records"] == 0, r
    assert r["export_dropped"] == 0, r


def test_over_the_memory_limit_receivers_refuse_retryably_and_count_it() -> None:
    r = _faults_overload.memory_refusal(limit_mib=40, requests=4)  # below the idle RSS
    assert r["answers"] == ["gRPC UNAVAILABLE", "HTTP 503 Retry-After 5"] * 2, r
    assert r["refused_memory"] == 4, r
    assert r["exit_code"] == 0
