"""Compile-only (CPU, sm_90, down to SASS) checks of every attention kernel in tlx_kernels.attention.

Each variant's default config in bf16 and fp16, head dim 64 and 128, causal and not, with sequence lengths
that are not multiples of any tile; PTX must hold wgmma, TMA and mbarrier waits where the design puts them;
SASS must hold no spills; the pipelined kernels must keep their softmax inside the PV wgmma's flight. Every config
of the TLX kernels, for each head dim it fits, compiles without spills too.
"""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")

from tlx_kernels import attention as A  # noqa: E402
from tlx_kernels.attention import common as C  # noqa: E402
from tlx_kernels.attention import compile_only as CO  # noqa: E402

S_Q, S_KV = 1000, 777  # odd lengths: tails in Q and in KV, S_q != S_kv
_cache: dict = {}

# (variant, dtype, D, causal): every variant in both dtypes, both head dims and both mask modes, without
# compiling the full product (compiles cost ~3 s each on a laptop core).
CASES = [(name, torch.bfloat16, 128, True) for name in A.MODULES] + [
    (name, torch.float16, 64, False) for name in A.MODULES
] + [("ws_persistent", torch.bfloat16, 64, True)]


def case_id(case) -> str:
    name, dtype, D, causal = case
    return f"{name}-{'bf16' if dtype == torch.bfloat16 else 'fp16'}-d{D}-{'causal' if causal else 'full'}"


def build(name: str, dtype=torch.bfloat16, D: int = 128, causal: bool = True, config=None):
    key = (name, str(dtype), D, causal, repr(config))
    if key not in _cache:
        q = torch.empty(2, 3, S_Q, D, dtype=dtype)
        kv = torch.empty(2, 3, S_KV, D, dtype=dtype)
        launch = A.MODULES[name].prepare(q, kv, kv, causal, config, want_lse=True)
        _cache[key] = (CO.compile_facts(launch), launch)
    return _cache[key]


def pv_overlap(sass: str) -> list[int]:
    """MUFU.EX2 (the softmax's exp2) issued while each register-A wgmma group (P V) was in flight."""
    out, inflight = [], []
    for line in sass.splitlines():
        if "HGMMA" in line and "gsb0" in line:
            inflight.append(["pv" if re.search(r"HGMMA\S*\s+R\d+,\s*R\d+", line) else "qk", 0])
        elif "MUFU.EX2" in line:
            for group in inflight:
                group[1] += 1
        elif m := re.search(r"DEPBAR\.LE gsb0, 0x(\d+)", line):
            while len(inflight) > int(m.group(1)):
                kind, n = inflight.pop(0)
                if kind == "pv":
                    out.append(n)
    return out


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_default_config_compiles_clean(case):
    name, dtype, D, causal = case
    facts, launch = build(name, dtype, D, causal)
    ptx = facts.ptx
    kind = "bf16" if dtype == torch.bfloat16 else "f16"
    assert re.search(rf"wgmma\.mma_async\S*\.f32\.{kind}\.{kind}", ptx), "wgmma of the input dtype expected"
    assert "cp.async.bulk.tensor" in ptx, "TMA loads expected"
    assert facts.spills == 0 and facts.stack == 0, (facts.counts, facts.stack)
    assert facts.shared <= C.SMEM_LIMIT
    assert facts.counts["MUFU.EX2"] > 0
    if name != "triton_baseline":
        assert "mbarrier.try_wait" in ptx and "setmaxnreg" in ptx
        cfg = launch.kwargs
        assert facts.num_warps == 4 * (1 + cfg["NUM_GROUPS"])
        assert cfg["CONSUMER_REGS"] in facts.maxnreg
        assert "ttg.warp_specialize" in facts.ttgir


def _every_tlx_config() -> list[tuple]:
    """(variant, D, config, is a trial) for every TLX config and trial config that fits a head dim, one per
    compile (the persistent kernel's GROUP_HEADS and SNAKE are runtime arguments)."""
    out, seen = [], set()
    for name in A.TLX_MODULES:
        mod = A.MODULES[name]
        for D in (128, 64):
            for trial, cfgs in ((False, mod.CONFIGS), (True, getattr(mod, "TRIALS", []))):
                for cfg in C.configs_for(cfgs, D):
                    key = (name, D, C.config_name({k: v for k, v in cfg.items() if k not in ("GROUP_HEADS", "SNAKE")}))
                    if key not in seen:
                        seen.add(key)
                        out.append((name, D, cfg, trial))
    return out


EVERY = _every_tlx_config()


@pytest.mark.slow
@pytest.mark.parametrize("name,D,cfg,trial", EVERY,
                         ids=[f"{n}-d{D}-{C.config_name(c)}{'-trial' if t else ''}" for n, D, c, t in EVERY])
def test_every_tlx_config_compiles_without_spills(name, D, cfg, trial):
    """Causal bf16 (the longer kernel): no spills, within shared memory, the consumers' register budget set. The
    plain Triton baseline's default is held to the same above; its fastest config at D128 spills a few registers
    (tutorial 02, step 1) and stays in its list for its speed. A trial config (not yet run on a GPU) may spill a
    few values outside its KV loop (reloaded once per tile), never inside it: whether that costs anything is
    for the GPU to say before it moves into CONFIGS."""
    facts, _ = build(name, torch.bfloat16, D, True, cfg)
    if trial:
        assert facts.spills_in_mma_loops == 0 and facts.stack <= 64, (facts.counts, facts.stack)
    else:
        assert facts.spills == 0 and facts.stack == 0, (facts.counts, facts.stack)
    assert facts.shared <= C.SMEM_LIMIT
    assert cfg["CONSUMER_REGS"] in facts.maxnreg


def test_spills_in_mma_loops_counts_the_innermost_mma_loop_only():
    """A spill reloaded in the KV loop counts; one in the tile loop around it, or in an mbarrier retry stub after
    the task's EXIT that branches back into the loop, does not."""
    sass = "\n".join([
        "        /*0000*/  STL [R1], R0 ;",
        ".L_x_1:",  # tile loop
        "        /*0010*/  LDL R2, [R1] ;",
        ".L_x_2:",  # KV loop
        "        /*0020*/  HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24, gsb0 ;",
        "        /*0030*/  LDL R3, [R1+0x4] ;",
        "        /*0040*/  @!P0 BRA `(.L_x_9) ;",
        ".L_x_3:",
        "        /*0050*/  @P1 BRA `(.L_x_2) ;",
        "        /*0060*/  HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24, gsb0 ;",
        "        /*0070*/  @P2 BRA `(.L_x_1) ;",
        "        /*0080*/  EXIT ;",
        ".L_x_9:",  # the try-wait retry, placed after EXIT
        "        /*0090*/  LDL R4, [R1+0x8] ;",
        "        /*00a0*/  BRA `(.L_x_3) ;",
    ])
    assert CO.local_memory_in_mma_loops(sass) == 1


@pytest.mark.parametrize("name", ["ws_pipelined", "ws_pingpong", "ws_persistent"])
def test_softmax_overlaps_pv_product(name):
    """The loop's P V wgmma stays in flight across the softmax of the next block (no hoisted wait, no
    serialisation): each consumer's in-loop PV group sees a full block of exp2."""
    facts, launch = build(name)
    cfg = launch.kwargs
    per_block = cfg["BLOCK_M"] * cfg["BLOCK_N"] // 128  # exp2 per thread per KV block
    overlaps = pv_overlap(facts.sass)
    assert sum(n >= per_block for n in overlaps) >= cfg["NUM_GROUPS"], overlaps
    assert not any("Performance Loss" in w for w in CO.ptxas_warnings(facts.ptx))


def test_ws_waits_for_each_product():
    """Step (b) has no intra-warpgroup overlap: no P V group is in flight during a softmax."""
    facts, _ = build("ws")
    assert max(pv_overlap(facts.sass)) == 0


@pytest.mark.parametrize("name", ["ws_pingpong", "ws_persistent"])
def test_pingpong_named_barriers(name):
    sass = build(name)[0].sass
    assert re.search(r"BAR\.SYNC\S*\s+0x9, 0x100", sass) and re.search(r"BAR\.SYNC\S*\s+0xa, 0x100", sass)
    assert re.search(r"BAR\.ARV\s+0x9, 0x100", sass) and re.search(r"BAR\.ARV\s+0xa, 0x100", sass)


def test_pipelined_kernels_keep_their_waits():
    """Triton's pipeliner leaves the while-loop wgmmas alone: one wait with pendings=1 per consumer loop."""
    ttgir = build("ws_pipelined")[0].ttgir
    assert len(re.findall(r"warp_group_dot_wait .*pendings = 1", ttgir)) == 2  # one per consumer replica


def test_warp_release_drops_the_warpgroup_sync():
    """WARP_RELEASE: every consumer thread arrives on the ring's empty barriers, no bar.sync before it."""
    base = dict(C.configs_for(A.ws_pingpong.CONFIGS, 128)[0])
    plain = build("ws_pingpong", config=base)[0].ptx
    warp = build("ws_pingpong", config=dict(base, WARP_RELEASE=True))[0].ptx
    assert warp.count("bar.sync") < plain.count("bar.sync")


def test_persistent_grid_and_q_release():
    facts, launch = build("ws_persistent")
    assert launch.grid == (min(C.H200_SMS, 6 * 8),)  # 6 heads x cdiv(1000, 128) tiles
    assert facts.counts["UTMASTG"] >= 1


def test_configs_filter_by_head_dim():
    for mod in A.MODULES.values():
        for D in (64, 128):
            cfgs = C.configs_for(mod.CONFIGS, D)
            assert cfgs, (mod.__name__, D)
            assert all(C.fits(c, D) for c in cfgs)
    big = dict(BLOCK_M=128, BLOCK_N=64, NUM_GROUPS=2, NUM_BUFFERS=3, CONSUMER_REGS=240)
    assert C.fits(big, 64) and not C.fits(big, 128)


def test_problem_checks():
    q = torch.empty(1, 2, 10, 96, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="head dim"):
        C.problem(q, q, q, False, None)
    q = torch.empty(1, 2, 10, 64, dtype=torch.float32)
    with pytest.raises(TypeError):
        C.problem(q, q, q, False, None)
    q = torch.empty(1, 2, 10, 64, dtype=torch.bfloat16)
    k = torch.empty(1, 2, 12, 64, dtype=torch.bfloat16)
    p = C.problem(q, k, k, True, None)
    assert (p.S_q, p.S_kv, p.sm_scale) == (10, 12, 0.125)
    with pytest.raises(ValueError):
        C.problem(q, k, torch.empty(1, 2, 11, 64, dtype=torch.bfloat16), False, None)


def test_reference_matches_sdpa_on_cpu():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 33, 64, generator=g)
    k = torch.randn(1, 2, 47, 64, generator=g)
    v = torch.randn(1, 2, 47, 64, generator=g)
    for causal in (False, True):
        out, lse = C.reference(q, k, v, causal, with_lse=True)
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        assert torch.allclose(out, ref, atol=1e-5)
        s = (q @ k.transpose(-1, -2)) / 8.0
        if causal:
            s = s.masked_fill(~C.causal_mask(33, 47, "cpu"), float("-inf"))
        assert torch.allclose(lse, torch.logsumexp(s, -1), atol=1e-5)


def test_flops():
    assert C.attention_flops(4, 32, 4096, 4096, 128, False) == 4.0 * 4 * 32 * 4096 * 4096 * 128
    assert C.attention_flops(1, 1, 8, 8, 64, True) == 2.0 * 8 * 8 * 64


_SCHEDULE_PROBE = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
from tlx_kernels.attention.ws_persistent import tile_of

@triton.jit
def probe(out, nprog, num_m, BH, rounds, SNAKE, GH):
    pid = tl.program_id(0)
    for r in range(rounds):
        t, m, bh = tile_of(r, pid, nprog, num_m, BH, SNAKE, GH)
        base = (pid * rounds + r) * 3
        tl.store(out + base, t)
        tl.store(out + base + 1, m)
        tl.store(out + base + 2, bh)

res = {}
for nprog, num_m, BH, snake, gh in json.loads(sys.argv[1]):
    rounds = -(-num_m * BH // nprog)
    out = torch.full((nprog * rounds * 3,), -1, dtype=torch.int32)
    probe[(nprog,)](out, nprog, num_m, BH, rounds, snake, gh)
    res[f"{nprog},{num_m},{BH},{snake},{gh}"] = out.view(nprog, rounds, 3).tolist()
print(json.dumps(res))
"""


def test_persistent_schedule_covers_every_tile_once():
    """The device tile scheduler (run by Triton's interpreter): every tile exactly once, the longest first
    within a head group, and with SNAKE a causal workload balanced across CTAs."""
    import json
    import os
    import subprocess
    import sys

    cases = [(5, 7, 6, 1, 4), (5, 7, 6, 0, 4), (13, 8, 12, 1, 8), (13, 8, 12, 0, 8), (16, 3, 5, 1, 16)]
    env = dict(os.environ, TRITON_INTERPRET="1")
    res = subprocess.run([sys.executable, "-c", _SCHEDULE_PROBE, json.dumps(cases)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    spread = {}
    for nprog, num_m, BH, snake, gh in cases:
        rows = got[f"{nprog},{num_m},{BH},{snake},{gh}"]
        tiles = [tuple(x) for cta in rows for x in cta if x[0] < num_m * BH]
        assert sorted(t for t, _, _ in tiles) == list(range(num_m * BH))
        assert sorted((m, bh) for _, m, bh in tiles) == [(m, bh) for m in range(num_m) for bh in range(BH)]
        by_t = {t: (m, bh) for t, m, bh in tiles}
        for t in range(1, num_m * BH):  # within a head group the query tile index never grows
            if t // (gh * num_m) == (t - 1) // (gh * num_m):
                assert by_t[t][0] <= by_t[t - 1][0]
        work = [sum(m + 1 for t, m, _ in cta if t < num_m * BH) for cta in rows]  # causal: tile m has m+1 blocks
        spread[(nprog, num_m, BH, gh, snake)] = max(work) - min(work)
    assert spread[(13, 8, 12, 8, 1)] < spread[(13, 8, 12, 8, 0)]
