"""The job queue: idempotent puts, the bound, leases and recovery, results kept before export —
the same behaviour from SQLite (a real file) and from memory."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from collector.scoring import (
    Job,
    JobQueue,
    MemoryQueue,
    QueueFull,
    SqliteQueue,
    job_for,
)
from scorers import RunTarget, ScorerRun
from scorers.types import run_id_for, score_id_for


def make_run(i: int) -> ScorerRun:
    trace_id, span_id = f"{i + 1:032x}", f"{i + 1:016x}"
    return ScorerRun(run_id=run_id_for(trace_id, span_id), input={"q": f"question {i}"},
                     output=[], target=RunTarget(trace_id=trace_id, span_id=span_id,
                                                 entity_name="support", convention="genai",
                                                 ended_at=datetime(2026, 1, 1, tzinfo=UTC)))


def jobs(n: int, scorer: str = "len") -> list[Job]:
    return [job_for(make_run(i), scorer) for i in range(n)]


@pytest.fixture(params=["sqlite", "memory"])
def queue(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[JobQueue]:
    q: JobQueue = (SqliteQueue(tmp_path / "q.sqlite3", max_jobs=5) if request.param == "sqlite"
                   else MemoryQueue(max_jobs=5))
    yield q
    q.close()


def test_job_id_is_the_score_id_and_the_run_comes_back() -> None:
    run = make_run(0)
    job = job_for(run, "len")
    assert run.target is not None
    assert job.id == score_id_for(run.target.trace_id or "", run.target.span_id or "", "len")
    assert job.run() == run
    assert job.run_ended_at == datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert job.agent == "support"


def test_put_is_idempotent_on_the_score_id(queue: JobQueue) -> None:
    batch = jobs(3)
    assert queue.put_many(batch) == 3
    assert queue.put_many(batch + batch) == 0
    assert queue.depth() == 3
    # acknowledged jobs are remembered: a re-delivered trace is not scored again
    claimed = queue.claim_unscored(10, now=0.0)
    queue.store_result(claimed[0].id, '{"x": 1}')
    queue.ack([claimed[0].id])
    assert queue.depth() == 2
    assert queue.put_many(batch) == 0
    assert queue.depth() == 2


def test_replace_queues_a_done_or_scored_job_again_under_the_same_id(queue: JobQueue) -> None:
    first, second = jobs(2)
    queue.put_many([first, second])
    for job in queue.claim_unscored(10, now=0.0):
        queue.store_result(job.id, '"old"')
    queue.ack([first.id])
    assert queue.put_many([first, second], replace=True) == 2
    again = {j.id: j for j in queue.claim_unscored(10, now=0.0)}
    assert set(again) == {first.id, second.id}
    assert all(j.result_json is None for j in again.values())


def test_replace_while_in_flight_discards_the_stale_result(queue: JobQueue) -> None:
    (job,) = jobs(1)
    queue.put_many([job])
    (claimed,) = queue.claim_unscored(1, now=0.0)
    queue.put_many([job], replace=True)  # late spans arrived while the old run was scoring
    queue.store_result(claimed.id, '"stale"')
    assert queue.claim_scored(10, now=0.0) == []
    (rerun,) = queue.claim_unscored(10, now=0.0)
    assert rerun.id == job.id and rerun.result_json is None


def test_over_max_jobs_new_jobs_are_refused_whole(queue: JobQueue) -> None:
    queue.put_many(jobs(4))
    with pytest.raises(QueueFull) as caught:
        queue.put_many(jobs(7))  # 4 known, 3 new: only 1 fits
    assert caught.value.refused == 3
    assert queue.depth() == 4
    assert queue.put_many(jobs(5)) == 1  # what fits still goes in


def test_a_leased_job_is_not_claimed_twice_until_released(queue: JobQueue) -> None:
    queue.put_many(jobs(3))
    first = queue.claim_unscored(2, now=0.0)
    assert len(first) == 2 and all(j.attempts == 1 for j in first)
    rest = queue.claim_unscored(10, now=0.0)
    assert [j.id for j in rest] == [jobs(3)[2].id]
    assert queue.claim_unscored(10, now=0.0) == []
    assert queue.recover() == 3
    again = queue.claim_unscored(10, now=0.0)
    assert len(again) == 3 and all(j.attempts == 2 for j in again)


def test_result_is_kept_and_exported_until_every_sink_confirmed(queue: JobQueue) -> None:
    (job,) = jobs(1)
    queue.put_many([job])
    (claimed,) = queue.claim_unscored(1, now=0.0)
    assert queue.claim_scored(10, now=0.0) == []
    queue.store_result(claimed.id, '{"score": 0.5}')
    assert queue.claim_unscored(10, now=0.0) == []
    (scored,) = queue.claim_scored(10, now=0.0)
    assert scored.result_json == '{"score": 0.5}'
    queue.confirm([scored.id], "otlp")
    queue.retry_later(scored.id, not_before=100.0)
    assert queue.claim_scored(10, now=99.0) == []
    (later,) = queue.claim_scored(10, now=100.0)
    assert later.confirmed == frozenset({"otlp"})
    assert later.result_json == '{"score": 0.5}'
    queue.ack([later.id])
    assert queue.depth() == 0


def test_sqlite_queue_survives_reopening_with_leases_recovered(tmp_path: Path) -> None:
    path = tmp_path / "data" / "q.sqlite3"
    q = SqliteQueue(path)
    batch = jobs(3)
    q.put_many(batch)
    a, b = q.claim_unscored(2, now=0.0)
    q.store_result(a.id, '{"score": 1.0}')
    q.confirm([a.id], "jsonl")
    # no close(): the process "died" with b leased
    q2 = SqliteQueue(path)
    assert q2.depth() == 3
    assert q2.recover() == 1  # b was in flight: its lease is released
    unscored = {j.id for j in q2.claim_unscored(10, now=0.0)}
    assert unscored == {b.id, batch[2].id}
    (scored,) = q2.claim_scored(10, now=0.0)
    assert scored.id == a.id and scored.confirmed == frozenset({"jsonl"})
    assert q2.writable()
    q2.close()
    q.close()


def test_done_ids_are_remembered_within_the_retention_only(tmp_path: Path) -> None:
    for q in (SqliteQueue(tmp_path / "q.sqlite3", done_retention=10),
              MemoryQueue(done_retention=10)):
        batch = jobs(30)
        q.put_many(batch)
        for job in batch:
            q.ack([job.id])
        assert q.put_many(batch[-5:]) == 0  # recent: refused as done
        assert q.put_many(batch[:1]) == 1   # long ago: forgotten, scored again
        q.close()


# --------------------------------------------------------------------------- what a restart keeps


def _fields(job: Job) -> tuple[object, ...]:
    return (job.id, job.scorer_id, job.run_json, job.trace_id, job.span_id, job.agent,
            job.run_ended_at, job.result_json, job.confirmed)


def test_a_job_comes_back_after_a_restart_with_everything_it_carried(tmp_path: Path) -> None:
    """After a kill and a restart, a job is the same job: its run, trace, span, agent (the
    metrics' labels), end time (the score lag), attempts, backoff and stored record."""
    path = tmp_path / "q.sqlite3"
    q = SqliteQueue(path)
    batch = jobs(2)
    q.put_many(batch)
    a, b = sorted(q.claim_unscored(2, now=0.0), key=lambda j: j.id)
    q.store_result(a.id, '{"score": 0.5}')
    q.retry_later(b.id, not_before=50.0)  # an export backoff, say
    q2 = SqliteQueue(path)  # no close(): the process died
    q2.recover()
    assert q2.claim_unscored(10, now=49.0) == []  # the backoff holds across the restart
    (again,) = q2.claim_unscored(10, now=50.0)
    want = next(j for j in batch if j.id == b.id)
    assert _fields(again)[:7] == _fields(want)[:7]
    assert again.trace_id == want.trace_id and again.agent == "support"
    assert again.attempts == 2 and again.not_before == 50.0  # claimed before, and now
    (scored,) = q2.claim_scored(10, now=0.0)
    assert scored.result_json == '{"score": 0.5}' and scored.attempts == 2
    assert scored.span_id == a.span_id and scored.run_ended_at == a.run_ended_at
    q2.close()
    q.close()


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_thousands_of_jobs_go_through_in_one_call_each(tmp_path: Path, kind: str) -> None:
    """A burst bigger than one SQL statement's parameters (1,234 jobs): every job is queued,
    claimed, scored, confirmed and acknowledged once, and remembered as done."""
    q: JobQueue = (SqliteQueue(tmp_path / "q.sqlite3") if kind == "sqlite"
                   else MemoryQueue())
    batch = jobs(1_234)
    ids = {j.id for j in batch}
    assert q.put_many(batch) == 1_234 and q.depth() == 1_234
    claimed = q.claim_unscored(2_000, now=0.0)
    assert {j.id for j in claimed} == ids
    q.store_results([(j.id, "{}") for j in claimed])
    scored = q.claim_scored(2_000, now=0.0)
    assert {j.id for j in scored} == ids
    q.confirm([j.id for j in scored], "jsonl")
    q.ack([j.id for j in scored])
    assert q.depth() == 0
    assert q.put_many(batch) == 0  # all remembered as done
    q.close()


def test_a_released_burst_is_claimed_again_whole(tmp_path: Path) -> None:
    q = SqliteQueue(tmp_path / "q.sqlite3")
    batch = jobs(1_100)
    q.put_many(batch)
    claimed = q.claim_unscored(2_000, now=0.0)
    q.release([j.id for j in claimed])
    assert len(q.claim_unscored(2_000, now=0.0)) == 1_100
    q.close()


def test_the_queue_file_is_in_wal_mode_and_reopens_with_its_depth(tmp_path: Path) -> None:
    """WAL with synchronous=NORMAL is what makes a kill -9 lose nothing committed (DESIGN §5);
    the depth a reopened queue reports is what the file holds (the queue_full bound)."""
    import sqlite3

    path = tmp_path / "q.sqlite3"
    q = SqliteQueue(path)
    q.put_many(jobs(7))
    with sqlite3.connect(path) as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    q2 = SqliteQueue(path, max_jobs=8)
    assert q2.depth() == 7
    with pytest.raises(QueueFull):
        q2.put_many(jobs(9)[7:])  # 7 + 2 > 8
    assert q2.put_many(jobs(8)[7:]) == 1
    assert SqliteQueue(path).max_jobs == 100_000  # the default bound (storage.max_jobs)
    q2.close()
    q.close()


def test_a_job_carries_its_trace_span_agent_and_end_time_as_the_run_says() -> None:
    run = make_run(3)
    job = job_for(run, "tone")
    assert run.target is not None
    assert (job.trace_id, job.span_id, job.agent) == (run.target.trace_id, run.target.span_id,
                                                      "support")
    assert '"runId"' in job.run_json and '"entityName"' in job.run_json  # JSON is camelCase
    bare = job_for(ScorerRun(input={"q": "hi"}, output=[]), "tone")
    assert (bare.trace_id, bare.span_id, bare.agent, bare.run_ended_at) == (None,) * 4


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_full_queue_says_how_full_in_its_refusal(tmp_path: Path, kind: str) -> None:
    """What the operator reads in the log when jobs are refused (`runs_skipped{queue_full}`)."""
    q: JobQueue = (SqliteQueue(tmp_path / "q.sqlite3", max_jobs=3) if kind == "sqlite"
                   else MemoryQueue(max_jobs=3))
    q.put_many(jobs(2))
    with pytest.raises(QueueFull) as refused:
        q.put_many(jobs(5)[2:])
    assert str(refused.value) == "job queue full: 2 of 3 jobs; 3 new jobs refused"
    assert (refused.value.refused, refused.value.depth, refused.value.max_jobs) == (3, 2, 3)
    assert refused.value.reason == "queue_full"
    q.close()


def test_a_write_refused_by_the_storage_is_said_once_and_its_recovery_too(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A read-only (or full) disk under the queue: new jobs are refused retryably as
    `storage`, the error is logged once, `storage_error` says it until a write succeeds, and
    "writable again" is logged once it does."""
    import logging
    import os
    import sqlite3

    from collector.scoring import QueueUnwritable

    path = tmp_path / "q.sqlite3"
    q = SqliteQueue(path)
    q.put_many(jobs(1))
    caplog.set_level(logging.INFO)
    real = q._db
    broken = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None,
                             check_same_thread=False)
    q._db = broken  # the volume turned read-only (a seam: no root needed to make it so)
    for _ in range(2):
        with pytest.raises(QueueUnwritable) as refused:
            q.put_many(jobs(3)[1:])
        assert refused.value.reason == "storage" and refused.value.refused == 2
        assert "job queue storage refused a write" in str(refused.value)
    assert q.storage_error and not q.writable()
    assert sum("job queue write refused" in r.message for r in caplog.records) == 1
    q._db = real
    assert q.put_many(jobs(3)[1:]) == 2 and q.writable() and q.storage_error is None
    assert sum("writable again" in r.message for r in caplog.records) == 1
    assert q.depth() == 3
    broken.close()
    q.close()
    assert os.path.exists(path)
