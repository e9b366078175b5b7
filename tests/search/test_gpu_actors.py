"""The GPU actors a process keeps warm: a search's and an evaluation's each hold a whole GPU (``num_gpus=1``), so
keeping both would leave the second waiting for a GPU for ever (what hung tests/search/test_search_gpu.py on the
H100 after tests/evaluate/test_evaluate_gpu.py had run in the same pytest process). One registry ends the other
kind's actors first, and an actor Ray cannot place is a clear ClusterError within the limit, not a wait.

Ray is told the machine has one GPU (a resource count: nothing here touches CUDA), in a process of its own so that
the suite's own Ray stays as it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, time, ray
    from workbench.search.engine import ClusterError, forget_actors, wait_placed, warm_actors
    ray.init(num_cpus=1, num_gpus=1, include_dashboard=False, logging_level="ERROR", log_to_driver=False)

    @ray.remote(num_gpus=1, num_cpus=0)
    class Holder:
        pass

    out = {}
    first = warm_actors("evaluate", Holder.remote, 1)
    wait_placed(first, 60)
    out["kept"] = warm_actors("evaluate", Holder.remote, 1)[0] == first[0]  # warm: the same actor again
    t0 = time.perf_counter()
    wait_placed(warm_actors("search", Holder.remote, 1), 60)  # the evaluation's actor is ended first
    out["other_kind_placed_s"] = time.perf_counter() - t0
    stray = Holder.remote()  # held outside the registry (another driver's, say): it waits for the GPU
    t0 = time.perf_counter()
    try:
        wait_placed([stray], 3)
        out["error"] = None
    except ClusterError as e:
        out["error"], out["hint"] = str(e), e.hint
    out["error_after_s"] = time.perf_counter() - t0
    forget_actors("search")
    wait_placed([stray], 60)  # the GPU freed: the stray one starts
    print(json.dumps(out))
    ray.shutdown()
""")


def test_one_kind_of_warm_gpu_actor_at_a_time_and_an_unplaceable_one_is_an_error():
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=240,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["kept"]
    assert out["other_kind_placed_s"] < 30, out
    assert out["error"] and "1 GPU worker(s) not started after 3 s" in out["error"], out
    assert "0 of its 1 GPUs free" in out["error"] and "cluster=" in out["hint"], out
    assert out["error_after_s"] < 10, out


RESTART = textwrap.dedent("""
    import json, os, signal, time, ray
    from workbench.search.engine import when_restarted
    ray.init(num_cpus=1, num_gpus=1, include_dashboard=False, logging_level="ERROR", log_to_driver=False)

    @ray.remote(num_gpus=1, num_cpus=0, max_restarts=-1, max_task_retries=0)  # as the search's GPU actor
    class Slow:
        def __init__(self):
            time.sleep(3)  # a GPU actor's start: torch, a CUDA context, its isolated worker

        def setup(self):
            return os.getpid()

    a = Slow.remote()
    out = {"first": ray.get(a.setup.remote())}
    os.kill(out["first"], signal.SIGKILL)  # what an OOM killer does
    time.sleep(0.5)
    try:
        ray.get(a.setup.remote())
        out["refused"] = None
    except Exception as e:
        out["refused"] = type(e).__name__
    t0 = time.perf_counter()
    out["second"] = when_restarted(lambda: a.setup.remote(), 60)
    out["after_s"] = time.perf_counter() - t0
    print(json.dumps(out))
    ray.shutdown()
""")


def test_a_killed_gpu_actor_is_set_up_again_once_ray_has_restarted_it():
    """What failed on the H100 (tests/search/test_search_gpu.py, a GPU actor killed mid-search): Ray refuses calls
    to an actor it is restarting (ActorUnavailableError), and the search's setup of the restarted actor ended the
    search. ``when_restarted`` makes the call again until the new process answers."""
    p = subprocess.run([sys.executable, "-c", RESTART], capture_output=True, text=True, timeout=240,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    print(out)
    assert out["second"] != out["first"] and out["after_s"] < 30, out
    assert out["refused"] == "ActorUnavailableError", out  # the refusal the search now waits through
