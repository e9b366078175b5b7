"""Meta's Hopper TLX tutorials from the installed wheel, imported on a CPU and compiled for sm_90.

The files call ``triton.runtime.driver.active.get_active_torch_device()`` at import; a stand-in
driver whose target is not CUDA (so no ``torch.cuda`` call runs) answers with the CPU. Each entry
names the kernel and builds launch arguments (CPU tensors, TensorDescriptors with the block shapes
the tutorial's own pre-hook would set) for one of the tutorial's own configs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.tools.tensor_descriptor import TensorDescriptor

TUTORIALS = Path(triton.__file__).resolve().parents[1] / "tlx" / "tutorials"
NUM_SMS = 132


class _CpuDriver:
    def get_current_target(self):
        return GPUTarget("standin", 90, 32)

    def get_active_torch_device(self):
        return torch.device("cpu")


def load_module(name: str):
    """Import ``tlx/tutorials/<name>.py`` with the stand-in driver active (restored afterwards)."""
    driver = triton.runtime.driver
    previous = getattr(driver, "_active", None)
    driver.set_active(_CpuDriver())
    try:
        spec = importlib.util.spec_from_file_location(f"_tlx_tutorial_{name.replace('-', '_')}",
                                                      TUTORIALS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        driver._active = previous  # None again: resolved lazily, as before
    return module


def _desc(t: torch.Tensor, block: list[int]) -> TensorDescriptor:
    return TensorDescriptor(t, list(t.shape), [t.stride(0), 1], block)


def _gemm_desc_args(cfg: dict, split_a: bool, M=512, N=512, K=512):
    a, b, c = (torch.empty(M, K, dtype=torch.float16), torch.empty(K, N, dtype=torch.float16),
               torch.empty(M, N, dtype=torch.float16))
    bm = cfg["BM"] // cfg["NUM_MMA_GROUPS"] if split_a else cfg["BM"]
    cn = cfg["BN"] // 2 if cfg.get("EPILOGUE_SUBTILE") else cfg["BN"]
    bn = cfg["BN"] // cfg.get("NUM_CTAS", 1)
    return (_desc(a, [bm, cfg["BK"]]), _desc(b, [cfg["BK"], bn]), _desc(c, [bm, cn]), M, N, K)


def _fa_args(cfg: dict, Z=1, H=2, N_CTX=512, D=128):
    q, k, v, o = (torch.empty(Z * H * N_CTX, D, dtype=torch.float16) for _ in range(4))
    m = torch.empty(Z, H, N_CTX, dtype=torch.float32)
    split = cfg["BLOCK_M"] // cfg["NUM_MMA_GROUPS"]
    descs = (_desc(q, [split, D]), _desc(k, [cfg["BLOCK_N"], D]), _desc(v, [cfg["BLOCK_N"], D]),
             _desc(o, [split, D]))
    return (0.5, m, Z, H, *descs, N_CTX), {"HEAD_DIM": D, "FP8_OUTPUT": False}


def _gemm_ptr_args(M=512, N=512, K=512):
    a, b, c = (torch.empty(M, K, dtype=torch.float16), torch.empty(K, N, dtype=torch.float16),
               torch.empty(M, N, dtype=torch.float16))
    return (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))


def _config(tuner, index: int) -> tuple[dict, dict]:
    cfg = tuner.configs[index]
    opts = {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    return dict(cfg.kwargs), opts


def case(name: str, index: int = 0):
    """``(jit_kernel, args, options)`` for tutorial ``name`` with its config number ``index``."""
    mod = load_module(name)
    if name == "hopper_gemm_pipelined":
        cfg, opts = _config(mod.matmul_kernel_pipelined_hopper, index)
        return mod.matmul_kernel_pipelined_hopper.fn, _gemm_ptr_args(), cfg | opts
    if name.startswith("hopper_fa"):
        tuner = next(v for k, v in vars(mod).items() if k.startswith("_attn_fwd") and hasattr(v, "configs"))
        cfg, opts = _config(tuner, index)
        args, extra = _fa_args(cfg)
        return tuner.fn, args, cfg | extra | opts
    if name == "hopper_gemm_ws":
        tuner = mod.matmul_kernel_tlx_ws
    else:
        tuner = mod.matmul_kernel_tlx_ws_persistent
    cfg, opts = _config(tuner, index)
    if getattr(tuner.configs[index], "ctas_per_cga", None):
        opts["ctas_per_cga"] = tuner.configs[index].ctas_per_cga
    split = name != "hopper-persistent-gemm-ws-pingpong"
    return tuner.fn, _gemm_desc_args(cfg, split), cfg | opts | {"NUM_SMS": NUM_SMS}


def hopper_names() -> list[str]:
    return sorted(p.stem for p in TUTORIALS.glob("hopper*.py"))
