"""The judge's test set: correct kernels that its defaults must pass and planted bugs they must fail, per op, each
op with its reference and input maker (``workbench.evaluate``'s three callables). Plain Triton, so that every
case also runs in Triton's CPU interpreter (small shapes, ``tests/evaluate/test_judge_cases.py``); on the H200
``bench/judge.py`` runs them at real sizes, with the library's TLX GEMM and attention among the correct ones.

Shapes are tuples whose first item is the dtype's name. Candidates are named ``<op>__<what>``; a name with
``__bug_`` is a planted bug (what it plants is its docstring), every other one is correct.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
import triton
import triton.language as tl


# ---------------------------------------------------------------------------------------------------- inputs
def _gen(seed: int) -> torch.Generator:
    return torch.Generator(device="cpu").manual_seed(seed)


def _randn(shape: tuple, dtype: torch.dtype, g: torch.Generator, device: str, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(shape, generator=g) * scale).to(dtype).to(device)


def gemm_inputs(shape, seed, device):
    dt, m, n, k = shape
    g = _gen(seed)
    dtype = getattr(torch, dt)
    return (_randn((m, k), dtype, g, device), _randn((k, n), dtype, g, device), _randn((n,), dtype, g, device))


def gemm_reference(a, b, bias):
    return (a @ b).to(a.dtype)


def gemm_gelu_reference(a, b, bias):
    return F.gelu((a @ b) + bias, approximate="tanh").to(a.dtype)


def fp8_inputs(shape, seed, device):
    _, m, n, k = shape
    g = _gen(seed)
    a = torch.randn((m, k), generator=g).to(torch.float8_e4m3fn).to(device)
    b = torch.randn((n, k), generator=g).to(torch.float8_e4m3fn).to(device).T  # column-major, as _scaled_mm wants
    sa = (torch.rand((), generator=g) + 0.5).to(device)
    sb = (torch.rand((), generator=g) + 0.5).to(device)
    return a, b, sa, sb


def fp8_reference(a, b, sa, sb):
    return ((a.float() @ b.float()) * sa * sb).to(torch.bfloat16)


def rows_inputs(shape, seed, device):
    dt, m, n = shape
    g = _gen(seed)
    dtype = getattr(torch, dt)
    x = torch.randn((m, n), generator=g) * 2 + torch.randn((m, 1), generator=g)  # rows with means of their own
    return (x.to(dtype).to(device), (1 + 0.1 * torch.randn((n,), generator=g)).to(dtype).to(device),
            (0.1 * torch.randn((n,), generator=g)).to(dtype).to(device))


def softmax_reference(x, w, b):
    return torch.softmax(x, dim=-1).to(x.dtype)


def layernorm_reference(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5).to(x.dtype)


def rmsnorm_reference(x, w, b):
    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w).to(x.dtype)


def rowsum_reference(x, w, b):
    return x.sum(-1, dtype=torch.float32) if x.dtype != torch.float32 else x.sum(-1)


def attention_inputs(shape, seed, device):
    dt, b, h, s, d, causal = shape
    g = _gen(seed)
    dtype = getattr(torch, dt)
    return tuple(_randn((b, h, s, d), dtype, g, device) for _ in range(3)) + (bool(causal),)


def attention_reference(q, k, v, causal):
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal).to(q.dtype)


# ---------------------------------------------------------------------------------------------------- GEMM
@triton.jit
def _gemm_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, EPILOGUE: tl.constexpr, BUG: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    if BUG == 2:  # one output tile is never computed
        if (pid_m == 1) & (pid_n == 0):
            return
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    steps = tl.cdiv(K, BK) - 1 if BUG == 1 else tl.cdiv(K, BK)  # BUG 1: the last K block is skipped
    for kk in range(0, steps):
        ks = kk * BK + rk
        a = tl.load(a_ptr + rm[:, None] * sam + ks[None, :] * sak, mask=(rm[:, None] < M) & (ks[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + ks[:, None] * sbk + rn[None, :] * sbn, mask=(ks[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        if BUG == 3:  # operands swapped (square tiles: it compiles and runs)
            acc = tl.dot(b, a, acc)
        else:
            acc = tl.dot(a, b, acc)
    if EPILOGUE == 1:  # + bias, GELU (tanh approximation), in fp32
        bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
        if BUG == 5:  # the bias added twice
            acc = acc + bias[None, :]
        x = acc + bias[None, :]
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        acc = 0.5 * x * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0))
    mm = (rm[:, None] < M - 1) if BUG == 4 else (rm[:, None] < M)  # BUG 4: the last row is masked off
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty), mask=mm & (rn[None, :] < N))


def _gemm(a, b, bias, epilogue=0, bug=0, bm=64, bn=64, bk=32, warps=4, stages=3):
    m, k = a.shape
    n = b.shape[1]
    if bug == 3:
        bn, bk = bm, bm
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    _gemm_kernel[grid](a, b, bias, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                       c.stride(1), BM=bm, BN=bn, BK=bk, EPILOGUE=epilogue, BUG=bug, num_warps=warps,
                       num_stages=stages)
    return c


def gemm__triton(a, b, bias):
    return _gemm(a, b, bias)


def gemm__triton_128x128(a, b, bias):
    return _gemm(a, b, bias, bm=128, bn=128, bk=64)


def gemm__bug_k_loop(a, b, bias):
    """the K loop stops one block early"""
    return _gemm(a, b, bias, bug=1)


def gemm__bug_skipped_tile(a, b, bias):
    """one output tile is never computed"""
    return _gemm(a, b, bias, bug=2)


def gemm__bug_swapped_operands(a, b, bias):
    """tl.dot(b, a) instead of tl.dot(a, b)"""
    return _gemm(a, b, bias, bug=3)


def gemm__bug_off_by_one_mask(a, b, bias):
    """the store mask drops the last row"""
    return _gemm(a, b, bias, bug=4)


def gemm_gelu__triton(a, b, bias):
    return _gemm(a, b, bias, epilogue=1)


def gemm_gelu__bug_bias_twice(a, b, bias):
    """the epilogue adds the bias twice"""
    return _gemm(a, b, bias, epilogue=1, bug=5)


@triton.jit
def _splitk_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT: tl.constexpr, ATOMIC: tl.constexpr):
    pid_m, pid_n, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(pid_k, tl.cdiv(K, BK), SPLIT):
        ks = kk * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * sam + ks[None, :] * sak, mask=(rm[:, None] < M) & (ks[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + ks[:, None] * sbk + rn[None, :] * sbn, mask=(ks[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
    ptrs = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if ATOMIC:
        tl.atomic_add(ptrs, acc, mask=mask)
    else:  # a read-modify-write that races with the other K splits of this tile
        tl.store(ptrs, tl.load(ptrs, mask=mask) + acc, mask=mask)


def _splitk(a, b, atomic):
    m, k = a.shape
    n = b.shape[1]
    c = torch.zeros((m, n), dtype=torch.float32, device=a.device)
    grid = (triton.cdiv(m, 64), triton.cdiv(n, 64), 4)
    _splitk_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                         c.stride(1), BM=64, BN=64, BK=32, SPLIT=4, ATOMIC=atomic)
    return c.to(a.dtype)


def gemm__triton_split_k(a, b, bias):
    return _splitk(a, b, True)


def gemm__bug_split_k_race(a, b, bias):
    """split-K partial sums added with a plain load + store (a race between the splits; Triton's interpreter runs
    programs one after another, so it shows on a GPU only)"""
    return _splitk(a, b, False)


# ---------------------------------------------------------------------------------------------------- fp8 GEMM
@triton.jit
def _fp8_kernel(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, BUG: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BK)):
        ks = kk * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * sam + ks[None, :] * sak, mask=(rm[:, None] < M) & (ks[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + ks[:, None] * sbk + rn[None, :] * sbn, mask=(ks[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
    sa = tl.load(sa_ptr)
    sb = tl.load(sa_ptr) if BUG == 1 else tl.load(sb_ptr)  # BUG 1: a's scale used for b
    acc = acc * sa * sb
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.bfloat16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _fp8(a, b, sa, sb, bug=0):
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    _fp8_kernel[(triton.cdiv(m, 128), triton.cdiv(n, 128))](
        a, b, c, sa, sb, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=128, BN=128, BK=64, BUG=bug)
    return c


def fp8_gemm__triton(a, b, sa, sb):
    return _fp8(a, b, sa, sb)


def fp8_gemm__bug_wrong_scale(a, b, sa, sb):
    """b is scaled by a's scale"""
    return _fp8(a, b, sa, sb, bug=1)


# ---------------------------------------------------------------------------------------------------- rows
@triton.jit
def _rows_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, sx, sy, BLOCK: tl.constexpr, OP: tl.constexpr, BUG: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    if OP == 0:  # softmax
        x = tl.load(x_ptr + row * sx + cols, mask=m, other=0.0 if BUG == 1 else -float("inf")).to(tl.float32)
        x = x - tl.max(x, 0)
        e = tl.exp(x)
        tl.store(y_ptr + row * sy + cols, (e / tl.sum(e, 0)).to(y_ptr.dtype.element_ty), mask=m)
    elif OP == 1:  # layernorm
        x = tl.load(x_ptr + row * sx + cols, mask=m, other=0.0).to(tl.float32)
        mean = tl.sum(x, 0) / N
        d = tl.where(m, x - mean, 0.0)
        var = tl.sum(x * x, 0) / N if BUG == 1 else tl.sum(d * d, 0) / N  # BUG 1: E[x^2], the mean not removed
        w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * sy + cols, (d * tl.rsqrt(var + 1e-5) * w + b).to(y_ptr.dtype.element_ty), mask=m)
    elif OP == 2:  # rmsnorm
        x = tl.load(x_ptr + row * sx + cols, mask=m, other=0.0).to(tl.float32)
        ms = tl.sum(x * x, 0) / (BLOCK if BUG == 1 else N)  # BUG 1: the mean over the padded block
        w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * sy + cols, (x * tl.rsqrt(ms + 1e-6) * w).to(y_ptr.dtype.element_ty), mask=m)
    else:  # row sum, fp32 accumulation, block by block (BUG 1: the last partial block is dropped)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        stop = N - BLOCK + 1 if BUG == 1 else N
        for start in range(0, stop, BLOCK):
            c = start + cols
            acc += tl.load(x_ptr + row * sx + c, mask=c < N, other=0.0).to(tl.float32)
        tl.store(y_ptr + row, tl.sum(acc, 0))


def _rows(x, w, b, op, bug=0):
    m, n = x.shape
    if op == 3:
        y = torch.empty((m,), dtype=torch.float32, device=x.device)
        block = 1024
    else:
        y = torch.empty_like(x)
        block = triton.next_power_of_2(n)
    _rows_kernel[(m,)](x, w, b, y, n, x.stride(0), y.stride(0) if y.dim() > 1 else 1, BLOCK=block, OP=op, BUG=bug)
    return y


def softmax__triton(x, w, b):
    return _rows(x, w, b, 0)


def softmax__bug_padding(x, w, b):
    """padded columns load 0 instead of -inf: exp(0) joins the denominator"""
    return _rows(x, w, b, 0, bug=1)


def layernorm__triton(x, w, b):
    return _rows(x, w, b, 1)


def layernorm__bug_variance(x, w, b):
    """variance as E[x^2]: the mean is not removed"""
    return _rows(x, w, b, 1, bug=1)


def rmsnorm__triton(x, w, b):
    return _rows(x, w, b, 2)


def rmsnorm__bug_block_mean(x, w, b):
    """the mean of squares divides by the padded block size, not the row length"""
    return _rows(x, w, b, 2, bug=1)


def rowsum__triton(x, w, b):
    return _rows(x, w, b, 3)


def rowsum__bug_tail(x, w, b):
    """the loop over the row stops before its last partial block"""
    return _rows(x, w, b, 3, bug=1)


# ---------------------------------------------------------------------------------------------------- attention
@triton.jit
def _attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, H, scale, sqb, sqh, sqs, BM: tl.constexpr, BN: tl.constexpr,
                 D: tl.constexpr, CAUSAL: tl.constexpr, BUG: tl.constexpr):
    pid_m, bh = tl.program_id(0), tl.program_id(1)
    off = (bh // H) * sqb + (bh % H) * sqh
    rm = pid_m * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + off + rm[:, None] * sqs + rd[None, :], mask=rm[:, None] < S, other=0.0)
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    qk_scale = 1.4426950408889634 if BUG == 1 else scale * 1.4426950408889634  # BUG 1: no 1/sqrt(d) scale
    end = tl.minimum(S, (pid_m + 1) * BM) if CAUSAL else S
    for start in range(0, end, BN):
        rn = start + tl.arange(0, BN)
        k = tl.load(k_ptr + off + rn[:, None] * sqs + rd[None, :], mask=rn[:, None] < S, other=0.0)
        v = tl.load(v_ptr + off + rn[:, None] * sqs + rd[None, :], mask=rn[:, None] < S, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        valid = rn[None, :] < S
        if CAUSAL:
            if BUG == 3:  # the diagonal is masked off too
                valid = valid & (rn[None, :] < rm[:, None])
            else:
                valid = valid & (rn[None, :] <= rm[:, None])
        s = tl.where(valid, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        if BUG == 2:  # the running output is not rescaled when the max moves
            acc = acc + tl.dot(p.to(v.dtype), v)
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / tl.where(l_i == 0, 1.0, l_i)[:, None]
    tl.store(o_ptr + off + rm[:, None] * sqs + rd[None, :], out.to(o_ptr.dtype.element_ty), mask=rm[:, None] < S)


def _attention(q, k, v, causal, bug=0):
    b, h, s, d = q.shape
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    o = torch.empty_like(q)
    _attn_kernel[(triton.cdiv(s, 64), b * h)](q, k, v, o, s, h, 1.0 / math.sqrt(d), q.stride(0), q.stride(1),
                                             q.stride(2), BM=64, BN=64, D=d, CAUSAL=bool(causal), BUG=bug)
    return o


def attention__triton(q, k, v, causal):
    return _attention(q, k, v, causal)


def attention__bug_no_scale(q, k, v, causal):
    """softmax(QK^T) without the 1/sqrt(d) scale"""
    return _attention(q, k, v, causal, bug=1)


def attention__bug_no_rescale(q, k, v, causal):
    """the running output is not rescaled when the row maximum grows"""
    return _attention(q, k, v, causal, bug=2)


def attention__bug_causal_diagonal(q, k, v, causal):
    """the causal mask drops the diagonal (a token does not see itself)"""
    return _attention(q, k, v, causal, bug=3)


# ---------------------------------------------------------------------------------------------------- the library
def gemm__tlx_library(a, b, bias):
    """tlx_kernels.matmul: Meta-style warp-specialized TLX GEMM (H100/H200 only)"""
    from tlx_kernels.gemm import ws_cooperative

    return ws_cooperative.matmul(a, b)


def attention__tlx_library(q, k, v, causal):
    """tlx_kernels.attention: the library's TLX flash attention (H100/H200 only)"""
    from tlx_kernels.attention import attention

    return attention(q, k, v, causal=causal)


# ---------------------------------------------------------------------------------------------------- the ops
# op -> (reference, inputs, CPU shapes for the interpreter, H200 shapes)
OPS = {
    "gemm": ("gemm_reference", "gemm_inputs", [("float16", 96, 80, 160), ("bfloat16", 70, 64, 100)],
             [("float16", 4096, 4096, 1024), ("float16", 2048, 2048, 16384), ("bfloat16", 4096, 4096, 4096),
              ("bfloat16", 1000, 1000, 999)]),
    "gemm_gelu": ("gemm_gelu_reference", "gemm_inputs", [("float16", 96, 80, 160)],
                  [("float16", 4096, 4096, 4096), ("bfloat16", 2048, 2048, 8192)]),
    "fp8_gemm": ("fp8_reference", "fp8_inputs", [],
                 [("float8_e4m3fn", 4096, 4096, 4096), ("float8_e4m3fn", 2048, 2048, 16384)]),
    "softmax": ("softmax_reference", "rows_inputs", [("float16", 8, 300)],
                [("float16", 4096, 8192), ("bfloat16", 1000, 3000)]),
    "layernorm": ("layernorm_reference", "rows_inputs", [("bfloat16", 8, 300)],
                  [("bfloat16", 4096, 8192), ("float16", 1000, 3000)]),
    "rmsnorm": ("rmsnorm_reference", "rows_inputs", [("float16", 8, 300)],
                [("float16", 4096, 8192), ("bfloat16", 1000, 3000)]),
    "rowsum": ("rowsum_reference", "rows_inputs", [("float16", 4, 3000)],
               [("float16", 2048, 16384), ("bfloat16", 1000, 30000)]),
    "attention": ("attention_reference", "attention_inputs",
                  [("bfloat16", 1, 2, 80, 64, 0), ("float16", 1, 1, 80, 64, 1)],
                  [("bfloat16", 4, 16, 2048, 128, 0), ("bfloat16", 2, 16, 4096, 128, 1),
                   ("float16", 1, 8, 1000, 64, 1)]),
}

GPU_ONLY = {"gemm__bug_split_k_race", "gemm__tlx_library", "attention__tlx_library", "fp8_gemm__triton",
            "fp8_gemm__bug_wrong_scale"}


def candidates(op: str) -> list[str]:
    """The candidate names of an op, in this file's order."""
    return [n for n, v in globals().items() if n.startswith(f"{op}__") and callable(v)]


def is_bug(name: str) -> bool:
    return "__bug_" in name


# ---------------------------------------------------------------------------------------------------- 32 configs
def _config_candidate(bm: int, bn: int, bk: int, warps: int, stages: int):
    def cand(a, b, bias):
        return _gemm(a, b, bias, epilogue=1, bm=bm, bn=bn, bk=bk, warps=warps, stages=stages)

    cand.__name__ = cand.__qualname__ = f"gemm_gelu_cfg_{bm}x{bn}x{bk}_w{warps}_s{stages}"
    return cand


CONFIGS = [(bm, bn, bk, w, s) for bm, bn in ((64, 64), (64, 128), (128, 64), (128, 128)) for bk in (32, 64)
           for w, s in ((4, 3), (4, 4), (8, 3), (8, 4))]  # 32 configs: the evaluation benchmark's candidates
CONFIG_NAMES = []
for _cfg in CONFIGS:
    _c = _config_candidate(*_cfg)
    globals()[_c.__name__] = _c
    CONFIG_NAMES.append(_c.__name__)
