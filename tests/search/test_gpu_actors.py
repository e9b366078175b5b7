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
