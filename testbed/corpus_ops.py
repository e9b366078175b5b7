"""The corpus of ``bench/corpus.py``: ops of packages nobody here wrote, each a call of the package's own entry point.

Packages (installed ``--no-deps`` into ``.corpus/<name>/`` by ``install()``, never into the venv; their code is
never copied into the repository):

- ``liger-kernel`` (Liger-Kernel): its ``torch.autograd.Function``s, forward and backward (``*.apply`` then
  ``backward``), on LLaMA-like shapes (2 x 512 tokens, hidden 2048, vocab 32000);
- ``flag-gems`` (FlagGems): its ``flag_gems.ops`` functions (aten-like signatures) on a 1024 x 1024 tensor and
  the arguments each needs; without a GPU it needs the stand-ins of ``_gems_standins`` (it asks torch.cuda for a
  device name and enters ``torch.cuda.device(x.device)`` around each launch);
- ``fla-core`` (flash-linear-attention): its ``fla.ops`` chunked and recurrent linear attentions on
  (B, T, H, D) = (1, 512, 4, 64) bf16, forward and backward;
- ``meta-tlx``: Meta's TLX tutorials from the triton-utlx wheel (``tlx_kernels.meta_tutorials``), each main
  kernel launched with one of its own autotune configs (Hopper files for sm_90, Blackwell ones for sm_100a), and
  ``vector-add2``'s own host functions on CPU tensors.

``ops(package)`` lists a package's :class:`workbench.report.corpus.Op`s; ``SAMPLE`` is the fixed CI sample.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from workbench.report.corpus import Op

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("WB_CORPUS_DIR", ROOT / ".corpus"))
#: PyPI name -> (pinned version, the import name)
PACKAGES: dict[str, tuple[str, str]] = {
    "liger-kernel": ("0.8.5", "liger_kernel"),
    "flag-gems": ("5.0.2", "flag_gems"),
    "fla-core": ("0.6.0", "fla"),
}
#: pure-Python dependencies the packages import that the workbench's venv lacks (installed beside them, --no-deps)
DEPS = ["einops==0.8.1", "sqlalchemy==2.0.48"]


def folders(root: Path = CORPUS) -> list[Path]:
    return [root / p for p in PACKAGES] + [root / "deps"]


def installed(root: Path = CORPUS) -> dict[str, bool]:
    return {p: (root / p / imp).is_dir() for p, (_, imp) in PACKAGES.items()} | {
        "deps": (root / "deps" / "einops").is_dir() and (root / "deps" / "sqlalchemy").is_dir()}


def install(root: Path = CORPUS, timeout: float = 600) -> dict[str, str | None]:
    """``pip install --no-deps --target <root>/<package>`` of each pinned package (and the deps); {name: error}."""
    errors: dict[str, str | None] = {}
    todo = [(p, [f"{p}=={v}"]) for p, (v, _) in PACKAGES.items()] + [("deps", DEPS)]
    have = installed(root)
    for name, reqs in todo:
        if have.get(name):
            errors[name] = None
            continue
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile",
                               "--target", str(root / name), *reqs], capture_output=True, text=True, timeout=timeout)
        errors[name] = None if proc.returncode == 0 else (proc.stderr or proc.stdout)[-800:]
    return errors


def versions(root: Path = CORPUS) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for p, (_, imp) in PACKAGES.items():
        info = sorted((root / p).glob(f"{imp}-*.dist-info")) or sorted((root / p).glob("*.dist-info"))
        out[p] = info[0].name.split("-")[1].removesuffix(".dist") if info else None
    return out


@contextlib.contextmanager
def on_path(root: Path = CORPUS) -> Iterator[None]:
    """The corpus folders first on ``sys.path`` (and the environment FlagGems reads at import)."""
    from workbench.report.corpus import corpus_path

    os.environ.setdefault("GEMS_VENDOR", "nvidia")  # FlagGems finds no GPU vendor on a CPU otherwise
    os.environ.setdefault("FLAGGEMS_DB_URL", f"sqlite:///{root / 'flaggems-tuning.db'}")
    with corpus_path(folders(root)):
        yield


def reproducer_env(root: Path = CORPUS) -> dict[str, str]:
    """The environment a reproducer runs in: the corpus packages importable (they are installed libraries)."""
    return {"PYTHONPATH": os.pathsep.join(str(f) for f in folders(root)), "GEMS_VENDOR": "nvidia",
            "FLAGGEMS_DB_URL": f"sqlite:///{root / 'flaggems-tuning.db'}"}


def _grad(out: Any) -> None:
    """Backward through ``out`` (a tensor or the first tensor of a tuple) with a gradient of ones."""
    t = out[0] if isinstance(out, (tuple, list)) else out
    if isinstance(t, torch.Tensor) and t.requires_grad:
        t.backward(torch.ones_like(t))


def _fb(fn: Callable[[], Any]) -> Callable[[], None]:
    def call() -> None:
        _grad(fn())

    return call


# ------------------------------------------------------------------------------------------ Liger-Kernel
BT, H, V = 1024, 2048, 32000


def _r(*shape: int, dtype: torch.dtype = torch.float32, grad: bool = True) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype).requires_grad_(grad)


def liger_ops() -> list[Op]:
    from liger_kernel.ops import (
        cross_entropy,
        dyt,
        fused_add_rms_norm,
        fused_linear_cross_entropy,
        fused_linear_jsd,
        geglu,
        group_norm,
        jsd,
        kl_div,
        layer_norm,
        llama4_rope,
        poly_norm,
        qwen2vl_mrope,
        relu_squared,
        rms_norm,
        rope,
        softmax,
        sparsemax,
        swiglu,
        tvd,
    )

    bf = torch.bfloat16

    def rope_call() -> Any:
        q, k = _r(2, 16, 512, 128), _r(2, 8, 512, 128)
        cos, sin = torch.randn(1, 512, 128), torch.randn(1, 512, 128)
        out = rope.LigerRopeFunction.apply(q, k, cos, sin)
        return out[0]

    def mrope_call() -> Any:
        q, k = _r(2, 16, 512, 128), _r(2, 8, 512, 128)
        cos, sin = torch.randn(3, 2, 512, 128), torch.randn(3, 2, 512, 128)
        return qwen2vl_mrope.LigerQwen2VLMRopeFunction.apply(q, k, cos, sin, [16, 24, 24])[0]

    def llama4_rope_call() -> Any:
        q, k = _r(2, 512, 16, 128), _r(2, 512, 8, 128)
        freqs = torch.randn(512, 64, dtype=torch.complex64)
        return llama4_rope.LigerLlama4RopeFunction.apply(q, k, freqs)[0]

    def ce() -> Any:
        x, t = _r(BT, V), torch.randint(0, V, (BT,))
        return cross_entropy.LigerCrossEntropyFunction.apply(x, t, None)[0]

    def flce() -> Any:
        x, w, t = _r(BT, H, dtype=bf), _r(V, H, dtype=bf), torch.randint(0, V, (BT,))
        return fused_linear_cross_entropy.LigerFusedLinearCrossEntropyFunction.apply(x, w, t)[0]

    def fljsd() -> Any:
        sx, sw = _r(BT, H, dtype=bf), _r(V, H, dtype=bf)
        tx, tw = _r(BT, H, dtype=bf, grad=False), _r(V, H, dtype=bf, grad=False)
        return fused_linear_jsd.LigerFusedLinearJSDFunction.apply(sx, sw, tx, tw)

    return [
        Op("liger-kernel", "rms_norm", _fb(lambda: rms_norm.LigerRMSNormFunction.apply(_r(2, 512, H), _r(H), 1e-6))),
        Op("liger-kernel", "rms_norm_gemma", _fb(lambda: rms_norm.LigerRMSNormFunction.apply(
            _r(2, 512, H, dtype=bf), _r(H, dtype=bf), 1e-6, 1.0, "gemma"))),
        Op("liger-kernel", "fused_add_rms_norm", _fb(lambda: fused_add_rms_norm.LigerFusedAddRMSNormFunction.apply(
            _r(2, 512, H), _r(2, 512, H), _r(H), 1e-6))),
        Op("liger-kernel", "layer_norm", _fb(lambda: layer_norm.LigerLayerNormFunction.apply(
            _r(2, 512, H), _r(H), _r(H), 1e-5))),
        Op("liger-kernel", "group_norm", _fb(lambda: group_norm.LigerGroupNormFunction.apply(
            _r(8, 64, 1024), _r(64), _r(64), 64, 8, 1e-5))),
        Op("liger-kernel", "poly_norm", _fb(lambda: poly_norm.LigerPolyNormFunction.apply(
            _r(2, 512, H), _r(3), _r(1), 1e-6))),
        Op("liger-kernel", "dyt", _fb(lambda: dyt.LigerDyTFunction.apply(_r(2, 512, H), _r(1), _r(H), _r(H)))),
        Op("liger-kernel", "swiglu", _fb(lambda: swiglu.LigerSiLUMulFunction.apply(
            _r(2, 512, 5632), _r(2, 512, 5632)))),
        Op("liger-kernel", "geglu", _fb(lambda: geglu.LigerGELUMulFunction.apply(_r(2, 512, 5632), _r(2, 512, 5632)))),
        Op("liger-kernel", "relu_squared", _fb(lambda: relu_squared.LigerReLUSquaredFunction.apply(_r(2, 512, H)))),
        Op("liger-kernel", "rope", _fb(rope_call)),
        Op("liger-kernel", "qwen2vl_mrope", _fb(mrope_call)),
        Op("liger-kernel", "llama4_rope", _fb(llama4_rope_call)),
        Op("liger-kernel", "softmax", _fb(lambda: softmax.LigerSoftmaxFunction.apply(_r(BT, 4096)))),
        Op("liger-kernel", "sparsemax", _fb(lambda: sparsemax.LigerSparsemaxFunction.apply(_r(BT, 1024), -1))),
        Op("liger-kernel", "kl_div", _fb(lambda: kl_div.LigerKLDivLossFunction.apply(
            _r(BT, 4096).log_softmax(-1), torch.randn(BT, 4096).softmax(-1)))),
        Op("liger-kernel", "jsd", _fb(lambda: jsd.LigerJSDFunction.apply(
            _r(BT, 4096).log_softmax(-1), torch.randn(BT, 4096).log_softmax(-1)))),
        Op("liger-kernel", "tvd", _fb(lambda: tvd.LigerTVDLossFunction.apply(
            _r(BT, 4096).softmax(-1), torch.randn(BT, 4096).softmax(-1)))),
        Op("liger-kernel", "cross_entropy", _fb(ce)),
        Op("liger-kernel", "fused_linear_cross_entropy", _fb(flce)),
        Op("liger-kernel", "fused_linear_jsd", _fb(fljsd)),
    ]


# ------------------------------------------------------------------------------------------ FlagGems
@contextlib.contextmanager
def _gems_standins() -> Iterator[None]:
    """FlagGems without a GPU: ``torch.cuda.device(...)`` (entered around each launch) does nothing, and a device
    name is there for its tuning cache."""

    class _NoDevice:
        def __init__(self, device: Any = None) -> None:
            self.idx = device

        def __enter__(self) -> None:
            return None

        def __exit__(self, *exc: Any) -> None:
            return None

    saved = torch.cuda.device, torch.cuda.get_device_name, torch.cuda.current_device, torch.cuda.device_count
    torch.cuda.device = _NoDevice  # type: ignore[misc]
    torch.cuda.get_device_name = lambda device=None: "NVIDIA H100 (stand-in, no GPU)"
    torch.cuda.current_device = lambda: 0
    torch.cuda.device_count = lambda: 1  # LibEntry keeps one cache of compiled kernels per device
    try:
        yield
    finally:
        torch.cuda.device, torch.cuda.get_device_name, torch.cuda.current_device, torch.cuda.device_count = saved


_LIBENTRY_RUN: list[Any] = []


def _gems_fresh_entries() -> None:
    """FlagGems' ``LibEntry`` launches the CompiledKernel it cached at its first call directly afterwards, past
    ``JITFunction.run`` (where the workbench's capture sees launches): here every call starts with an empty cache,
    so each op's launches go through the capture."""
    if _LIBENTRY_RUN:
        return
    from flag_gems.utils.libentry import LibEntry

    original = LibEntry.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        for cache in self.kernel_cache:
            cache.clear()
        return original(self, *args, **kwargs)

    LibEntry.run = run
    _LIBENTRY_RUN.append(original)


def _gems(fn: Callable[[], Any]) -> Callable[[], None]:
    def call() -> None:
        with _gems_standins(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()

    return call


_UNARY = ("abs exp exp2 expm1 sin cos tan tanh sigmoid relu relu6 gelu silu sqrt rsqrt log log10 log1p_ neg "
          "reciprocal erf ceil floor_ round sign sgn_ atan acos asinh_ arcsinh cosh sinh_ elu celu selu hardsigmoid "
          "hardswish_ softplus softshrink log_sigmoid logit isnan isinf isfinite isneginf signbit "
          "logical_not square angle i0 special_i0e special_i1 digamma_ nan_to_num conj_physical clone contiguous "
          "zeros_like ones_like rand_like randn_like").split()
_BINARY = ("add sub mul true_divide maximum minimum fmin eq ne lt le gt ge atan2 hypot pow_tensor_tensor "
           "logical_and logical_or logical_xor logaddexp copysign remainder floor_divide lerp_scalar").split()
_REDUCE_DIM = ("softmax log_softmax cumsum cummax cummin argmax argmin").split()


def gems_ops() -> list[Op]:
    with _gems_standins(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import flag_gems
        from flag_gems import ops as g
    _gems_fresh_entries()

    n = 1024
    x, y = torch.randn(n, n), torch.randn(n, n)
    xi, yi = torch.randint(0, 100, (n, n), dtype=torch.int32), torch.randint(1, 100, (n, n), dtype=torch.int32)
    xb = torch.rand(n, n) > 0.5
    h = torch.float16
    specials: dict[str, Callable[[], Any]] = {
        "sum": lambda: g.sum(x), "sum_dim": lambda: g.sum_dim(x, [1]), "mean": lambda: g.mean(x),
        "mean_dim": lambda: g.mean_dim(x, [1]), "amax": lambda: g.amax(x, [1]), "max": lambda: g.max(x),
        "max_dim": lambda: g.max_dim(x, 1), "min": lambda: g.min(x), "min_dim": lambda: g.min_dim(x, 1),
        "prod": lambda: g.prod(x), "prod_dim": lambda: g.prod_dim(x, 1), "all": lambda: g.all(xb),
        "any": lambda: g.any(xb), "var_mean": lambda: g.var_mean(x, [1]), "std": lambda: g.std(x, [1]),
        "vector_norm": lambda: g.vector_norm(x, 2, [1]), "count_nonzero": lambda: g.count_nonzero(x),
        "aminmax": lambda: g.aminmax(x, dim=1),
        "mm": lambda: g.mm(x.to(h), y.to(h)), "bmm": lambda: g.bmm(torch.randn(8, 512, 512, dtype=h),
                                                               torch.randn(8, 512, 512, dtype=h)),
        "addmm": lambda: g.addmm(torch.randn(n, dtype=h), x.to(h), y.to(h)), "mv": lambda: g.mv(x, torch.randn(n)),
        "dot": lambda: g.dot(torch.randn(n * n), torch.randn(n * n)), "outer": lambda: g.outer(torch.randn(n),
                                                                                                torch.randn(n)),
        "layer_norm": lambda: g.layer_norm(x, [n], torch.ones(n), torch.zeros(n), 1e-5),
        "rms_norm": lambda: g.rms_norm(x, [n], torch.ones(n), 1e-6),
        "group_norm": lambda: g.group_norm(torch.randn(8, 64, 32, 32), torch.ones(64), torch.zeros(64), 8, 64,
                                           1024, 8, 1e-5),
        "batch_norm": lambda: g.batch_norm(torch.randn(8, 64, 32, 32), torch.ones(64), torch.zeros(64),
                                           torch.zeros(64), torch.ones(64), True, 0.1, 1e-5),
        "clamp": lambda: g.clamp(x, -1.0, 1.0), "threshold": lambda: g.threshold(x, 0.0, 0.0),
        "dropout": lambda: g.dropout(x, 0.1, True), "masked_fill": lambda: g.masked_fill(x, xb, 0.0),
        "where_self": lambda: g.where_self(xb, x, y), "embedding": lambda: g.embedding(
            torch.randn(32000, 1024), torch.randint(0, 32000, (2, 512))),
        "gather": lambda: g.gather(x, 1, torch.randint(0, n, (n, 16))), "index_select": lambda: g.index_select(
            x, 0, torch.randint(0, n, (256,))), "cat": lambda: g.cat([x, y], 0), "stack": lambda: g.stack([x, y]),
        "flip": lambda: g.flip(x, [1]), "tril": lambda: g.tril(x), "triu": lambda: g.triu(x),
        "repeat": lambda: g.repeat(x, [2, 1]), "tile": lambda: g.tile(x, [2, 1]),
        "topk": lambda: g.topk(x, 8, -1), "sort": lambda: g.sort(x, -1), "mse_loss": lambda: g.mse_loss(x, y),
        "glu": lambda: g.glu(x, -1), "pow_scalar": lambda: g.pow_scalar(2.0, x),
        "pow_tensor_scalar": lambda: g.pow_tensor_scalar(x, 2.0), "bitwise_and_tensor": lambda: g.bitwise_and_tensor(
            xi, yi), "bitwise_or_tensor": lambda: g.bitwise_or_tensor(xi, yi), "fill_scalar": lambda: g.fill_scalar(
            x, 1.0), "zeros": lambda: g.zeros((n, n), dtype=torch.float32, device="cpu"),
        "ones": lambda: g.ones((n, n), dtype=torch.float32, device="cpu"),
        "full": lambda: g.full((n, n), 2.0, dtype=torch.float32, device="cpu"),
        "arange": lambda: g.arange(n * n, dtype=torch.float32, device="cpu"),
        "eye": lambda: g.eye(n, dtype=torch.float32, device="cpu"),
        "linspace": lambda: g.linspace(0.0, 1.0, n * n, dtype=torch.float32, device="cpu"),
        "isclose": lambda: g.isclose(x, y), "allclose": lambda: g.allclose(x, y),
        "scaled_dot_product_attention": lambda: g.scaled_dot_product_attention(
            *(torch.randn(1, 8, 512, 64, dtype=h) for _ in range(3))),
        "cross_entropy_loss": lambda: g.cross_entropy_loss(x, torch.randint(0, n, (n,))),
        "nll_loss_forward": lambda: g.nll_loss_forward(x.log_softmax(-1), torch.randint(0, n, (n,)), None, 1, -100),
        "weight_norm_interface": lambda: g.weight_norm_interface(x, torch.ones(n, 1), 0),
        "kron": lambda: g.kron(torch.randn(32, 32), torch.randn(32, 32)),
        "conv2d": lambda: g.conv2d(torch.randn(2, 64, 56, 56, dtype=h), torch.randn(64, 64, 3, 3, dtype=h), None,
                                   1, 1, 1, 1),
        "upsample_nearest2d": lambda: g.upsample_nearest2d(torch.randn(2, 64, 56, 56), [112, 112]),
        "constant_pad_nd": lambda: g.constant_pad_nd(x, [1, 1, 1, 1], 0.0),
        "diag": lambda: g.diag(x), "trace": lambda: g.trace(x), "one_hot": lambda: g.one_hot(
            torch.randint(0, 16, (n,)), 16),
        "index_add": lambda: g.index_add(x, 0, torch.randint(0, n, (64,)), torch.randn(64, n)),
        "scatter": lambda: g.scatter(x, 1, torch.randint(0, n, (n, 16)), torch.randn(n, 16)),
        "masked_select": lambda: g.masked_select(x, xb), "nonzero": lambda: g.nonzero(xb),
        "unique_consecutive": lambda: g.unique_consecutive(torch.sort(torch.randint(0, 64, (4096,)))[0]),
        "bitwise_not": lambda: g.bitwise_not(xi),
        "bitwise_left_shift": lambda: g.bitwise_left_shift(xi, torch.full_like(xi, 2)),
        "polar": lambda: g.polar(x.abs(), y), "vdot": lambda: g.vdot(torch.randn(n), torch.randn(n)),
        "addcmul": lambda: g.addcmul(x, y, x, value=0.5), "addcdiv": lambda: g.addcdiv(x, y, y.abs() + 1, value=0.5),
        "lerp_tensor": lambda: g.lerp_tensor(x, y, torch.rand(n, n)),
        "margin_ranking_loss": lambda: g.margin_ranking_loss(torch.randn(n), torch.randn(n), torch.sign(
            torch.randn(n))),
        "log_softmax": lambda: g.log_softmax(x, -1), "softmax": lambda: g.softmax(x, -1),
        "cumsum": lambda: g.cumsum(x, 1), "cummax": lambda: g.cummax(x, 1), "cummin": lambda: g.cummin(x, 1),
        "argmax": lambda: g.argmax(x, 1), "argmin": lambda: g.argmin(x, 1),
        "silu_backward": lambda: g.silu_backward(x, y), "gelu_backward": lambda: g.gelu_backward(x, y),
        "sigmoid_backward": lambda: g.sigmoid_backward(x, y), "tanh_backward": lambda: g.tanh_backward(x, y),
        "softmax_backward": lambda: g.softmax_backward(x, y, -1, torch.float32),
        "layer_norm_backward": lambda: g.layer_norm_backward(x, y, [n], torch.zeros(n), torch.ones(n),
                                                             torch.ones(n), torch.zeros(n), [True, True, True]),
        "embedding_backward": lambda: g.embedding_backward(torch.randn(1024, 256), torch.randint(0, 4096, (1024,)),
                                                           4096, -1, False, False),
        "rand": lambda: g.rand((n, n), dtype=torch.float32, device="cpu"),
        "randn": lambda: g.randn((n, n), dtype=torch.float32, device="cpu"),
        "uniform_": lambda: g.uniform_(torch.empty(n, n)), "normal_": lambda: g.normal_(torch.empty(n, n)),
        "exponential_": lambda: g.exponential_(torch.empty(n, n)),
        "multinomial": lambda: g.multinomial(torch.rand(64, 1000), 8, True),
        "quantile": lambda: g.quantile(torch.randn(4096), torch.tensor([0.25, 0.5])),
        "avg_pool2d": lambda: g.avg_pool2d(torch.randn(2, 64, 56, 56), [2, 2]),
        "max_pool2d_with_indices": lambda: g.max_pool2d_with_indices(torch.randn(2, 64, 56, 56), [2, 2]),
        "per_token_group_quant_fp8": lambda: g.per_token_group_quant_fp8(torch.randn(256, 2048, dtype=torch.bfloat16),
                                                                         128),
    }
    out = []
    for name in _UNARY:
        if hasattr(g, name):
            out.append(Op("flag-gems", name, _gems(lambda f=getattr(g, name): f(x))))
    for name in _BINARY:
        if hasattr(g, name) and name not in specials:
            f = getattr(g, name)
            args = (x, y, 0.5) if name == "lerp_scalar" else (x, y)
            out.append(Op("flag-gems", name, _gems(lambda f=f, a=args: f(*a))))
    for name, fn in specials.items():
        if hasattr(g, name):
            out.append(Op("flag-gems", name, _gems(fn)))
    del flag_gems
    return out


# ------------------------------------------------------------------------------------------ flash-linear-attention
_FLA_B, _FLA_T, _FLA_H, _FLA_D = 1, 512, 4, 64
_FLA_SKIP = {"chunk_abc", "chunk_gsa", "fused_recurrent_gsa", "parallel_nsa", "parallel_wall_attn_decode",
             "fused_attnres"}  # arguments not of the (B, T, H, D) family: not in this corpus


def _fla_value(name: str, fn_name: str) -> Any:
    """An argument by its name: (B, T, H, D) for q/k/v-like tensors, (B, T, H) for gates and betas."""
    B, T, H, D = _FLA_B, _FLA_T, _FLA_H, _FLA_D
    bf = torch.bfloat16
    full = {"q", "k", "v", "r", "p", "w", "a", "b", "gk", "gv", "x", "query"}
    if name in full:
        t = torch.randn(B, T, H, D, dtype=bf)
        if name in ("gk", "gv", "w") or (name == "a" and "dplr" in fn_name):
            t = -torch.rand(B, T, H, D, dtype=bf) * 0.1  # log-space decays
        if name == "x" and "hgrn" in fn_name:
            t = torch.randn(B, T, H * D, dtype=bf)
        return t.requires_grad_()
    if name == "g":
        per_key = ("chunk_gla", "chunk_kda", "chunk_log_linear_attn", "fused_recurrent_kda", "chunk_precond_kda",
                   "fused_recurrent_precond_kda")
        if "hgrn" in fn_name:
            return (-torch.rand(B, T, H * D, dtype=bf) * 0.1).requires_grad_()
        shape = (B, T, H, D) if any(fn_name.startswith(p) for p in per_key) else (B, T, H)
        return (-torch.rand(*shape, dtype=torch.float32) * 0.1).requires_grad_()
    if name in ("beta", "log_alpha", "log_mu", "eta", "g_atk", "beta_atk", "lamb", "delta"):
        return torch.rand(B, T, H, dtype=bf).requires_grad_()
    if name == "level_scales":  # log-linear attention: one scale per level, ceil(log2(T)) + 1 of them
        return torch.rand(B, T, H, math.ceil(math.log2(T)) + 1, dtype=bf).requires_grad_()
    if name == "u":
        return torch.randn(H, D, dtype=bf).requires_grad_()
    return inspect.Parameter.empty


def fla_ops() -> list[Op]:
    import fla.ops as fla_ops_module

    out = []
    for name in fla_ops_module.__all__:
        if name in _FLA_SKIP:
            continue
        fn = getattr(fla_ops_module, name)
        try:
            params = [p for p in inspect.signature(fn).parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                                                         p.KEYWORD_ONLY)]
        except (TypeError, ValueError):
            continue
        if not params:
            continue

        def call(fn: Any = fn, name: str = name, params: list = params) -> None:
            kw = {}
            for p in params:
                if p.name in ("layer_idx", "num_layers"):
                    continue
                if isinstance(p.default, (bool, int, float)):  # a number the op gives itself (e.g. x: float = 1.5)
                    continue
                v = _fla_value(p.name, name)
                if v is not inspect.Parameter.empty:
                    kw[p.name] = v
                elif p.default is inspect.Parameter.empty:
                    raise TypeError(f"corpus: no value for {name}'s argument {p.name}")
            if "layer_idx" in {p.name for p in params}:
                kw.update(layer_idx=0, num_layers=4)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _grad(fn(**kw))

        out.append(Op("fla-core", name, call))
    return out


# ------------------------------------------------------------------------------------------ Meta's TLX tutorials
def meta_ops() -> list[Op]:
    from tlx_kernels import meta_tutorials as mt

    out = []
    for name in sorted(mt.RECIPES):
        recipe = mt.RECIPES[name]
        targets = ("sm_100a",) if recipe.arch == 100 else ("sm_90",)

        def call(name: str = name) -> None:
            mt.case(name).compile()

        out.append(Op("meta-tlx", name, call, targets=targets))
    # a tutorial without a recipe whose own host functions take CPU tensors: called as a %%tlx cell would
    va = mt.load("vector-add2")
    x, y = torch.randn(1 << 20), torch.randn(1 << 20)
    out.append(Op("meta-tlx", "vector-add2.add2", lambda: va.add2(x, y, x, y)))
    out.append(Op("meta-tlx", "vector-add2.add2_warp_specialized", lambda: va.add2_warp_specialized(x, y, x, y)))
    return out


BUILDERS: dict[str, Callable[[], list[Op]]] = {"liger-kernel": liger_ops, "flag-gems": gems_ops,
                                               "fla-core": fla_ops, "meta-tlx": meta_ops}


def ops(package: str) -> list[Op]:
    """The package's ops (its folder must be on ``sys.path``: ``on_path()``)."""
    return BUILDERS[package]()


#: the fixed CI sample (``tests/report/test_corpus.py``, ``bench/corpus.py --sample``): (package, op), about 45 kernels
SAMPLE: list[tuple[str, str]] = [
    ("liger-kernel", "rms_norm"), ("liger-kernel", "layer_norm"), ("liger-kernel", "swiglu"),
    ("liger-kernel", "geglu"), ("liger-kernel", "rope"), ("liger-kernel", "softmax"), ("liger-kernel", "kl_div"),
    ("liger-kernel", "cross_entropy"), ("liger-kernel", "group_norm"),
    ("flag-gems", "softmax"), ("flag-gems", "layer_norm"), ("flag-gems", "mm"), ("flag-gems", "sum"),
    ("flag-gems", "rms_norm"), ("flag-gems", "cumsum"), ("flag-gems", "scaled_dot_product_attention"),
    ("flag-gems", "exp"), ("flag-gems", "sort"),
    ("fla-core", "fused_recurrent_delta_rule"), ("fla-core", "fused_recurrent_gla"),
    ("fla-core", "fused_chunk_linear_attn"),
    ("meta-tlx", "hopper_gemm_ws"), ("meta-tlx", "hopper_fa_ws_pipelined_pingpong"),
    ("meta-tlx", "blackwell_gemm_ws"), ("meta-tlx", "hopper_gemm_pipelined"),
]
#: the sample ops whose exported reproducer the CI test runs too (a few seconds each)
REPRODUCE: set[tuple[str, str]] = {("liger-kernel", "rms_norm"), ("flag-gems", "softmax"), ("flag-gems", "sort"),
                                   ("fla-core", "fused_recurrent_delta_rule"), ("meta-tlx", "hopper_gemm_ws"),
                                   ("meta-tlx", "hopper_gemm_pipelined")}
