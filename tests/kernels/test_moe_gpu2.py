"""Two GPUs (marker ``gpu2``; skipped with fewer): step 0 of bench/notes/moe-communication.md. The expert-parallel
MoE layer (tlx_kernels.moe.dispatch.layer_ep: NCCL all-to-alls around the library's grouped GEMM) on two ranks
equals, on each rank's tokens, the layer computed on that rank's GPU with every expert and a loop of torch.matmul
in fp32 (bf16: 1e-2 of the largest output, the output rows of the grouped GEMM being bf16 before their weighted
sum). Ranks hold different token counts; one expert is picked by no token; top-8 of 16 experts."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu2,
    pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs"),
]

E, K, N, TOPK = 16, 2048, 1024, 8


def _inputs(seed: int, T: int, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(T, K, device=device, dtype=torch.bfloat16, generator=g)
    scores = torch.randn(T, E, device=device, generator=g)
    scores[:, 5] = -1e9  # nobody picks expert 5: an empty group on rank 0
    weights, ids = torch.topk(scores.softmax(-1), TOPK, dim=-1)
    return x, ids, weights


def _rank(rank: int, world: int, port: int, results) -> None:
    import torch.distributed as dist
    from tlx_kernels.accuracy import rel_err
    from tlx_kernels.moe import dispatch as D

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    try:
        dev = torch.device("cuda", rank)
        g = torch.Generator(device=dev).manual_seed(0)
        w = torch.randn(E, K, N, device=dev, dtype=torch.bfloat16, generator=g) / K ** 0.5  # the same on every rank
        x, ids, weights = _inputs(100 + rank, 4096 + 1000 * rank, dev)
        E_local = E // world
        out = D.layer_ep(x, ids, weights, w[rank * E_local:(rank + 1) * E_local].contiguous())
        want = D.layer_local(x, ids, weights, w, grouped=D.matmul_loop)
        torch.cuda.synchronize()
        results.put((rank, rel_err(out, want), bool(torch.isfinite(out).all())))
    except Exception as e:  # noqa: BLE001 - reported to the test process
        results.put((rank, f"{type(e).__name__}: {e}", False))
    finally:
        dist.destroy_process_group()


def test_expert_parallel_layer_on_two_gpus_matches_one_gpu():
    from test_moe_dispatch import spawn_ranks  # the CPU test's process launcher (tests/kernels is on sys.path)

    got = spawn_ranks(_rank, 2, 600)
    assert [g[0] for g in got] == [0, 1]
    for rank, err, finite in got:
        assert finite and isinstance(err, float) and err < 1e-2, (rank, err)
