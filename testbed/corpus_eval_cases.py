"""Twenty ops of the corpus packages (Liger-Kernel, FlagGems, flash-linear-attention) judged against their PyTorch
reference by ``workbench.evaluate``: per op the packages' own entry points as candidates, a reference in plain
torch (fla-core: the package's own naive implementation) and an input maker. The packages are test data, installed
``--no-deps`` into ``.corpus/`` (``bench/corpus.py --install``); ``bench/corpus_evaluate.py`` puts them on the
path of the evaluation's workers.

Shapes are tuples whose first item is the dtype's name; each op has real sizes (the GPU) and one odd size. A
candidate is named ``<op>__<package>``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _gen(seed: int) -> torch.Generator:
    return torch.Generator(device="cpu").manual_seed(seed)


def _randn(shape: tuple, dtype: torch.dtype, g: torch.Generator, device: str, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(shape, generator=g) * scale).to(dtype).to(device)


def _gems():
    from flag_gems import ops

    return ops


# ---------------------------------------------------------------------------------------------------- rows
def rows_inputs(shape, seed, device):
    """x (M, N) with rows of their own means, a weight and a bias of N."""
    dt, m, n = shape
    g = _gen(seed)
    dtype = getattr(torch, dt)
    x = torch.randn((m, n), generator=g) * 2 + torch.randn((m, 1), generator=g)
    return (x.to(dtype).to(device), (1 + 0.1 * torch.randn((n,), generator=g)).to(dtype).to(device),
            (0.1 * torch.randn((n,), generator=g)).to(dtype).to(device))


def rms_norm_reference(x, w, b):
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w).to(x.dtype)


def rms_norm__liger(x, w, b):
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    return LigerRMSNormFunction.apply(x, w, 1e-6)


def rms_norm__flag_gems(x, w, b):
    return _gems().rms_norm(x, [x.shape[-1]], w, 1e-6)


def layer_norm_reference(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5).to(x.dtype)


def layer_norm__liger(x, w, b):
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction

    return LigerLayerNormFunction.apply(x, w, b, 1e-5)


def layer_norm__flag_gems(x, w, b):
    return _gems().layer_norm(x, [x.shape[-1]], w, b, 1e-5)[0]


def softmax_reference(x, w, b):
    return torch.softmax(x, dim=-1).to(x.dtype)


def softmax__liger(x, w, b):
    from liger_kernel.ops.softmax import LigerSoftmaxFunction

    return LigerSoftmaxFunction.apply(x)


def softmax__flag_gems(x, w, b):
    return _gems().softmax(x, -1)


def log_softmax_reference(x, w, b):
    return torch.log_softmax(x, dim=-1).to(x.dtype)


def log_softmax__flag_gems(x, w, b):
    return _gems().log_softmax(x, -1)


def sum_reference(x, w, b):
    return x.sum(-1)


def sum__flag_gems(x, w, b):
    return _gems().sum_dim(x, [1])


def mean_reference(x, w, b):
    return x.mean(-1)


def mean__flag_gems(x, w, b):
    return _gems().mean_dim(x, [1])


def cumsum_reference(x, w, b):
    return x.cumsum(1)


def cumsum__flag_gems(x, w, b):
    return _gems().cumsum(x, 1)


def var_mean_reference(x, w, b):
    return torch.var_mean(x, [1])


def var_mean__flag_gems(x, w, b):
    return _gems().var_mean(x, [1])


def sort_reference(x, w, b):
    return torch.sort(x, -1)[0]


def sort__flag_gems(x, w, b):
    return _gems().sort(x, -1)[0]


def argmax_reference(x, w, b):
    return x.argmax(1)


def argmax__flag_gems(x, w, b):
    return _gems().argmax(x, 1)


def exp_reference(x, w, b):
    return torch.exp(x * 0.1)


def exp__flag_gems(x, w, b):  # its block-pointer code does not compile with Triton 3.8 (a documented limitation)
    return _gems().exp(x * 0.1)


# ---------------------------------------------------------------------------------------------------- gated units
def gated_inputs(shape, seed, device):
    dt, m, n = shape
    g = _gen(seed)
    dtype = getattr(torch, dt)
    return _randn((m, n), dtype, g, device), _randn((m, n), dtype, g, device)


def swiglu_reference(a, b):
    return (F.silu(a) * b).to(a.dtype)


def swiglu__liger(a, b):
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    return LigerSiLUMulFunction.apply(a, b)


def geglu_reference(a, b):
    return (F.gelu(a, approximate="tanh") * b).to(a.dtype)


def geglu__liger(a, b):
    from liger_kernel.ops.geglu import LigerGELUMulFunction

    return LigerGELUMulFunction.apply(a, b)


# ---------------------------------------------------------------------------------------------------- losses
def logits_inputs(shape, seed, device):
    dt, m, v = shape
    g = _gen(seed)
    return _randn((m, v), getattr(torch, dt), g, device), torch.randint(0, v, (m,), generator=g).to(device)


def cross_entropy_reference(x, t):
    return F.cross_entropy(x.float(), t)


def cross_entropy__liger(x, t):
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction

    return LigerCrossEntropyFunction.apply(x, t, None)[0]


def cross_entropy__flag_gems(x, t):
    from flag_gems.fused import cross_entropy_loss  # a fused op: not in flag_gems.ops

    return cross_entropy_loss(x, t)


def kl_div_inputs(shape, seed, device):
    dt, m, v = shape
    g = _gen(seed)
    dtype = getattr(torch, dt)
    return (torch.randn((m, v), generator=g).log_softmax(-1).to(dtype).to(device),
            torch.randn((m, v), generator=g).softmax(-1).to(dtype).to(device))


def kl_div_reference(logq, p):
    return F.kl_div(logq.float(), p.float(), reduction="batchmean")


def kl_div__liger(logq, p):
    from liger_kernel.ops.kl_div import LigerKLDivLossFunction

    return LigerKLDivLossFunction.apply(logq, p, "batchmean")


# ---------------------------------------------------------------------------------------------------- GEMMs
def gemm_inputs(shape, seed, device):
    dt, m, n, k = shape
    g = _gen(seed)
    dtype = getattr(torch, dt)
    return _randn((m, k), dtype, g, device), _randn((k, n), dtype, g, device), _randn((n,), dtype, g, device)


def mm_reference(a, b, bias):
    return (a @ b).to(a.dtype)


def mm__flag_gems(a, b, bias):
    return _gems().mm(a, b)


def addmm_reference(a, b, bias):
    return (bias + a @ b).to(a.dtype)


def addmm__flag_gems(a, b, bias):
    return _gems().addmm(bias, a, b)


def bmm_inputs(shape, seed, device):
    dt, batch, m, n, k = shape
    g = _gen(seed)
    dtype = getattr(torch, dt)
    return _randn((batch, m, k), dtype, g, device), _randn((batch, k, n), dtype, g, device)


def bmm_reference(a, b):
    return torch.bmm(a, b).to(a.dtype)


def bmm__flag_gems(a, b):
    return _gems().bmm(a, b)


# ---------------------------------------------------------------------------------------------------- rotary
def rope_inputs(shape, seed, device):
    dt, b, hq, hk, s, d = shape
    g = _gen(seed)
    dtype = getattr(torch, dt)
    pos = torch.arange(s, dtype=torch.float32)[:, None] / (10000 ** (torch.arange(0, d, 2) / d))[None, :]
    emb = torch.cat([pos, pos], -1)
    return (_randn((b, hq, s, d), dtype, g, device), _randn((b, hk, s, d), dtype, g, device),
            emb.cos()[None].to(dtype).to(device), emb.sin()[None].to(dtype).to(device))


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_reference(q, k, cos, sin):
    c, s = cos[:, None], sin[:, None]
    return ((q * c + _rotate_half(q) * s).to(q.dtype), (k * c + _rotate_half(k) * s).to(k.dtype))


def rope__liger(q, k, cos, sin):
    from liger_kernel.ops.rope import LigerRopeFunction

    # its kernel rotates in place and returns the same tensors: copies keep the inputs unmodified
    return tuple(LigerRopeFunction.apply(q.clone(), k.clone(), cos, sin))


# ---------------------------------------------------------------------------------------------------- group norm
def group_norm_inputs(shape, seed, device):
    dt, b, c, hw, groups = shape
    g = _gen(seed)
    dtype = getattr(torch, dt)
    return (_randn((b, c, hw), dtype, g, device), (1 + 0.1 * torch.randn((c,), generator=g)).to(dtype).to(device),
            (0.1 * torch.randn((c,), generator=g)).to(dtype).to(device), groups)


def group_norm_reference(x, w, b, groups):
    return F.group_norm(x, groups, w, b, eps=1e-5).to(x.dtype)


def group_norm__liger(x, w, b, groups):
    from liger_kernel.ops.group_norm import LigerGroupNormFunction

    return LigerGroupNormFunction.apply(x, w, b, x.shape[1], groups, 1e-5)


# ---------------------------------------------------------------------------------------------------- linear attention
def gla_inputs(shape, seed, device):
    dt, b, t, h, d = shape
    g = _gen(seed)
    dtype = getattr(torch, dt)
    q, k, v = (_randn((b, t, h, d), dtype, g, device) for _ in range(3))
    gate = (-torch.rand((b, t, h), generator=g) * 0.1).float().to(device)  # log-space decay per head
    return q, k, v, gate


def simple_gla_reference(q, k, v, gate):
    from fla.ops.simple_gla.naive import naive_chunk_simple_gla

    return naive_chunk_simple_gla(q, k, v, gate)[0].to(q.dtype)


def simple_gla__fla_chunk(q, k, v, gate):
    from fla.ops.simple_gla import chunk_simple_gla

    return chunk_simple_gla(q, k, v, g=gate)[0]


def simple_gla__fla_fused_recurrent(q, k, v, gate):
    from fla.ops.simple_gla import fused_recurrent_simple_gla

    return fused_recurrent_simple_gla(q, k, v, g=gate)[0]


# ---------------------------------------------------------------------------------------------------- the ops
_ROWS = [("bfloat16", 4096, 4096), ("float16", 1000, 3000)]
_CPU_ROWS = [("float32", 8, 100)]
#: op -> (reference, input maker, CPU shapes (Triton's interpreter), GPU shapes)
OPS: dict[str, tuple[str, str, list, list]] = {
    "rms_norm": ("rms_norm_reference", "rows_inputs", _CPU_ROWS, _ROWS),
    "layer_norm": ("layer_norm_reference", "rows_inputs", _CPU_ROWS, _ROWS),
    "softmax": ("softmax_reference", "rows_inputs", _CPU_ROWS, _ROWS),
    "log_softmax": ("log_softmax_reference", "rows_inputs", _CPU_ROWS, _ROWS),
    "sum": ("sum_reference", "rows_inputs", _CPU_ROWS, _ROWS),
    "mean": ("mean_reference", "rows_inputs", _CPU_ROWS, _ROWS),
    "cumsum": ("cumsum_reference", "rows_inputs", _CPU_ROWS, [("float32", 4096, 4096), ("float32", 1000, 3000)]),
    "var_mean": ("var_mean_reference", "rows_inputs", _CPU_ROWS, [("float32", 4096, 4096), ("float32", 1000, 3000)]),
    "sort": ("sort_reference", "rows_inputs", _CPU_ROWS, [("float32", 1024, 4096), ("float32", 1000, 3000)]),
    "argmax": ("argmax_reference", "rows_inputs", _CPU_ROWS, [("float32", 4096, 4096), ("float32", 1000, 3000)]),
    "exp": ("exp_reference", "rows_inputs", _CPU_ROWS, _ROWS),
    "swiglu": ("swiglu_reference", "gated_inputs", [("float32", 8, 100)], [("bfloat16", 8192, 5632),
                                                                          ("float16", 1000, 3000)]),
    "geglu": ("geglu_reference", "gated_inputs", [("float32", 8, 100)], [("bfloat16", 8192, 5632),
                                                                        ("float16", 1000, 3000)]),
    "cross_entropy": ("cross_entropy_reference", "logits_inputs", [("float32", 8, 100)],
                      [("bfloat16", 4096, 32000), ("float32", 1000, 3001)]),
    "kl_div": ("kl_div_reference", "kl_div_inputs", [("float32", 8, 100)],
               [("float32", 4096, 4096), ("float32", 1000, 3001)]),
    "mm": ("mm_reference", "gemm_inputs", [("float16", 32, 48, 64)],
           [("float16", 4096, 4096, 4096), ("bfloat16", 1000, 1000, 999)]),
    "addmm": ("addmm_reference", "gemm_inputs", [("float16", 32, 48, 64)],
              [("float16", 4096, 4096, 4096), ("bfloat16", 1000, 1000, 999)]),
    "bmm": ("bmm_reference", "bmm_inputs", [("float16", 2, 32, 48, 64)],
            [("float16", 16, 1024, 1024, 1024), ("bfloat16", 3, 1000, 1000, 999)]),
    "rope": ("rope_reference", "rope_inputs", [("float32", 1, 2, 2, 16, 32)],
             [("bfloat16", 4, 32, 8, 4096, 128), ("float16", 1, 7, 7, 1000, 64)]),
    "group_norm": ("group_norm_reference", "group_norm_inputs", [("float32", 2, 8, 16, 4)],
                   [("bfloat16", 16, 512, 4096, 32), ("float32", 3, 96, 1000, 6)]),
    "simple_gla": ("simple_gla_reference", "gla_inputs", [],
                   [("bfloat16", 4, 4096, 16, 128), ("bfloat16", 1, 1000, 4, 64)]),
}


def candidates(op: str) -> list[str]:
    """The candidate names of an op, in this file's order."""
    return [n for n, v in globals().items() if n.startswith(f"{op}__") and callable(v)]
