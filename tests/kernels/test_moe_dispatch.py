"""The MoE layer around the grouped GEMM (tlx_kernels.moe.dispatch), on the CPU: routing, the local layer against a
direct per-token sum, and the expert-parallel layer over two processes (gloo: the same all-to-alls NCCL runs on
GPUs) against the local layer. The two-GPU run with NCCL and the library's kernels: test_moe_gpu2.py."""

from __future__ import annotations

import os
import socket

import pytest

torch = pytest.importorskip("torch")

from tlx_kernels.accuracy import rel_err  # noqa: E402
from tlx_kernels.moe import dispatch as D  # noqa: E402

T, K, N, E, TOPK = 37, 16, 24, 6, 2


def inputs(seed: int, T_: int = T, E_: int = E, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T_, K, generator=g).to(dtype)
    w = torch.randn(E_, K, N, generator=g).to(dtype)
    scores = torch.randn(T_, E_, generator=g)
    scores[:, E_ - 1] = -1e9  # one expert nobody picks: an empty group
    weights, ids = torch.topk(scores.softmax(-1), TOPK, dim=-1)
    return x, w, ids, weights


def direct(x, w, ids, weights):
    """sum_j weights[t, j] * x[t] @ w[ids[t, j]], token by token, in fp32."""
    out = torch.zeros(x.shape[0], w.shape[2])
    for t in range(x.shape[0]):
        for j in range(ids.shape[1]):
            out[t] += weights[t, j] * (x[t].float() @ w[ids[t, j]].float())
    return out


def test_route_sorts_rows_by_expert_stably():
    ids = torch.tensor([[2, 0], [0, 1], [2, 1]])
    r = D.route(ids, torch.arange(6.0).view(3, 2), 4)
    assert r.tokens.tolist() == [0, 1, 1, 2, 0, 2] and r.weights.tolist() == [1, 2, 3, 5, 0, 4]
    assert r.counts.tolist() == [2, 2, 2, 0]


def test_local_layer_matches_a_direct_sum():
    x, w, ids, weights = inputs(1)
    out = D.layer_local(x, ids, weights, w, grouped=D.matmul_loop)
    assert rel_err(out, direct(x, w, ids, weights)) < 1e-5


def spawn_ranks(target, world: int, timeout_s: float) -> list[tuple]:
    """Run ``target(rank, world, port, results)`` in ``world`` spawned processes (a free local port for their
    rendezvous); the tuples each put on ``results``, by rank."""
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=target, args=(r, world, port, results)) for r in range(world)]
    for p in procs:
        p.start()
    got = sorted((results.get(timeout=timeout_s) for _ in procs), key=lambda g: g[0])
    for p in procs:
        p.join(timeout=60)
    return got


def _ep_rank(rank: int, world: int, port: int, results) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        x, w, ids, weights = inputs(100 + rank, T_=T + 5 * rank)  # ranks hold different token counts
        _, w_all, _, _ = inputs(0)  # the same weights everywhere
        E_local = E // world
        out = D.layer_ep(x, ids, weights, w_all[rank * E_local:(rank + 1) * E_local], grouped=D.matmul_loop)
        want = D.layer_local(x, ids, weights, w_all, grouped=D.matmul_loop)
        results.put((rank, rel_err(out, want), tuple(out.shape)))
    finally:
        dist.destroy_process_group()


def test_expert_parallel_layer_matches_the_local_one_over_two_processes():
    got = spawn_ranks(_ep_rank, 2, 120)
    assert [g[0] for g in got] == [0, 1]
    assert [g[2] for g in got] == [(T, N), (T + 5, N)]
    assert all(g[1] < 1e-5 for g in got), got
