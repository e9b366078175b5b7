"""A mixture-of-experts layer around the grouped GEMM, with expert parallelism the plain way: step 0 of
``bench/notes/moe-communication.md``, the baseline and oracle of the overlapped versions to come.

- :func:`route`: top-k expert ids and router weights per token -> the ``(token, slot)`` rows sorted by expert
  (stable), their tokens and weights, and the rows per expert;
- :func:`layer_local`: every expert on this device: rows gathered by expert, one grouped GEMM, the ``k`` output
  rows of a token summed with its router weights (fp32 sum, output in the input dtype);
- :func:`layer_ep`: experts spread over a process group (rank ``q`` holds experts ``q * E_local ...``): the row
  counts are exchanged (an all-to-all of ``E`` ints, then one host synchronisation for the split sizes), the rows
  dispatched (``all_to_all_single``), sorted by local expert for one grouped GEMM, sent back (the reverse
  all-to-all) and summed per token as in :func:`layer_local`. Nothing overlaps: that is the later steps' job.

``grouped(x, w, offsets)`` is the grouped product used (default :func:`tlx_kernels.moe.grouped_mm`; any function
with its signature and semantics, e.g. a loop of ``torch.matmul`` on a CPU).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Grouped = Callable[[Any, Any, Any], Any]


@dataclass
class Routed:
    """The ``T * k`` rows of a routing, sorted by expert: ``tokens[i]`` is row ``i``'s token, ``weights[i]`` its
    router weight, ``counts[e]`` the rows of expert ``e`` (int64, on the device)."""

    tokens: Any
    weights: Any
    counts: Any


def route(expert_ids, weights, E: int) -> Routed:
    """Sort the ``(token, slot)`` pairs of ``expert_ids`` (``[T, k]`` ints in ``[0, E)``) by expert, stably."""
    import torch

    k = expert_ids.shape[1]
    flat = expert_ids.reshape(-1)
    order = torch.argsort(flat, stable=True)
    return Routed(order // k, weights.reshape(-1)[order], torch.bincount(flat, minlength=E))


def offsets_of_counts(counts):
    """Cumulative int32 offsets of per-group counts (what the grouped GEMMs take)."""
    import torch

    return torch.cumsum(counts, 0).to(torch.int32)


def _default_grouped() -> Grouped:
    from tlx_kernels.moe.calls import grouped_mm

    return grouped_mm


def weighted_sum(rows, r: Routed, T: int):
    """``out[t] = sum of weight * row`` over the rows of token ``t`` (fp32), in the rows' dtype."""
    import torch

    out = torch.zeros(T, rows.shape[1], dtype=torch.float32, device=rows.device)
    out.index_add_(0, r.tokens, rows.float() * r.weights.float()[:, None])
    return out.to(rows.dtype)


def layer_local(x, expert_ids, weights, w, grouped: Grouped | None = None):
    """The layer with all ``E`` experts (``w``: ``[E, K, N]``) here: ``[T, N]``."""
    r = route(expert_ids, weights, w.shape[0])
    rows = (grouped or _default_grouped())(x[r.tokens].contiguous(), w, offsets_of_counts(r.counts))
    return weighted_sum(rows, r, x.shape[0])


def layer_ep(x, expert_ids, weights, w_local, group=None, grouped: Grouped | None = None):
    """The layer with ``w_local`` (``[E_local, K, N]``) this rank's experts of ``E = E_local x world``: ``[T, N]``
    for this rank's tokens ``x`` (``[T, K]``), routed by ``expert_ids`` / ``weights`` (``[T, k]``, global ids)."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size(group)
    E_local = w_local.shape[0]
    r = route(expert_ids, weights, E_local * world)
    send_rows = x[r.tokens]  # sorted by global expert = by (destination rank, local expert)
    send_counts = r.counts.view(world, E_local)
    recv_counts = torch.empty_like(send_counts)  # [source rank, local expert]
    dist.all_to_all_single(recv_counts, send_counts, group=group)
    send_split = send_counts.sum(1).tolist()  # the host synchronisation NCCL's all-to-all-v needs
    recv_split = recv_counts.sum(1).tolist()
    received = x.new_empty(sum(recv_split), x.shape[1])
    dist.all_to_all_single(received, send_rows, recv_split, send_split, group=group)
    # received rows are source-major; the grouped GEMM wants them expert-major
    expert_of_row = torch.repeat_interleave(torch.arange(E_local, device=x.device).repeat(world),
                                            recv_counts.reshape(-1))
    by_expert = torch.argsort(expert_of_row, stable=True)
    rows = (grouped or _default_grouped())(received[by_expert].contiguous(), w_local,
                                           offsets_of_counts(recv_counts.sum(0)))
    back = torch.empty_like(rows)
    back[by_expert] = rows
    returned = rows.new_empty(send_rows.shape[0], rows.shape[1])
    dist.all_to_all_single(returned, back, send_split, recv_split, group=group)
    return weighted_sum(returned, r, x.shape[0])


def matmul_loop(x, w, offsets):
    """The grouped product as a loop of ``torch.matmul`` in fp32 (any device; rows past the last group zero)."""
    from tlx_kernels.moe.reference import reference

    return reference("fwd", x, w, offsets).to(x.dtype)


__all__ = ["Routed", "layer_ep", "layer_local", "matmul_loop", "offsets_of_counts", "route", "weighted_sum"]
