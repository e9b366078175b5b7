"""Meta's TLX tutorials, as shipped inside the installed ``triton-utlx`` wheel, as inputs of the workbench.

The tutorial files are used unmodified, from site-packages (never copied into this repository):

- ``tutorial_dir()``, ``files(pattern)``, ``names(pattern)``: the tutorial files of the installed wheel.
- ``load(name)``: one imported unmodified (once per process). The files ask Triton's active driver for
  the torch device at import; without a GPU a stand-in driver (target ``GPUTarget("standin", 90, 32)``:
  ``is_cuda()`` is False, so no ``torch.cuda`` call runs) is active for the import only.
- ``RECIPES`` / ``case(name)``: for each tutorial, the launch arguments of its main kernel for a shape and
  one of its own autotune configs (CPU tensors, ``TensorDescriptor``s over CPU tensors with the dummy
  block shape its host function uses, the constexprs its host function passes); ``Case.compile()`` hands
  them to ``workbench.compile``, which applies the config and its ``pre_hook`` as the autotuner would, so
  the kernel compiles for sm_90 (Hopper files) or sm_100a (Blackwell files) on a CPU.
- ``HOSTS`` / ``host_call(name, *inputs)``: on a GPU, the tutorial's own host function (``matmul(a, b)``,
  ``attention(q, k, v, sm_scale)``, ...), with ``inputs``, ``reference``, ``baseline`` and ``flops`` for
  correctness and timing against torch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import torch

__all__ = ["GEMM_SHAPES", "FA_SHAPE", "HOSTS", "RECIPES", "SM_SCALE", "UNCOVERED", "Case", "Host", "Recipe", "baseline",
           "case", "device_standins", "files", "flops", "host_call", "host_config", "inputs", "load", "names",
           "reference", "tutorial_dir"]

# The shapes: GEMM M = N = K, flash attention (batch, heads, sequence, head dim).
GEMM_SHAPES: list[tuple[int, int, int]] = [(4096, 4096, 4096), (8192, 8192, 8192)]
FA_SHAPE: tuple[int, int, int, int] = (4, 32, 4096, 128)
SM_SCALE = 0.5  # the softmax scale Meta's own correctness tests use
SMS = {90: 132, 100: 148}  # SM count of an H100/H200 SXM and a B200: what a pre_hook is told without a GPU


# ----------------------------------------------------------------------------------------- the files
def tutorial_dir() -> Path:
    """``tlx/tutorials`` inside the installed triton-utlx wheel."""
    spec = importlib.util.find_spec("tlx")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        d = Path(loc) / "tutorials"
        if d.is_dir():
            return d
    raise FileNotFoundError("Meta's TLX tutorials (tlx/tutorials in site-packages) were not found: "
                            "is triton-utlx installed?")


def files(pattern: str = "*.py") -> list[Path]:
    """The tutorial files matching ``pattern`` (e.g. ``"hopper*.py"``), sorted by name."""
    return sorted(p for p in tutorial_dir().glob(pattern) if p.is_file() and not p.name.startswith("_"))


def names(pattern: str = "*.py") -> list[str]:
    """The tutorial names (file stems) matching ``pattern``."""
    return [p.stem for p in files(pattern)]


def has_gpu() -> bool:
    return torch.cuda.is_available()


class _StandInDriver:
    """What a tutorial asks of Triton's driver at import, answered for a CPU-only machine."""

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        return GPUTarget("standin", 90, 32)

    def get_active_torch_device(self) -> torch.device:
        return torch.device("cpu")


_MODULES: dict[str, ModuleType] = {}


def load(name: str) -> ModuleType:
    """Import tutorial ``name`` (a file stem, e.g. ``"hopper_gemm_ws"``) unmodified; the same module on
    every call. Without a GPU, a stand-in driver is Triton's active one during the import only."""
    if name in _MODULES:
        return _MODULES[name]
    path = tutorial_dir() / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no tutorial {name!r} in {tutorial_dir()} (have: {', '.join(names())})")
    module_name = "tlx_tutorial_" + re.sub(r"\W", "_", name)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up by name
    try:
        with _import_context():
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    _MODULES[name] = module
    return module


def _import_context() -> contextlib.AbstractContextManager:
    if has_gpu():
        return contextlib.nullcontext()
    from workbench.compile.triton_reach import active_driver

    return active_driver(_StandInDriver())


@contextlib.contextmanager
def device_standins(arch: int = 90) -> Iterator[None]:
    """Without a GPU, inside the block: ``torch.cuda.get_device_properties`` answers for the target's GPU
    (its SM count), since some tutorials' pre_hooks read it. With a GPU this does nothing."""
    if has_gpu():
        yield
        return
    original = torch.cuda.get_device_properties
    props = SimpleNamespace(multi_processor_count=SMS.get(arch, 132), major=arch // 10, minor=arch % 10,
                            name=f"stand-in sm_{arch} (no GPU)")
    torch.cuda.get_device_properties = lambda device=None: props
    try:
        yield
    finally:
        torch.cuda.get_device_properties = original


# ----------------------------------------------------------------------------------------- recipes
def _desc(t: torch.Tensor, shape: list[int] | None = None, strides: list[int] | None = None) -> Any:
    """A host TensorDescriptor with the dummy block shape the host functions use; the config's pre_hook
    sets the real one."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    return TensorDescriptor(t, list(shape or t.shape), list(strides or t.stride()), [1, 1])


def _gemm_pointers(shape: tuple, dtype: torch.dtype, out: torch.dtype | None) -> tuple[tuple, dict]:
    M, N, K = shape
    a, b = torch.empty(M, K, dtype=dtype), torch.empty(K, N, dtype=dtype)
    c = torch.empty(M, N, dtype=out or dtype)
    return (a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride()), {}


def _gemm_descriptors(shape: tuple, dtype: torch.dtype, out: torch.dtype | None, sms: int,
                      workspace: bool = False, clc_stages: int | None = None) -> tuple[tuple, dict]:
    M, N, K = shape
    a, b = torch.empty(M, K, dtype=dtype), torch.empty(K, N, dtype=dtype)
    c = torch.empty(M, N, dtype=out or dtype)
    descs = [_desc(a), _desc(b), _desc(c)] + ([_desc(c)] if workspace else [])
    return (*descs, M, N, K), {"NUM_SMS": sms} | ({"NUM_CLC_STAGES": clc_stages} if clc_stages else {})


def _attention(shape: tuple, dtype: torch.dtype, out: torch.dtype | None) -> tuple[tuple, dict]:
    Z, H, S, D = shape
    q, k, v, o = (torch.empty(Z, H, S, D, dtype=dtype) for _ in range(4))
    m = torch.empty(Z, H, S, dtype=torch.float32)
    descs = [_desc(t, [Z * H * S, D], [D, 1]) for t in (q, k, v, o)]
    return (SM_SCALE, m, Z, H, *descs), {"N_CTX": S, "HEAD_DIM": D, "FP8_OUTPUT": False}


def _attention_staged(shape: tuple, dtype: torch.dtype, out: torch.dtype | None) -> tuple[tuple, dict]:
    """The Blackwell FA kernels that take ``STAGE`` (1: not causal, as their host functions pass for causal=False)."""
    args, kwargs = _attention(shape, dtype, out)
    return args, {**kwargs, "STAGE": 1}


@dataclass(frozen=True)
class Recipe:
    """How to compile one tutorial's main kernel without running its host function."""

    kernel: str  # the module attribute holding the (autotuned) main kernel
    arch: int  # 90: Hopper file, compiled for sm_90; 100: Blackwell file, sm_100a
    build: Callable[[tuple, torch.dtype, torch.dtype | None], tuple[tuple, dict]]  # (shape, dtype, out)
    shape: tuple[int, ...]  # a small shape for compile tests (the specialization is what matters)
    config: dict[str, Any] = field(default_factory=dict)  # kwargs the chosen autotune config has
    out: torch.dtype | None = None  # output dtype when the host function fixes it (else the input's)

    @property
    def target(self) -> str:
        return "sm_100a" if self.arch == 100 else f"sm_{self.arch}"


_SMALL_GEMM = (512, 512, 512)
_SMALL_FA = (1, 2, 512, 128)
_F16 = torch.float16
# The config each recipe picks is the one Meta's own correctness tests (tlx/tutorials/testing) use where it
# is one of the autotune configs, else the first.
RECIPES: dict[str, Recipe] = {
    "hopper_gemm_pipelined": Recipe("matmul_kernel_pipelined_hopper", 90, _gemm_pointers, _SMALL_GEMM, out=_F16),
    "hopper_gemm_ws": Recipe("matmul_kernel_tlx_ws", 90, partial(_gemm_descriptors, sms=SMS[90]), _SMALL_GEMM,
                             {"BM": 128, "BN": 256, "GROUP_SIZE_M": 8, "NUM_STAGES": 3, "EPILOGUE_SUBTILE": False,
                              "NUM_CTAS": 1, "USE_WARP_BARRIER": False}, out=_F16),
    "hopper-persistent-gemm-ws-cooperative": Recipe("matmul_kernel_tlx_ws_persistent", 90,
                                                    partial(_gemm_descriptors, sms=SMS[90]), _SMALL_GEMM, out=_F16),
    "hopper-persistent-gemm-ws-pingpong": Recipe("matmul_kernel_tlx_ws_persistent", 90,
                                                 partial(_gemm_descriptors, sms=SMS[90]), _SMALL_GEMM, out=_F16),
    "hopper_fa_ws": Recipe("_attn_fwd_ws", 90, _attention, _SMALL_FA, {"NUM_MMA_GROUPS": 2}),
    "hopper_fa_ws_pipelined": Recipe("_attn_fwd_ws_pipelined", 90, _attention, _SMALL_FA, {"NUM_MMA_GROUPS": 2}),
    "hopper_fa_ws_pipelined_pingpong": Recipe("_attn_fwd_ws_pipelined_pingpong", 90, _attention, _SMALL_FA),
    "hopper_fa_ws_pipelined_pingpong_persistent": Recipe("_attn_fwd_ws_pipelined_pingpong_persistent", 90,
                                                         _attention, _SMALL_FA),
    "blackwell_gemm_pipelined": Recipe("matmul_kernel_tma_pipelined_blackwell", 100, _gemm_pointers, _SMALL_GEMM,
                                       {"BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "NUM_STAGES": 4}),
    "blackwell_gemm_ws": Recipe("matmul_kernel_tma_ws_blackwell", 100,
                                partial(_gemm_descriptors, sms=SMS[100], workspace=True), _SMALL_GEMM,
                                {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                                 "NUM_SMEM_BUFFERS": 2, "NUM_TMEM_BUFFERS": 2, "NUM_MMA_GROUPS": 1,
                                 "EPILOGUE_SUBTILE": 1, "NUM_CTAS": 1, "SPLIT_K": 1, "INTERLEAVE_EPILOGUE": 0,
                                 "USE_WARP_BARRIER": False}),
    "blackwell_fa_ws": Recipe("_attn_fwd_ws", 100, _attention, _SMALL_FA),
    "blackwell_fa_ws_pipelined": Recipe("_attn_fwd_ws", 100, _attention_staged, _SMALL_FA),
    "blackwell_fa_ws_persistent": Recipe("_attn_fwd_ws", 100, _attention_staged, _SMALL_FA),
    "blackwell_gemm_clc": Recipe("matmul_kernel_tma_ws_blackwell_clc", 100,
                                 partial(_gemm_descriptors, sms=SMS[100], clc_stages=1), _SMALL_GEMM, out=_F16),
}


_BLACKWELL_LATER = "Blackwell, beyond the GEMMs and FA kernels compiled for sm_100a here: a recipe is still to write"
# Every other tutorial file of the wheel, with why it has no recipe: a file in neither table is new (a test says so).
UNCOVERED: dict[str, str] = {
    "amd-gemm-pipelined_test": "AMD target: the workbench compiles for NVIDIA GPUs only",
    "vector-add2": "an elementwise warp-specialization demo: its own host functions (add2, add2_warp_specialized) "
                   "are called on CPU tensors by testbed/corpus_ops.py instead",
    "blackwell-multi-cta-layernorm_test": "does not import under uTLX 3.8.0.post16: its configs ask for "
                                          "ctas_per_cga=(1, 2, 1), uTLX takes only (N, 1, 1)",
    **{n: _BLACKWELL_LATER for n in (
        "blackwell-cross-attention", "blackwell-gdpa", "blackwell-grouped-gemm_test",
        "blackwell_fa_ws_pipelined_persistent_mxfp8")},
    "blackwell_gemm_2cta": "a 2-CTA cluster GEMM: clusters do not compile with uTLX 3.8.0.post16 (README, TLX facts)",
    # its first (pruned) config, HEAD_DIM 128: uTLX's C++ asserts in a tensor-memory storage_alias local_alloc
    # ("#tlx.dummy_tmem_layout is not a valid encoding", mem_ops._local_alloc_with_storage_alias) and the process
    # aborts; no guard yet, so no recipe (a compile would take the caller's process down)
    "blackwell_fa_ws_pipelined_persistent": "uTLX 3.8.0.post16 aborts the process compiling it (a tensor-memory "
                                            "storage_alias alloc): no guard yet",
}


def choose_config(tuner: Any, want: dict[str, Any] | int | None) -> Any:
    """One of ``tuner``'s own configs: by index, or the first whose kwargs include ``want``."""
    configs = list(tuner.configs)
    if isinstance(want, int):
        return configs[want]
    for cfg in configs:
        if all(cfg.kwargs.get(k, object()) == v for k, v in (want or {}).items()):
            return cfg
    raise LookupError(f"no autotune config of {tuner.fn.__name__} has {want} ({len(configs)} configs): "
                      "has the tutorial changed?")


@dataclass
class Case:
    """The launch arguments of a tutorial's main kernel for one shape and one of its autotune configs."""

    name: str
    kernel: Any  # the Autotuner (workbench.compile applies ``config`` and its pre_hook)
    config: Any  # a triton.Config from kernel.configs
    args: tuple
    kwargs: dict[str, Any]
    target: str
    arch: int

    def compile(self, **options: Any) -> Any:
        """``workbench.compile`` of the kernel for the recipe's target (no GPU needed) -> Artifact."""
        import workbench

        with device_standins(self.arch):
            return workbench.compile(self.kernel, *self.args, target=self.target, config=self.config,
                                     **self.kwargs, **options)


def case(name: str, shape: tuple[int, ...] | None = None, dtype: torch.dtype = torch.float16,
         config: dict[str, Any] | int | None = None) -> Case:
    """Tutorial ``name``'s main kernel with arguments for ``shape`` (default: the recipe's small one) and
    one of its own autotune configs (default: the recipe's; an index or a kwargs subset picks another)."""
    if name not in RECIPES:
        raise KeyError(f"no recipe for Meta's tutorial {name!r}: add one to tlx_kernels.meta_tutorials.RECIPES")
    r = RECIPES[name]
    tuner = getattr(load(name), r.kernel)
    cfg = choose_config(tuner, r.config if config is None else config)
    args, kwargs = r.build(tuple(shape or r.shape), dtype, r.out)
    return Case(name, tuner, cfg, args, kwargs, r.target, r.arch)


# ----------------------------------------------------------------------------------------- on a GPU
@dataclass(frozen=True)
class Host:
    """How a tutorial's own host function is called on CUDA inputs."""

    function: str  # e.g. "matmul", "attention", "matmul_tlx_ws_persistent"
    kind: str  # "gemm" or "attention"
    pass_config: bool = False  # pass the recipe's config (host ``config=``) instead of autotuning over all

    def call(self, module: ModuleType, name: str, *args: Any) -> torch.Tensor:
        fn = getattr(module, self.function)
        if self.kind == "attention":
            return fn(*args, SM_SCALE)
        if self.pass_config:
            return fn(*args, config=host_config(name))
        return fn(*args)


HOSTS: dict[str, Host] = {
    "hopper_gemm_pipelined": Host("matmul", "gemm"),  # one autotune config
    # 192 autotune configs (64 after its own pruning): autotuning them would take minutes, so its host
    # function gets the config Meta's correctness test uses (with that config's num_warps/num_stages)
    "hopper_gemm_ws": Host("matmul", "gemm", pass_config=True),
    "hopper-persistent-gemm-ws-cooperative": Host("matmul_tlx_ws_persistent", "gemm"),  # autotunes 4
    "hopper-persistent-gemm-ws-pingpong": Host("matmul_tlx_ws_persistent", "gemm"),  # autotunes 2
    "hopper_fa_ws": Host("attention", "attention"),
    "hopper_fa_ws_pipelined": Host("attention", "attention"),
    "hopper_fa_ws_pipelined_pingpong": Host("attention", "attention"),
    "hopper_fa_ws_pipelined_pingpong_persistent": Host("attention", "attention"),
}


def host_config(name: str) -> dict[str, Any]:
    """The recipe's autotune config as the dict a host function's ``config=`` takes (with num_warps,
    num_stages and ctas_per_cga, so the launch is the one the autotuner would make)."""
    return dict(choose_config(getattr(load(name), RECIPES[name].kernel), RECIPES[name].config).all_kwargs())


def host_call(name: str, *args: torch.Tensor) -> torch.Tensor:
    """Call tutorial ``name``'s own host function: ``(a, b)`` for GEMMs, ``(q, k, v)`` for attention
    (softmax scale ``SM_SCALE``)."""
    return HOSTS[name].call(load(name), name, *args)


def inputs(kind: str, shape: tuple[int, ...], dtype: torch.dtype, device: str = "cuda",
           seed: int = 0) -> tuple[torch.Tensor, ...]:
    """``(a, b)`` for a GEMM of ``shape = (M, N, K)``; ``(q, k, v)`` (normal, std 0.5, as Meta's tests) for
    attention of ``shape = (Z, H, S, D)``."""
    g = torch.Generator(device=device).manual_seed(seed)
    if kind == "gemm":
        M, N, K = shape
        return (torch.randn(M, K, dtype=dtype, device=device, generator=g),
                torch.randn(K, N, dtype=dtype, device=device, generator=g))
    return tuple(torch.empty(shape, dtype=dtype, device=device).normal_(0.0, 0.5, generator=g) for _ in range(3))


def reference(kind: str, *args: torch.Tensor) -> torch.Tensor:
    """The fp32 torch result the tutorial's output is checked against."""
    if kind == "gemm":
        a, b = args
        return torch.matmul(a.float(), b.float())
    q, k, v = (t.float() for t in args)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=SM_SCALE)


def baseline(kind: str, *args: torch.Tensor, backend: Any = None) -> torch.Tensor:
    """What the tutorial is timed against, in the inputs' dtype: cuBLAS (``torch.matmul``) or torch SDPA
    (``backend``: a ``torch.nn.attention.SDPBackend``, default torch's choice)."""
    if kind == "gemm":
        return torch.matmul(*args)
    if backend is None:
        return torch.nn.functional.scaled_dot_product_attention(*args, scale=SM_SCALE)
    from torch.nn.attention import sdpa_kernel

    with sdpa_kernel(backend):
        return torch.nn.functional.scaled_dot_product_attention(*args, scale=SM_SCALE)


def flops(kind: str, shape: tuple[int, ...]) -> float:
    """FLOPs of one call: ``2 M N K``; attention forward (not causal) ``4 Z H S^2 D``."""
    if kind == "gemm":
        M, N, K = shape
        return 2.0 * M * N * K
    Z, H, S, D = shape
    return 4.0 * Z * H * S * S * D
