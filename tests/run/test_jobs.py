"""workbench.run.jobs with a real worker process (no GPU): a job's answer and reports come back; a hang, a crash
or a lost context costs that call alone, with what it reported before."""

from __future__ import annotations

import os

import pytest

from workbench.run.jobs import Jobs, in_parallel

HERE = os.path.dirname(__file__)


@pytest.fixture(scope="module")
def jobs():
    with Jobs(paths=[HERE], gpu=False) as j:
        yield j


def test_a_job_answers_with_its_value_and_its_reports(jobs):
    a = jobs.call("job_samples:rows", ["a", "b"], timeout_s=30)
    assert a.returned and a.failure is None and a.outcome.ok
    assert a.value["done"] == 2 and a.value["pid"] != os.getpid()
    assert a.reported("begin") == ["a", "b"] and [r["item"] for r in a.reported("row")] == ["a", "b"]


def test_a_hang_is_stopped_at_its_limit_keeping_what_it_reported(jobs):
    pid = jobs.call("job_samples:rows", [], timeout_s=30).value["pid"]
    a = jobs.call("job_samples:rows", ["a", "b"], "hang", timeout_s=1.0)
    assert not a.returned and a.failure.startswith("hung: no answer within 1 s")
    assert a.reported("begin") == ["a", "b"] and a.outcome.restarted
    assert jobs.call("job_samples:rows", [], timeout_s=30).value["pid"] != pid  # a fresh process


@pytest.mark.parametrize("then, status", [("crash", "died"), ("fault", "fault")])
def test_a_process_that_dies_or_loses_its_context_is_replaced(jobs, then, status):
    a = jobs.call("job_samples:rows", ["x"], then, timeout_s=30)
    assert not a.returned and a.outcome.status == status and a.reported("begin") == ["x"]
    assert ("illegal memory access" in a.failure) == (then == "fault")
    assert jobs.call("job_samples:rows", ["y"], timeout_s=30).returned


def test_an_exception_keeps_the_process(jobs):
    pid = jobs.call("job_samples:rows", [], timeout_s=30).value["pid"]
    a = jobs.call("job_samples:rows", ["x"], "raise", timeout_s=30)
    assert not a.returned and "ValueError: boom" in a.failure and a.reported("row")[0]["pid"] == pid
    assert jobs.call("job_samples:rows", [], timeout_s=30).value["pid"] == pid


def test_each_item_in_its_own_call_so_a_hang_costs_that_item_alone(jobs):
    job = {"items": ["a", "hang", "b"], "then": "return"}
    failed = lambda item, why: {"item": item, "why": why}  # noqa: E731
    rows = jobs.each("job_samples:each", job, "items", timeout_s=2.0, failed=failed)
    assert [r["item"] for r in rows] == ["a", "hang", "b"]
    assert "why" not in rows[0] and rows[1]["why"].startswith("hung") and "why" not in rows[2]
    assert rows[0]["pid"] != rows[2]["pid"]  # the hang's process was replaced


def test_in_parallel_drains_one_queue_on_threads_each_with_its_own_closed_worker():
    import threading

    made, done, lock = [], [], threading.Lock()

    class Stand:
        closed = False

        def close(self):
            self.closed = True

    def make():
        with lock:
            made.append(Stand())
            return made[-1]

    def work(w, task):
        with lock:
            done.append((id(w), task))

    in_parallel(range(20), 3, make, work)
    assert sorted(t for _, t in done) == list(range(20))
    assert len(made) == 3 and all(w.closed for w in made)
    assert {w for w, _ in done} <= {id(w) for w in made}
