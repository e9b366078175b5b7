"""The attention-forward family as the workbench's benchmark runner takes it (``workbench.measure.family``;
``bench/attention.py``): the shapes (B, H, S, D, causal), the inputs, the fp32 reference on the first and the last
head, the tolerance, our variants' configs (per head dim), public calls and prepared launches, the library's
top-level ``attention`` (tuned over the variants), and the baselines a user could pick instead: torch SDPA with
each backend and Meta's Hopper FA tutorials from the installed triton-utlx wheel (their own ``attention``
wrappers, unmodified, autotuned by their own configs; non-causal only).

Shapes of one head dim and mask are one case: they share their configs and their preflight shape, B2 H8 S1040
(1040 = 8 x 128 + 16: tails). Nothing here imports the workbench (the runner duck-types
:class:`AttentionFamily`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from tlx_kernels import attention as A
from tlx_kernels.attention import common as C

META = {  # name -> Meta's tutorial in the triton-utlx wheel (tlx/tutorials/)
    "meta_ws": "hopper_fa_ws",
    "meta_ws_pipelined": "hopper_fa_ws_pipelined",
    "meta_pingpong": "hopper_fa_ws_pipelined_pingpong",
    "meta_pingpong_persistent": "hopper_fa_ws_pipelined_pingpong_persistent",
}
SDPA = {"sdpa_flash": "FLASH_ATTENTION", "sdpa_cudnn": "CUDNN_ATTENTION", "sdpa_efficient": "EFFICIENT_ATTENTION"}
TOP = "attention"  # the library's top-level attention(): its tuned pick among the variants
# (shape, against, ratio): issue 24's targets, same-round ratios
TARGETS = {(4, 32, 4096, 128, False): {"meta_*": 1.00}, (2, 32, 8192, 128, False): {"meta_*": 1.00},
           (1, 32, 16384, 128, False): {"meta_*": 1.00}, (1, 32, 32768, 128, False): {"meta_*": 1.00},
           (4, 32, 4096, 128, True): {"sdpa_cudnn": 1.05}, (4, 32, 4096, 64, False): {"sdpa_cudnn": 1.00}}
SPACES = ("configs", "candidates", "listed", "trials")


class AttentionFamily:
    ref = "tlx_kernels.attention.family:ATTENTION"
    name = "attention"
    kernels = (*A.MODULES, TOP)
    baselines = (*SDPA, *META)
    shapes = {"bench": C.BENCH_SHAPES + [s for s in C.LONG_SHAPES if s[2] in (8192, 32768)],
              "quick": C.QUICK_SHAPES,
              "sweep": [(4, 32, 4096, 128, False), (4, 32, 4096, 128, True), (4, 32, 4096, 64, False),
                        (4, 32, 4096, 64, True)]}

    def case(self, shape: tuple) -> str:
        return f"d{shape[3]}-{'causal' if shape[4] else 'full'}"

    def checks(self, shape: tuple) -> list[tuple]:
        return [(2, 8, 1040, shape[3], bool(shape[4]))]

    def shape_name(self, shape: tuple) -> str:
        return "x".join(map(str, shape[:4])) + ("c" if shape[4] else "")

    def parse_shape(self, text: str) -> tuple:
        """'4x32x4096x128' or '4x32x4096x128c' (causal)."""
        B, H, S, D = (int(x) for x in text.rstrip("c").split("x"))
        return (B, H, S, D, text.endswith("c"))

    def flops(self, shape: tuple) -> float:
        B, H, S, D, causal = shape
        return C.attention_flops(B, H, S, S, D, bool(causal))

    def inputs(self, shape: tuple, dtype: str, device: str, seed: int = 0) -> dict[str, Any]:
        import torch

        B, H, S, D, causal = shape
        g = torch.Generator(device=device).manual_seed(seed)
        dt = torch.bfloat16 if dtype == "bf16" else torch.float16
        q, k, v = (torch.randn(B, H, S, D, device=device, dtype=dt, generator=g) for _ in range(3))
        return dict(q=q, k=k, v=v, causal=bool(causal))

    def reference(self, inputs: dict[str, Any]) -> dict[tuple[int, int], Any]:
        """The fp32 answer of the first and the last head (the whole of it would not fit at S 32k)."""
        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        B, H = q.shape[:2]
        return {(b, h): C.reference(q[b:b + 1, h:h + 1], k[b:b + 1, h:h + 1], v[b:b + 1, h:h + 1], inputs["causal"])
                for b, h in {(0, 0), (B - 1, H - 1)}}

    def tolerance(self, dtype: str) -> float:
        return 2e-2 if dtype == "bf16" else 1e-2

    def error(self, out: Any, ref: dict[tuple[int, int], Any]) -> float:
        """The relative error on the reference's heads; inf where the output holds a NaN or an inf anywhere."""
        import torch

        if not torch.isfinite(out).all():
            return float("inf")
        return max(C.rel_err(out[b:b + 1, h:h + 1], r) for (b, h), r in ref.items())

    def configs(self, kernel: str, space: str, shape: tuple) -> list[dict] | None:
        """``space``: "configs" (what the public call tunes over at this head dim), "candidates" (a sweep's
        grid), "listed" (CONFIGS and TRIALS) or "trials" (the default and TRIALS). The top-level
        ``attention`` tunes over the variants: None."""
        if kernel == TOP:
            return None
        if space == "configs":
            return C.configs_for(A.MODULES[kernel].CONFIGS, shape[3])
        return sweep_space(kernel, shape[3], space)

    def config_name(self, cfg: dict | None) -> str:
        if not cfg:
            return "-"
        if "variant" in cfg:
            return f"{cfg['variant']}:{C.config_name({k: v for k, v in cfg.items() if k != 'variant'})}"
        return C.config_name(cfg)

    def launch(self, kernel: str, cfg: dict, inputs: dict[str, Any]) -> tuple[Callable[[], Any], Any]:
        import torch

        q = inputs["q"]
        launch = A.MODULES[kernel].prepare(q, inputs["k"], inputs["v"], inputs["causal"], cfg,
                                           out=torch.full_like(q, float("nan")))
        return launch.run, launch.out

    def call(self, kernel: str, inputs: dict[str, Any], configs: list[dict] | None) -> Callable[..., Any]:
        """A user's ``attention(q, k, v, causal)`` (a new output each call, or ``out``); a variant tunes over
        ``configs`` on its first call, the top-level one over the variants' configs as their calls left them."""
        if kernel == TOP:
            fn = A.attention
        else:
            fn = A.MODULES[kernel].attention
            if configs is not None:
                A.MODULES[kernel].CONFIGS[:] = [dict(c) for c in configs]
        q, k, v, causal = inputs["q"], inputs["k"], inputs["v"], inputs["causal"]
        return lambda out=None: fn(q, k, v, causal, out=out)

    def tuned(self, kernel: str, inputs: dict[str, Any]) -> dict | None:
        key = C.problem(inputs["q"], inputs["k"], inputs["v"], inputs["causal"], None).key()
        if kernel == TOP:
            picked = A._tuner.cache.get(key)
            return dict(picked[1], variant=picked[0]) if picked else None
        return A.MODULES[kernel]._tuner.cache.get(key)

    def baseline(self, name: str, inputs: dict[str, Any], limit: int) -> dict[str, Callable[[], Any]]:
        import torch

        q, k, v, causal = inputs["q"], inputs["k"], inputs["v"], inputs["causal"]
        if name in SDPA:
            from torch.nn.attention import SDPBackend, sdpa_kernel

            backend = getattr(SDPBackend, SDPA[name])

            def sdpa() -> Any:
                with sdpa_kernel(backend):
                    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

            return {SDPA[name]: sdpa}
        if causal:
            return {}  # Meta's FA tutorials are non-causal
        from tlx_kernels import meta_tutorials

        mod = meta_tutorials.load(META[name])
        scale = 1.0 / q.shape[3] ** 0.5
        return {"autotuned": lambda: mod.attention(q, k, v, scale)}

    def targets(self, shape: tuple) -> dict[str, float]:
        return TARGETS.get(tuple(shape), {})


def sweep_space(variant: str, D: int, space: str = "candidates") -> list[dict]:
    """Candidate configs of a variant for head dim ``D``, all that fit: its CONFIGS, then its TRIALS (configs not
    yet run on a GPU), then a grid ("candidates"); CONFIGS and TRIALS ("listed"); or its default and its TRIALS
    ("trials"). The teaching steps (ws, ws_pipelined) have no grid; the persistent kernel's schedule knobs are
    runtime arguments, so its grid costs compiles only for the other knobs."""
    if space not in SPACES[1:]:
        raise ValueError(f"space must be one of {SPACES[1:]}, got {space!r}")
    grid: list[dict] = []
    if variant == "triton_baseline":
        grid = [dict(BLOCK_M=128, BLOCK_N=bn, NUM_STAGES=s, num_warps=w)
                for bn, s, w in itertools.product((128, 64), (2, 3, 4), (8, 4))]
    elif variant in ("ws_pingpong", "ws_persistent"):
        main = [(64, 128, 2, nb, 240) for nb in (2, 3)] + [(64, 64, 2, 3, 240)]
        more = [(64, 128, 2, 4, 240), (64, 64, 2, 4, 240), (128, 64, 2, 3, 240), (128, 64, 2, 4, 240),
                (64, 64, 3, 3, 160), (64, 64, 3, 4, 160)]
        knobs = [(True, False), (False, False)]
        for (bm, bn, g, nb, regs), (pv, wr) in itertools.chain(itertools.product(main, knobs + [(True, True)]),
                                                               itertools.product(more, knobs)):
            grid.append(dict(BLOCK_M=bm, BLOCK_N=bn, NUM_GROUPS=g, NUM_BUFFERS=nb, CONSUMER_REGS=regs, PV_IN_TURN=pv,
                             WARP_RELEASE=wr))
        if variant == "ws_persistent":
            sched = [(8, True), (4, True), (16, True), (2, True), (8, False)]
            grid = [dict(c, GROUP_HEADS=gh, SNAKE=sn) for c in grid for gh, sn in sched]
    seen, out = set(), []
    mod = A.MODULES[variant]
    trials = list(getattr(mod, "TRIALS", []))
    listed = mod.CONFIGS[:1] + trials if space == "trials" else list(mod.CONFIGS) + trials
    for cfg in listed + (grid if space == "candidates" else []):
        if C.fits(cfg, D) and C.config_name(cfg) not in seen:
            seen.add(C.config_name(cfg))
            out.append(dict(cfg))
    return out


ATTENTION = AttentionFamily()

__all__ = ["ATTENTION", "META", "SDPA", "AttentionFamily", "sweep_space"]
