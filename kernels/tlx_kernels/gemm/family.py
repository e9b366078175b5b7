"""The GEMM family as the workbench's benchmark runner takes it (``workbench.measure.family``; ``bench/gemm.py``):
the shapes, the operands, the fp32 reference and its tolerance, our kernels' configs, public calls and prepared
launches, and the baselines a user could pick instead: cuBLAS (``torch.matmul``), Triton's ``tl.dot`` GEMM (tuned
over its own configs) and Meta's Hopper GEMM tutorials from the installed triton-utlx wheel (imported unmodified,
launched as their wrappers launch them with their own autotune configs, on our operands and output).

Nothing here imports the workbench (the runner duck-types :class:`GemmFamily`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tlx_kernels.gemm import MODULES, triton_dot
from tlx_kernels.gemm import common as C

META = {  # our name -> (Meta's tutorial in the wheel, its kernel)
    "meta_ws": ("hopper_gemm_ws", "matmul_kernel_tlx_ws"),
    "meta_coop": ("hopper-persistent-gemm-ws-cooperative", "matmul_kernel_tlx_ws_persistent"),
    "meta_pingpong": ("hopper-persistent-gemm-ws-pingpong", "matmul_kernel_tlx_ws_persistent"),
    "meta_pipelined": ("hopper_gemm_pipelined", "matmul_kernel_pipelined_hopper"),
}
DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
# (against, ratio): the best of ours against Meta's best kernel of the run, or against cuBLAS (issue 24)
TARGETS = {(8192, 8192, 8192): {"meta_*": 1.0}, (4096, 4096, 4096): {"meta_*": 1.0},
           (2048, 2048, 2048): {"cublas": 1.0}, (1024, 1024, 1024): {"cublas": 1.0}}


class GemmFamily:
    ref = "tlx_kernels.gemm.family:GEMM"
    name = "gemm"
    kernels = ("tma_pipelined", "ws_cooperative", "ws_pingpong")
    sweepable = (*kernels, "triton_dot")  # kernels whose configs a sweep times
    baselines = ("cublas", "triton_dot", "meta_ws", "meta_coop")  # Meta's two fastest in the 2026-12-03 run
    all_baselines = ("cublas", "triton_dot", *META)
    shapes = {"bench": C.BENCH_SHAPES, "quick": C.QUICK_SHAPES,
              "sweep": [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048)]}
    PREFLIGHT = [(2304, 2048, 512), (1000, 1500, 777)]  # 1-3 tiles per CTA on 132 SMs; an odd shape
    odd = True  # the preflight checks the odd shape too (a sweep of many candidates may leave it out)

    def case(self, shape: tuple) -> str:
        return "all"  # every shape tunes over the same configs

    def checks(self, shape: tuple) -> list[tuple]:
        return self.PREFLIGHT if self.odd else self.PREFLIGHT[:1]

    def shape_name(self, shape: tuple) -> str:
        return "x".join(map(str, shape))

    def parse_shape(self, text: str) -> tuple:
        return tuple(int(x) for x in text.lower().split("x"))

    def flops(self, shape: tuple) -> float:
        return C.gemm_flops(*shape)

    def inputs(self, shape: tuple, dtype: str, device: str, seed: int = 0) -> dict[str, Any]:
        import torch

        from tlx_kernels import meta_tutorials

        a, b = meta_tutorials.inputs("gemm", tuple(shape), getattr(torch, DTYPES[dtype]), device, seed)
        return dict(a=a, b=b)

    def reference(self, inputs: dict[str, Any]) -> Any:
        return inputs["a"].float() @ inputs["b"].float()

    def tolerance(self, dtype: str) -> float:
        import torch

        return C.fp32_tolerance(getattr(torch, DTYPES[dtype]))

    def error(self, out: Any, ref: Any) -> float:
        return C.rel_err(out, ref)

    def configs(self, kernel: str, space: str, shape: tuple | None = None) -> list[dict]:
        mod = MODULES[kernel]
        return [dict(c) for c in (mod.candidates() if space == "candidates" else mod.CONFIGS)]

    def config_name(self, cfg: dict) -> str:
        return C.config_name(cfg)

    def launch(self, kernel: str, cfg: dict, inputs: dict[str, Any]) -> tuple[Callable[[], Any], Any]:
        """A bare ``kernel[grid](...)`` with ``cfg``, descriptors built once, and the output it writes."""
        a, b = inputs["a"], inputs["b"]
        out = C.empty_out(a.shape[0], b.shape[1], a.dtype, a.device)
        mod = MODULES[kernel]
        if mod is triton_dot:
            triton_dot._ensure_allocator()
            fn, *prepared = triton_dot.prepare(a, b, cfg, out)
        else:
            fn, prepared = mod.kernel, mod.prepare(a, b, cfg, out)
        args, kwargs, grid, _c = prepared
        return (lambda: fn[grid](*args, **kwargs)), out

    def call(self, kernel: str, inputs: dict[str, Any], configs: list[dict] | None) -> Callable[..., Any]:
        """A user's ``matmul(a, b)`` (a new output each call, or ``out``), tuning over ``configs`` on its first
        call."""
        mod = MODULES[kernel]
        if configs is not None:
            mod._matmul.configs = [dict(c) for c in configs]
        a, b = inputs["a"], inputs["b"]
        return lambda out=None: mod.matmul(a, b, out=out)

    def tuned(self, kernel: str, inputs: dict[str, Any]) -> dict | None:
        return MODULES[kernel]._tuner.cache.get(C.problem_key(inputs["a"], inputs["b"]))

    def baseline(self, name: str, inputs: dict[str, Any], limit: int) -> dict[str, Callable[[], Any]]:
        import torch

        a, b = inputs["a"], inputs["b"]
        if name == "cublas":
            return {"torch.matmul": lambda: torch.matmul(a, b)}
        if name == "triton_dot":
            return {"tuned over its CONFIGS": lambda: triton_dot.matmul(a, b)}
        return {meta_config_name(c): _meta_launch(name, c, a, b) for c in meta_configs(name, a, b, limit)}

    def targets(self, shape: tuple) -> dict[str, float]:
        return TARGETS.get(tuple(shape), {})


def meta_module(key: str):
    """One of Meta's Hopper GEMM tutorials from the installed wheel (tlx/tutorials), imported unmodified."""
    from tlx_kernels import meta_tutorials

    return meta_tutorials.load(META[key][0])


def meta_configs(key: str, a: Any, b: Any, limit: int) -> list:
    """Their autotune configs that uTLX can build (one CTA per cluster), pruned as their kernel prunes them,
    without 256x256 tiles (256 accumulator registers per thread), subtiled epilogues first."""
    M, K = a.shape
    N = b.shape[1]
    mod = meta_module(key)
    cfgs = [c for c in getattr(mod, META[key][1]).configs if c.kwargs.get("NUM_CTAS", 1) == 1]
    prune = getattr(mod, "preprocess_configs", None)
    if prune is not None:
        cfgs = prune(cfgs, {"M": M, "N": N, "K": K})
    cfgs = [c for c in cfgs if (c.kwargs.get("BM"), c.kwargs.get("BN")) != (256, 256)]
    # the whole-tile epilogue of hopper_gemm_ws with a 4-stage ring needs 262 KB of shared memory: last
    tiles = {(128, 256): 0, (256, 128): 1}
    cfgs.sort(key=lambda c: (not c.kwargs.get("EPILOGUE_SUBTILE", True),
                             tiles.get((c.kwargs.get("BM"), c.kwargs.get("BN")), 2), -c.kwargs.get("NUM_STAGES", 0)))
    return cfgs[:limit]


def meta_config_name(cfg: Any) -> str:
    return "_".join(f"{k}{v}" for k, v in cfg.kwargs.items())


def _meta_launch(key: str, cfg: Any, a: Any, b: Any) -> Callable[[], Any]:
    """Meta's kernel with one of its configs, launched as its own wrapper does (``kernel.fn[grid]`` after the
    config's pre_hook) on our operands and a NaN-filled output of ours; the call returns that output."""
    import torch
    import triton
    from triton.tools.tensor_descriptor import TensorDescriptor

    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=a.device))
    kern = getattr(meta_module(key), META[key][1])
    M, K = a.shape
    N = b.shape[1]
    out = C.empty_out(M, N, a.dtype, a.device, float("nan"))
    kw = cfg.all_kwargs()
    if key == "meta_pipelined":
        grid = (triton.cdiv(M, kw["BLOCK_SIZE_M"]) * triton.cdiv(N, kw["BLOCK_SIZE_N"]),)
        strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
        return lambda: (kern.fn[grid](a, b, out, M, N, K, *strides, **kw), out)[1]
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    descs = [TensorDescriptor(t, list(t.shape), list(t.stride()), [1, 1]) for t in (a, b, out)]
    nargs = dict(zip(("a_desc", "b_desc", "c_desc"), descs), **kw)
    if cfg.pre_hook is not None:
        cfg.pre_hook(nargs)
    kw = {k: v for k, v in kw.items() if k != "NUM_SMS"}
    grid = (min(sms, triton.cdiv(M, kw["BM"]) * triton.cdiv(N, kw["BN"])),)
    return lambda: (kern.fn[grid](*descs, M, N, K, NUM_SMS=sms, **kw), out)[1]


GEMM = GemmFamily()

__all__ = ["GEMM", "META", "GemmFamily", "meta_config_name", "meta_configs"]
