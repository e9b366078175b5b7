"""A real two-node Ray cluster on this machine (``ray start --head`` and ``ray start --address``, each in the
foreground with ``--block`` so that stopping them stops only them), and a compile-only search that joins it by
address: the bench's multi-node row and a test's."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEARCH = """
import json, sys, time, torch, triton, triton.language as tl, workbench

@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

blocks = [2 ** (5 + i % 6) for i in range({n})]
space = [dict(BLOCK=b, num_warps=w) for b, w in zip(blocks, [1, 2, 4, 8] * 8)]
t0 = time.perf_counter()
r = workbench.search(scale, space, torch.empty(4096), torch.empty(4096), 4096, compile_only=True,
                     cluster={address!r}, progress=False)
print("RESULT " + json.dumps({{"rows": [dict(status=r.rows[i]["status"], node=r.rows[i].get("node"),
                                           config=c.config) for i, c in enumerate(r.candidates)],
                              "wall_s": time.perf_counter() - t0, "cluster": r.info["cluster"]}}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray() -> list[str]:
    """The ``ray`` command: its console script beside this Python, else its module (an unpacked Ray has no
    script)."""
    script = Path(sys.executable).with_name("ray")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ray.scripts.scripts"]


@contextlib.contextmanager
def two_nodes(cpus_each: int = 1) -> Iterator[str]:
    """Start a head and a second node (``cpus_each`` CPUs each); yield the head's address; stop both."""
    port = _free_port()
    tmp = tempfile.mkdtemp(prefix="ray2n-", dir="/tmp")
    common = ["--num-cpus", str(cpus_each), "--num-gpus", "0", "--block", "--disable-usage-stats",
              "--node-ip-address", "127.0.0.1"]
    env = _env()
    procs = [subprocess.Popen([*_ray(), "start", "--head", "--port", str(port), "--temp-dir", tmp,
                               "--include-dashboard", "false", *common], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    address = f"127.0.0.1:{port}"
    try:
        _wait_for(address, 60)
        procs.append(subprocess.Popen([*_ray(), "start", "--address", address, *common], env=env,
                                      start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        _wait_nodes(address, 2, 60)
        yield address
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def _env() -> dict[str, str]:
    """A throwaway local test cluster: no token authentication (Ray 2.60's ``ray start`` turns it on), and no
    address inherited from the caller."""
    return {**os.environ, "RAY_ADDRESS": "", "RAY_AUTH_MODE": "disabled"}


def _wait_for(address: str, limit_s: float) -> None:
    host, port = address.split(":")
    end = time.time() + limit_s
    while time.time() < end:
        with contextlib.suppress(OSError):
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        time.sleep(0.5)
    raise TimeoutError(f"the Ray head at {address} did not start within {limit_s} s")


def _wait_nodes(address: str, n: int, limit_s: float) -> None:
    """Until ``n`` nodes are alive; a client that could not reach the head's GCS yet (its port open, the service
    not, on a loaded machine) tries again within ``limit_s``."""
    end = time.time() + limit_s
    while True:
        left = max(5.0, end - time.time())
        code = (f"import ray, time; ray.init(address={address!r}, logging_level='ERROR'); end = time.time() + {left}\n"
                f"while len([x for x in ray.nodes() if x['Alive']]) < {n} and time.time() < end: time.sleep(0.5)\n"
                f"print(len([x for x in ray.nodes() if x['Alive']]))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=left + 60,
                             env=_env())
        if out.stdout.strip().splitlines()[-1:] == [str(n)]:
            return
        if time.time() >= end:
            raise TimeoutError(f"{n} Ray nodes did not join {address}: {out.stdout[-500:]} {out.stderr[-1500:]}")
        time.sleep(2.0)


def two_node_search(tmp: Path, n_configs: int = 8) -> list[dict]:
    """The rows (status, node, config) of a compile-only search run by a fresh process on two local nodes."""
    with two_nodes() as address:
        script = Path(tmp) / "search_two_nodes.py"
        script.write_text(SEARCH.format(n=n_configs, address=address))
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=900,
                             cwd=str(ROOT), env=_env())
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"the two-node search failed (rc {out.returncode}): {out.stderr[-3000:]}")
    result = json.loads(lines[-1][len("RESULT "):])
    for row in result["rows"]:
        row["wall_s"] = result["wall_s"]
    return result["rows"]


if __name__ == "__main__":
    print(json.dumps(two_node_search(Path(tempfile.mkdtemp())), indent=1))
