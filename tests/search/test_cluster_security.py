"""A Ray cluster the workbench starts: its listening sockets, no dashboard (so no job API), and Ray's token
authentication on, so that someone who reaches one of its ports cannot run code there (CVE-2023-48022); with
``RAY_AUTH_MODE=disabled`` in the environment the workbench starts none.

Ray's gRPC servers take no bind address: they listen on every interface (the issue's "127.0.0.1 only" cannot be
had with Ray's options); the token is what closes them. The test starts the cluster as ``workbench.search`` does,
in a process of its own, lists the sockets every Ray process of it listens on, and has an outsider (another process
without the token, as a machine on the network would be) try to join it and run a task."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("psutil")

CLUSTER = textwrap.dedent("""
    import json, os, subprocess, sys, psutil, ray
    from workbench.search.engine import ClusterError, connect
    os.environ["RAY_AUTH_MODE"] = "disabled"  # a user's environment that would leave it open
    try:
        connect(num_cpus=1)
        refused_open = None
    except ClusterError as e:
        refused_open = str(e)
    del os.environ["RAY_AUTH_MODE"]
    info = connect(num_cpus=1)
    me = psutil.Process()
    sockets = sorted({(p.name()[:24], c.laddr.ip, c.laddr.port) for p in [me, *me.children(recursive=True)]
                      for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN})
    gcs = ray.get_runtime_context().gcs_address
    outsider = subprocess.run([sys.executable, "-c", sys.argv[1].replace("GCS", gcs)], capture_output=True,
                              text=True, timeout=120, env={**{k: v for k, v in os.environ.items()
                                                               if not k.startswith("RAY_")}, "HOME": sys.argv[2]})
    print(json.dumps({"info": info, "sockets": sockets, "gcs": gcs, "outsider": outsider.stdout.strip(),
                      "outsider_log": outsider.stderr[-2000:],
                      "refused_open": refused_open}))
    ray.shutdown()
""")

OUTSIDER = textwrap.dedent("""
    import ray
    try:
        ray.init(address="GCS", logging_level="ERROR", log_to_driver=False)
        print("ran: " + ray.get(ray.remote(lambda: "code of an outsider").remote(), timeout=30))
    except Exception as e:
        print(f"refused: {type(e).__name__}: {e}")
""")


def test_a_cluster_the_workbench_starts_refuses_whoever_lacks_its_token(tmp_path):
    p = subprocess.run([sys.executable, "-c", CLUSTER, OUTSIDER, str(tmp_path)], capture_output=True, text=True,
                       timeout=240, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    print("listening:", *(f"{name} {ip}:{port}" for name, ip, port in out["sockets"]), sep="\n  ")
    assert out["refused_open"] and "does not start a Ray cluster without" in out["refused_open"]
    assert out["info"]["auth"] == "token"
    assert out["sockets"], "no listening socket found: the listing itself is broken"
    assert not [s for s in out["sockets"] if s[2] in (8265, 10001)], "the dashboard (job API) or Ray client is up"
    assert out["outsider"].startswith("refused:"), out["outsider"]
    assert "Authentication token is missing" in out["outsider_log"], out["outsider_log"]  # for lack of the token
