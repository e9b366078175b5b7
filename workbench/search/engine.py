"""The search's engine, on Ray: compile tasks on every core of every node, one GPU actor per GPU, results
streaming back as they finish.

``ray.init()`` starts a local cluster by default (one compile task per core: ``num_cpus=1`` each; one actor per
local GPU: ``num_gpus=1``); ``cluster="ray://host:port"``, ``"host:port"`` or ``RAY_ADDRESS`` joins an existing
one, checked for reachability first so that a wrong address is an error within seconds, not a hang. Each
compile worker keeps its own kernels and Triton's cache on its node; a GPU actor writes the binaries it is sent
into its own folder and launches them without compiling.

The pipeline: every candidate's compile is submitted at once; as each finishes, a survivor of the static checks
goes to the least busy GPU actor (two in flight per actor at most, so a budget stops quickly). A compile that
crashes its process, a kernel that hangs or faults, an actor that dies: each costs that candidate only (an actor
is restarted and set up again). When every candidate is judged, the leaders (within ``CONFIRM_WITHIN`` of the
best) are timed again together, interleaved, on one GPU, and the best of that run wins.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from workbench.compile import child, portable
from workbench.errors import WorkbenchError
from workbench.search.compile_job import CompileOutcome, compile_candidate
from workbench.search.problem import Problem
from workbench.search.ranking import score
from workbench.search.space import Candidate

__all__ = ["ClusterError", "Progress", "SearchError", "connect", "run_pipeline"]

IN_FLIGHT_PER_GPU = 2
CONFIRM_WITHIN = 0.03  # leaders within 3% of the best are timed again together
CONFIRM_MAX = 6
CONFIRM_ROUNDS = 7
REACH_TIMEOUT_S = 5.0
JUDGE_GRACE_S = 120.0  # beyond the kernel's own timeout: an actor that answers nothing by then is killed
LOST_RETRIES = 1  # a candidate whose GPU actor died is tried this many more times, then it is "lost"
STUCK_AFTER_S = 30.0  # beyond the kernel's own timeout: a GPU actor still judging writes where its threads are
PLACE_TIMEOUT_S = 120.0  # a GPU actor Ray has not started by then waits for a GPU that something else holds
RESTART_POLL_S = 0.5  # how often a call to a restarting actor is made again (when_restarted)


class SearchError(WorkbenchError):
    """The search cannot go on (the reference raised on the GPU worker, no worker could start...), or it found no
    config that ran and passed: then ``result`` is the ``SearchResult`` (``result.table``: each one's status and
    error)."""

    result: Any = None


class ClusterError(SearchError):
    """The Ray cluster cannot be reached or started."""


# ---------------------------------------------------------------------------------------------------- the cluster
def _reachable(address: str) -> None:
    url = urlparse(address if "://" in address else f"tcp://{address}")
    if url.hostname is None or url.port is None:
        return  # "auto" and other forms Ray resolves itself
    try:
        socket.create_connection((url.hostname, url.port), timeout=REACH_TIMEOUT_S).close()
    except OSError as e:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {e}",
                           hint="start it with `ray start --head` (and `ray start --address=HEAD:PORT` on other "
                                "machines), or leave cluster= and RAY_ADDRESS unset for a local cluster") from None


def _python_path() -> str:
    """The caller's import path, so that workers import what it imports (kernels by module name)."""
    keep = [p for p in sys.path if p and os.path.isdir(p) and "site-packages" not in p and "lib/python" not in p]
    env = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(dict.fromkeys([*keep, *[p for p in env.split(os.pathsep) if p]]))


def _require_token_auth() -> None:
    """A cluster this process starts has Ray's token authentication: Ray's servers listen on every interface (its
    gRPC servers take no bind address), so the token is what keeps anyone who reaches a port from running code
    (CVE-2023-48022). Ray 2.60 turns it on by default for a new local cluster unless ``RAY_AUTH_MODE`` says
    otherwise: then the workbench starts none."""
    mode = os.environ.get("RAY_AUTH_MODE")
    if mode is not None and mode.lower() != "token":
        raise ClusterError(f"RAY_AUTH_MODE={mode}: the workbench does not start a Ray cluster without Ray's "
                           "authentication token (its ports listen on every interface: whoever reaches them could "
                           "run code on this machine)",
                           hint="unset RAY_AUTH_MODE (or set it to token); a cluster of your own, started with "
                                "`ray start --head`, is used as it is with cluster='HOST:PORT'")


# held while Ray starts: by connect(), or from start to end by the background start (search.warm), which takes it
# in the thread that starts it and lets it go in its own (a plain Lock allows that)
CONNECT_LOCK = threading.Lock()
#: what ray.init says when its raylet or GCS did not come up in time (a loaded machine: seen twice in a fresh clone's
#: suite on 2 cores: "The current node timed out during startup", and the GCS port file not written in time)
_SLOW_START = ("timed out during startup", "GCS has become overloaded", "gcs_server_port")


def connect(cluster: str | None = None, num_cpus: int | None = None,
            on_wait: Callable[[float], None] | None = None) -> dict[str, Any]:
    """Ray, started or joined; returns what the cluster holds (nodes, CPUs, GPUs). A local cluster is started with
    Ray's token authentication on and without its dashboard (so without its job API). While the background start
    of ``workbench.search.warm`` holds Ray, this waits for it, calling ``on_wait(seconds waited)`` twice a second."""
    t0 = time.perf_counter()
    while not CONNECT_LOCK.acquire(timeout=0.5):
        if on_wait is not None:
            on_wait(time.perf_counter() - t0)
    try:
        return connect_held(cluster, num_cpus)
    finally:
        CONNECT_LOCK.release()


def connect_held(cluster: str | None, num_cpus: int | None = None) -> dict[str, Any]:
    """``connect`` for a caller that holds ``CONNECT_LOCK`` already (the background start)."""
    import ray

    address = cluster or os.environ.get("RAY_ADDRESS") or None
    if ray.is_initialized() and "address" in _CONNECTED and _CONNECTED["address"] != address:
        if address:
            _reachable(address)  # before leaving the cluster in use
        _WARM.clear()
        ray.shutdown()
    if not ray.is_initialized():
        if address:
            _reachable(address)
        kw: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        if address:  # workers started by other nodes' raylets get the caller's import path this way
            kw["runtime_env"] = {"env_vars": {"PYTHONPATH": _python_path()}}
        else:  # a local cluster's workers inherit this process's environment; a runtime_env would make Ray start
            # new workers for it instead of using the ones it prestarts (2.2 s later, measured on this machine)
            os.environ["PYTHONPATH"] = _python_path()
        if not address and num_cpus:
            kw["num_cpus"] = num_cpus  # else all cores (or the cluster `ray start` left running on this machine)
        if not address:
            _require_token_auth()
        for attempt in (1, 2):
            try:
                ray.init(address=address, **kw)
                break
            except Exception as e:
                if attempt == 1 and not address and any(w in str(e) for w in _SLOW_START):
                    ray.shutdown()  # a loaded machine: Ray's own processes came up too slowly; once more
                    continue
                raise ClusterError(f"Ray could not start{' or join ' + address if address else ''}: "
                                   f"{type(e).__name__}: {e}") from None
        _CONNECTED["address"] = address
    res = ray.cluster_resources()
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    return {"address": address or "local", "nodes": len(nodes), "cpus": int(res.get("CPU", 0)),
            "gpus": int(res.get("GPU", 0)), "node_names": [n.get("NodeManagerHostname") for n in nodes],
            "auth": os.environ.get("RAY_AUTH_MODE") or "unset"}


# ---------------------------------------------------------------------------------------------------- remote parts
def _compile_remote(problem: Problem, cand: bytes) -> CompileOutcome:
    child.off()  # this Ray task is the isolation: a crash costs this candidate
    return compile_candidate(problem, portable.loads(cand))


class _GpuActor:
    """A ``Judge`` in a Ray actor holding one GPU."""

    def __init__(self) -> None:
        from workbench.search.judge import Judge

        self.judge = Judge()

    def setup(self, problem: Problem) -> dict[str, Any]:
        return self.judge.setup(problem)

    def run(self, cand: bytes, binary: Any, timing: bool = True) -> dict[str, Any]:
        import faulthandler

        # a run that outlasts the kernel's own limit by STUCK_AFTER_S writes every thread's stack where the engine
        # reads it before it kills this actor: a hang of the harness (not the kernel) then says where it waited
        with open(stack_file(os.getpid()), "w") as f:
            faulthandler.dump_traceback_later((self.judge.problem.timeout_s or 10.0) + STUCK_AFTER_S, file=f)
            try:
                return self.judge.judge(portable.loads(cand), binary, timing=timing)
            finally:
                faulthandler.cancel_dump_traceback_later()

    def confirm(self, items: list[tuple[bytes, Any]], n: int) -> dict[int, dict[str, Any]]:
        return self.judge.confirm([(portable.loads(c), b) for c, b in items], n)


def stack_file(pid: int) -> str:
    """Where the GPU actor of process ``pid`` writes its stacks when a run is stuck."""
    return os.path.join(tempfile.gettempdir(), f"wb-gpu-actor-{pid}.stack")


def _stuck_at(pid: int | None) -> str:
    """The innermost frames of the thread that was judging, as the stuck actor wrote them, or '' (none written: the
    actor ran on another machine, or answered in time)."""
    try:
        text = Path(stack_file(pid)).read_text() if pid else ""
    except OSError:
        return ""
    blocks = text.split("\n\n")
    block = next((b for b in blocks if "workbench" in b), blocks[0])  # the thread judging (Ray has others)
    frames = [ln.strip() for ln in block.splitlines() if ln.strip().startswith("File ")]
    return "; it was at " + " <- ".join(f.replace("File ", "") for f in frames[:3]) if frames else ""


_REMOTES: dict[str, Any] = {}
_CONNECTED: dict[str, str | None] = {}  # the address this process's Ray was started with (None: a local cluster)
_WARM: dict[str, list[Any]] = {}  # kind ("search", "evaluate") -> its GPU actors, kept warm between calls


def warm_actors(kind: str, make: Callable[[], Any], n: int) -> list[Any]:
    """``n`` actors of ``kind`` kept warm between calls of this process (CUDA context, isolated worker); those of
    every other kind are ended first. Each holds a whole GPU (``num_gpus=1``): an evaluation's actors kept while a
    search starts its own would leave the search's waiting for a GPU for ever."""
    import ray

    for other in [k for k in _WARM if k != kind]:
        for a in _WARM.pop(other):
            ray.kill(a)
    have = _WARM.setdefault(kind, [])
    while len(have) < n:
        have.append(make())
    return have[:n]


def forget_actors(kind: str) -> None:
    """End ``kind``'s warm actors (an interrupted call: nothing keeps running for it)."""
    import ray

    for a in _WARM.pop(kind, []):
        ray.kill(a)


def wait_placed(actors: list[Any], timeout_s: float = PLACE_TIMEOUT_S) -> None:
    """Return once Ray has started every actor, or raise ClusterError naming why it cannot (no free GPU)."""
    import ray

    refs = [a.__ray_ready__.remote() for a in actors]
    ready, pending = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
    if pending:
        raise not_placed(len(pending), timeout_s)
    ray.get(ready)  # an actor whose start raised says why here


def when_restarted(call: Callable[[], Any], limit_s: float = PLACE_TIMEOUT_S) -> Any:
    """``ray.get(call())`` for a call to an actor Ray is restarting (its process was killed: an OOM killer, a
    lost worker): with no task retries Ray refuses calls meanwhile (``ActorUnavailableError``), so the call is
    made again until the actor answers or ``limit_s`` has passed."""
    import ray

    t0 = time.perf_counter()
    while True:
        try:
            return ray.get(call())
        except ray.exceptions.ActorUnavailableError:
            if time.perf_counter() - t0 > limit_s:
                raise
            time.sleep(RESTART_POLL_S)


def not_placed(n: int, waited_s: float) -> ClusterError:
    import ray

    free, total = ray.available_resources().get("GPU", 0), ray.cluster_resources().get("GPU", 0)
    return ClusterError(f"{n} GPU worker(s) not started after {waited_s:.0f} s: the cluster has {free:g} of its "
                        f"{total:g} GPUs free (another driver's actors, or a search or evaluation of another "
                        "process, hold them)",
                        hint="end the process holding them, or give this one a cluster of its own (cluster=)")


def remotes() -> tuple[Any, Any]:
    import ray

    if not _REMOTES:
        # a task that loses its process is tried once more: a worker that dies can take the task queued behind it
        # along (Ray leases workers); a candidate that kills its compiler kills it twice and is a compile-error
        _REMOTES["compile"] = ray.remote(num_cpus=1, max_retries=1, retry_exceptions=False)(_compile_remote)
        _REMOTES["gpu"] = ray.remote(num_gpus=1, num_cpus=0, max_restarts=-1, max_task_retries=0)(_GpuActor)
    return _REMOTES["compile"], _REMOTES["gpu"]


# ---------------------------------------------------------------------------------------------------- progress
@dataclass
class Progress:
    """What a progress display is told after each event."""

    total: int
    counts: dict[str, int] = field(default_factory=dict)
    compiled: int = 0
    judged: int = 0
    best: dict[str, Any] | None = None
    phase: str = "compiling"
    elapsed_s: float = 0.0
    message: str = ""


# ---------------------------------------------------------------------------------------------------- the pipeline
@dataclass
class _Gpu:
    actor: Any
    ready: Any  # the setup's ObjectRef
    busy: int = 0
    index: int = 0
    pid: int | None = None  # the actor's process (its setup says)


@dataclass
class PipelineResult:
    rows: dict[int, dict[str, Any]]
    binaries: dict[int, Any]
    phases: dict[str, float]
    gpu_info: list[dict[str, Any]]
    notes: list[str]


class _Pipeline:
    def __init__(self, problem: Problem, cands: list[Candidate], *, gpus: int, budget_s: float | None,
                 progress: Callable[[Progress], None] | None, compile_timeout_s: float,
                 stop_after_hangs: int | None = None) -> None:
        import ray

        self.ray = ray
        self.problem, self.cands = problem, {c.index: c for c in cands}
        self.packed = {c.index: portable.dumps(c) for c in cands}
        self.budget_s, self.compile_timeout_s = budget_s, compile_timeout_s
        self.stop_after_hangs = stop_after_hangs
        self.on_progress = progress
        self.t0 = time.perf_counter()
        self.rows: dict[int, dict[str, Any]] = {c.index: {"index": c.index, "status": None} for c in cands}
        self.binaries: dict[int, Any] = {}
        self.state = Progress(total=len(cands))
        self.notes: list[str] = []
        self.lost_tries: dict[int, int] = {}
        self.phases: dict[str, float] = {}
        self.gpu_info: list[dict[str, Any]] = []
        compile_fn, gpu_cls = remotes()
        self.problem_ref = ray.put(problem)
        actors = warm_actors("search", gpu_cls.remote, gpus) if gpus else []
        self.gpus = [self._start_gpu(a, i) for i, a in enumerate(actors)]
        self.unplaced = {a.__ray_ready__.remote(): a for a in actors}  # until Ray starts them (PLACE_TIMEOUT_S)
        self.compiles = {compile_fn.remote(self.problem_ref, self.packed[i]): (i, time.perf_counter())
                         for i in self.packed}
        self.queue: list[int] = []
        self.judging: dict[Any, tuple[int, _Gpu, float]] = {}
        self.setups: dict[Any, _Gpu] = {g.ready: g for g in self.gpus}

    def _start_gpu(self, actor: Any, i: int) -> _Gpu:
        return _Gpu(actor, actor.setup.remote(self.problem_ref), index=i)

    # ------------------------------------------------------------------ events
    def _finish(self, i: int, **row: Any) -> None:
        self.rows[i].update(row)
        st = row.get("status")
        if st:
            self.state.counts[st] = self.state.counts.get(st, 0) + 1
        sc = score(self.rows[i])
        if sc is not None and (self.state.best is None or sc > self.state.best["score"]):
            self.state.best = {"index": i, "ms": row["ms"], "config": self.cands[i].config,
                               "ratio": row.get("ratio"), "score": sc}
        self._tell()

    def _tell(self, message: str = "") -> None:
        self.state.elapsed_s = time.perf_counter() - self.t0
        self.state.message = message
        if self.on_progress is not None:
            try:
                self.on_progress(self.state)
            except Exception:
                self.on_progress = None  # a broken display must not stop the search

    def _over_budget(self) -> bool:
        return self.budget_s is not None and time.perf_counter() - self.t0 > self.budget_s

    def _compiled(self, ref: Any) -> None:
        i, _ = self.compiles.pop(ref)
        self.state.compiled += 1
        try:
            out: CompileOutcome = self.ray.get(ref)
        except Exception as e:
            self._finish(i, status="compile-error", error=f"the compile process died (twice): {_ray_error(e)}",
                         transient=True)
            return
        self.rows[i].update(out.row, compile_s=round(out.compile_s, 3), node=out.node)
        if out.binary is not None:
            self.binaries[i] = out.binary
        if out.status == "compiled" and self.gpus and out.binary is not None:
            self.queue.append(i)
            self.rows[i]["status"] = "compiled"
            self._tell()
        elif out.status == "compiled":  # compile-only: nothing runs
            self._finish(i, status="compiled" if not self.gpus else "fault",
                         error=None if not self.gpus else "no binary came back from the compile")
        else:
            self._finish(i, status=out.status, error=out.error)

    def _setup_done(self, ref: Any) -> None:
        g = self.setups.pop(ref)
        try:
            try:
                info = self.ray.get(ref)
            except self.ray.exceptions.ActorUnavailableError:  # set up again while Ray restarts the actor
                info = when_restarted(lambda: g.actor.setup.remote(self.problem_ref))
        except Exception as e:
            raise SearchError(f"the GPU worker could not set the problem up: {_ray_error(e)}",
                              hint="the reference gets the call's positional arguments, rebuilt on fresh data on "
                                   "the GPU, and returns the expected output(s)") from None
        g.pid = info.get("pid")
        if len(self.gpu_info) <= g.index:
            self.gpu_info.append(info)

    def _judged(self, ref: Any) -> None:
        i, g, _ = self.judging.pop(ref)
        g.busy -= 1
        self.state.judged += 1
        try:
            row = self.ray.get(ref)
        except Exception as e:  # the actor's process was lost (kernel faults stay in its isolated worker)
            self._restart(g)
            self._lost(i, f"the GPU worker process died: {_ray_error(e)}")
            return
        self._finish(i, **{k: v for k, v in row.items() if k != "index"})

    def _lost(self, i: int, why: str) -> None:
        """A candidate whose GPU actor was lost (killed, out of memory): tried once more on a fresh actor, then
        ``lost``. A lost worker costs one candidate, never the search."""
        self.lost_tries[i] = self.lost_tries.get(i, 0) + 1
        if self.lost_tries[i] <= LOST_RETRIES:
            self.queue.insert(0, i)
            self._tell(f"candidate {i}: {why}; trying it again")
            return
        self._finish(i, status="lost", error=f"{why} (tried {self.lost_tries[i]} times)")

    def _restart(self, g: _Gpu) -> None:
        g.ready = g.actor.setup.remote(self.problem_ref)
        self.setups[g.ready] = g

    def _dispatch(self) -> None:
        while self.queue and not self._over_budget():
            free = [g for g in self.gpus if g.busy < IN_FLIGHT_PER_GPU and g.ready not in self.setups]
            if not free:
                return
            g = min(free, key=lambda x: x.busy)
            i = self.queue.pop(0)
            g.busy += 1
            self.judging[g.actor.run.remote(self.packed[i], self.binaries[i])] = (i, g, time.perf_counter())
            self.state.phase = "running"

    def _kill_late(self) -> None:
        now = time.perf_counter()
        if self.unplaced:
            ready, _ = self.ray.wait(list(self.unplaced), num_returns=len(self.unplaced), timeout=0)
            for ref in ready:
                self.unplaced.pop(ref)
            if self.unplaced and now - self.t0 > PLACE_TIMEOUT_S:
                raise not_placed(len(self.unplaced), now - self.t0)
        limit = (self.problem.timeout_s or 10.0) + JUDGE_GRACE_S
        for ref, (i, g, t) in list(self.judging.items()):
            if now - t > limit:
                where = _stuck_at(g.pid)
                self.ray.kill(g.actor, no_restart=False)
                self.judging.pop(ref)
                g.busy -= 1
                self._finish(i, status="hang", error=f"the GPU worker answered nothing for {limit:.0f} s{where}; "
                                                     "restarted")
                self._restart(g)  # a hang is the candidate's: not tried again
        for ref, (i, t) in list(self.compiles.items()):
            if now - t > self.compile_timeout_s:
                self.ray.cancel(ref, force=True)
                self.compiles.pop(ref)
                self._finish(i, status="compile-error", error=f"the compile took over {self.compile_timeout_s:.0f} s",
                             transient=True)

    def _stop(self, why: str, note: str) -> None:
        """Skip every candidate not yet compiled or run, saying ``why`` in their rows and ``note`` in the notes."""
        for ref, (i, _) in list(self.compiles.items()):
            self.ray.cancel(ref, force=True)
            self._finish(i, status="skipped", error=f"not compiled: {why}", transient=True)
        self.compiles.clear()
        for i in self.queue:
            self._finish(i, status="skipped", error=f"not run: {why}", transient=True)
        self.queue.clear()
        self.notes.append(f"{note} after {time.perf_counter() - self.t0:.1f} s")

    def _hung_enough(self) -> bool:
        c = self.state.counts
        return self.stop_after_hangs is not None and c.get("hang", 0) + c.get("fault", 0) >= self.stop_after_hangs

    # ------------------------------------------------------------------ the loop
    def run(self) -> PipelineResult:
        try:
            return self._run()
        except BaseException:  # an error or an interrupt: nothing keeps running for a search nobody waits for
            for ref in list(self.compiles) + list(self.judging):
                self.ray.cancel(ref, force=ref in self.compiles)
            raise

    def _run(self) -> PipelineResult:
        t_compile_end = None
        while self.compiles or self.queue or self.judging:
            if self._over_budget() and (self.compiles or self.queue):
                self._stop(f"budget_s={self.budget_s} was reached", f"budget_s={self.budget_s} reached")
            elif self._hung_enough() and (self.compiles or self.queue):
                why = (f"stopped once {self.stop_after_hangs} runs had hung or faulted (each costs the time limit and "
                       "a fresh worker)")
                self._stop(why, why)
            self._dispatch()
            waiting = list(self.compiles) + list(self.judging) + list(self.setups)
            if not waiting:
                break
            ready, _ = self.ray.wait(waiting, num_returns=1, timeout=0.5)
            for ref in ready:
                if ref in self.setups:
                    self._setup_done(ref)
                elif ref in self.compiles:
                    self._compiled(ref)
                    if not self.compiles:
                        t_compile_end = time.perf_counter()
                elif ref in self.judging:
                    self._judged(ref)
            self._kill_late()
            if not ready:
                self._tell()
        end = time.perf_counter()
        self.phases["compile_wall_s"] = round((t_compile_end or end) - self.t0, 3)
        self.phases["pipeline_s"] = round(end - self.t0, 3)
        if self.gpus and not self._over_budget():
            self._confirm()
        self.phases["total_s"] = round(time.perf_counter() - self.t0, 3)
        return PipelineResult(self.rows, self.binaries, self.phases, self.gpu_info, self.notes)

    def _confirm(self) -> None:
        ok = [(i, score(r)) for i, r in self.rows.items() if score(r) is not None]
        if len(ok) < 2:
            return
        best = max(s for _, s in ok)
        leaders = sorted([x for x in ok if x[1] >= best * (1 - CONFIRM_WITHIN)], key=lambda x: -x[1])
        leaders = leaders[:CONFIRM_MAX]
        if len(leaders) < 2:
            return
        self.state.phase = "confirming"
        self._tell(f"timing the {len(leaders)} leaders again together")
        t0 = time.perf_counter()
        g = self.gpus[0]
        try:
            times = self.ray.get(g.actor.confirm.remote([(self.packed[i], self.binaries[i]) for i, _ in leaders],
                                                         CONFIRM_ROUNDS))
        except Exception as e:
            self.notes.append(f"the leaders could not be timed again: {_ray_error(e)}")
            return
        for i, t in times.items():
            self.rows[i].update(t, confirmed=True)
        self.phases["confirm_s"] = round(time.perf_counter() - t0, 3)


def _ray_error(e: BaseException) -> str:
    cause = getattr(e, "cause", None)
    text = f"{type(cause).__name__}: {cause}" if cause is not None else f"{type(e).__name__}: {e}"
    return text.strip().splitlines()[-1][:500] if text.strip() else type(e).__name__


def run_pipeline(problem: Problem, cands: list[Candidate], *, gpus: int, budget_s: float | None = None,
                 progress: Callable[[Progress], None] | None = None,
                 compile_timeout_s: float = 600.0, stop_after_hangs: int | None = None) -> PipelineResult:
    """Compile, check, judge and confirm every candidate on the connected Ray cluster; ``stop_after_hangs``: skip
    the rest once that many candidates hung or faulted (a stress run: the race showed, and each more costs the
    time limit and a fresh worker)."""
    return _Pipeline(problem, cands, gpus=gpus, budget_s=budget_s, progress=progress,
                     compile_timeout_s=compile_timeout_s, stop_after_hangs=stop_after_hangs).run()
