"""The search's machinery started ahead of need: ``%load_ext workbench`` calls ``start()``, which returns at once
and, in a thread of its own, starts (or joins) the Ray cluster, sets one compile worker per CPU importing torch,
Triton and uTLX, and starts the search's GPU actor (a CUDA context) on each GPU. A search, an evaluation or a
``%%tlx --search`` cell that comes before that is done waits for it inside ``engine.connect`` and shows the wait.

When it starts Ray: where a search runs candidates (the machine has a GPU, or ``RAY_ADDRESS`` names a cluster);
``TLX_WORKBENCH_WARM=1`` starts it on a machine without a GPU too (its searches are compile-only there, and a
notebook that never searches would pay a Ray cluster for nothing), ``TLX_WORKBENCH_WARM=0`` never.

Ray's driver state stays with the thread that called ``ray.init``: measured, a thread that started Ray and ended
left the next ``ray.get`` of the notebook waiting on the GCS until Ray killed the process. So the warm-up thread,
its work done, waits for ever (a daemon: it ends with the process).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from workbench.search import engine

__all__ = ["should_start", "start", "status"]

WARM_ENV = "TLX_WORKBENCH_WARM"
READY_TIMEOUT_S = 600.0  # how long the thread waits for the workers' imports and the GPU actors before it says so

_STATE: dict[str, Any] = {}  # "thread", "t0", "phases", "error", "done" (an Event)
_FOREVER = threading.Event()  # never set: the warm-up thread holds Ray's driver state by staying alive


def should_start(has_gpu: bool) -> bool:
    """Start the cluster in the background on this machine? (see the module's docstring)"""
    want = os.environ.get(WARM_ENV, "").strip().lower()
    if want in ("0", "false", "no", "off"):
        return False
    return want in ("1", "true", "yes", "on") or has_gpu or bool(os.environ.get("RAY_ADDRESS"))


def start(cluster: str | None = None) -> bool:
    """Start the warm-up thread (once per process); False if it had been started already."""
    if "thread" in _STATE or not engine.CONNECT_LOCK.acquire(timeout=0):
        return False  # started already, or a search is starting Ray right now: nothing to warm
    done = threading.Event()
    th = threading.Thread(target=_warm, args=(cluster, done), name="workbench-warm", daemon=True)
    _STATE.update(thread=th, t0=time.perf_counter(), phases={}, error=None, done=done)
    try:
        th.start()
    except BaseException:
        engine.CONNECT_LOCK.release()  # no thread will: a search would wait for ever
        raise
    return True


def status() -> dict[str, Any]:
    """What the warm-up did so far: started, done, its phases' seconds from its start, the error it met."""
    if "thread" not in _STATE:
        return {"started": False}
    return {"started": True, "done": _STATE["done"].is_set(), "phases": dict(_STATE["phases"]),
            "error": _STATE["error"]}


def _warm(cluster: str | None, done: threading.Event) -> None:
    import ray

    phases, t0 = _STATE["phases"], _STATE["t0"]
    try:
        try:  # start() took CONNECT_LOCK: a search that comes now waits in connect() until Ray is up and this is sent
            info = engine.connect_held(cluster)
            phases["ray_s"] = round(time.perf_counter() - t0, 3)
            _, gpu_cls = engine.remotes()
            imports = ray.remote(num_cpus=1)(_import_compilers)
            refs = [imports.remote() for _ in range(info["cpus"])]
            actors = engine.warm_actors("search", gpu_cls.remote, info["gpus"]) if info["gpus"] else []
        finally:
            engine.CONNECT_LOCK.release()
        phases.update(cpus=info["cpus"], gpus=info["gpus"])
        _, pending = ray.wait(refs, num_returns=len(refs), timeout=READY_TIMEOUT_S)
        phases["workers_s"] = round(time.perf_counter() - t0, 3)
        if actors:
            engine.wait_placed(actors, READY_TIMEOUT_S)
            phases["gpu_actors_s"] = round(time.perf_counter() - t0, 3)
        if pending:
            _STATE["error"] = f"{len(pending)} compile workers were still importing after {READY_TIMEOUT_S:.0f} s"
    except Exception as e:  # the search that needs Ray says what is wrong when it tries again itself
        _STATE["error"] = f"{type(e).__name__}: {e}"
    finally:
        done.set()
    _FOREVER.wait()


def _import_compilers() -> float:
    """In a compile worker: import what compiling a candidate needs, so the first search's tasks do not."""
    t0 = time.perf_counter()
    import torch  # noqa: F401
    import triton.language.extra.tlx  # noqa: F401

    import workbench.search.compile_job  # noqa: F401

    return time.perf_counter() - t0
