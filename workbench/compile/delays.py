"""Builds with pseudo-random delays before the orchestration's synchronisation points, so that a race shows.

A race between warps (a slot released before it is read, a missing wait) often gives the right output in every
plain run: the schedule that exposes it never comes. CUTracer's ``random_delay`` makes it come by sleeping before
mbarrier waits and arrives, TMA and MMA instructions; ``delayed(seed)`` does the same on the compile's PTX,
through the stages hook (``stages_hook.chained``; the user's source is untouched): before every

- mbarrier wait (``mbarrier.try_wait`` / ``test_wait``) and arrive (``mbarrier.arrive*``, expect-tx included),
- TMA copy (``cp.async.bulk.tensor``), async dot wait (``wgmma.wait_group``),
- named-barrier sync or arrive (``bar.sync`` / ``bar.arrive`` / ``barrier.*``),

and *after* every mbarrier arrive (kind ``after-arrive``): a sleep there holds the arriving warps back after they
released a slot, so that a read the code makes after its release (a slot released too early) meets the producer's
next copy (a sleep before the arrive only gives the read more time),

each *site* that the seed enables (``share`` of them, a different subset per seed, so that a race can be pinned to
the delays that make it show) gets a ``nanosleep`` of a per-thread pseudo-random length below ``max_ns`` (from the
SM clock, mixed with a per-site salt). Each site is named by its kind and the user's line: its TTGIR op's where
``DelayPlan.read`` gets the TTGIR, else the PTX's ``.loc`` before it.
The seed is part of the cache key: every seed is a build of its own.
"""

from __future__ import annotations

import contextlib
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from workbench.compile.stages_hook import chained

__all__ = ["Site", "DelayPlan", "delayed", "insert_delays"]

KINDS: list[tuple[str, re.Pattern[str]]] = [
    ("wait", re.compile(r"^\s*(?:@!?%?\w+\s+)?mbarrier\.(?:try_wait|test_wait)\b")),
    ("arrive", re.compile(r"^\s*(?:@!?%?\w+\s+)?mbarrier\.arrive")),
    ("tma", re.compile(r"^\s*(?:@!?%?\w+\s+)?cp\.async\.bulk\.tensor\b")),
    ("dot-wait", re.compile(r"^\s*(?:@!?%?\w+\s+)?wgmma\.wait_group\b")),
    ("named-barrier", re.compile(r"^\s*(?:@!?%?\w+\s+)?(?:bar|barrier)(?:\.cta)?\.(?:sync|arrive|red)\b")),
]
AFTER = {"arrive": "after-arrive"}  # kinds that also get a site right after the instruction
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+")
_ENTRY = re.compile(r"^\s*\.(?:visible\s+)?\.entry\s+(\w+)")


@dataclass
class Site:
    """One synchronisation point of the PTX: its kind, the user's line (None: not known), whether it sleeps."""

    index: int
    kind: str
    line: int | None
    ptx_line: int
    delayed: bool
    salt: int


@dataclass
class DelayPlan:
    """What a delayed build inserted: its seed, the longest sleep, and every site (delayed or not)."""

    seed: int
    max_ns: int
    share: float
    sites: list[Site] = field(default_factory=list)

    @property
    def delayed(self) -> list[Site]:
        return [s for s in self.sites if s.delayed]

    def read(self, ptx: str, filename: str | None = None, ttgir: str | None = None) -> DelayPlan:
        """The sites of a build made under this plan, from its PTX (the compile may have run in a child process,
        where the rewrite listed them); with its TTGIR, each site's line is its TTGIR op's (``_ttgir_lines``)."""
        self.sites.clear()
        insert_delays(ptx, self, filename, insert=False)
        if ttgir:
            _ttgir_lines(self.sites, ttgir, filename)
        return self

    def key(self) -> str:
        return f"workbench-delays-v2 seed={self.seed} max_ns={self.max_ns} share={self.share}"


def insert_delays(ptx: str, plan: DelayPlan, filename: str | None = None, *, insert: bool = True) -> str:
    """``ptx`` with a sleep before each site the plan's seed enables; the sites are added to ``plan.sites``.
    ``filename``: the kernel's file, whose ``.loc`` lines name the sites (else the first file the PTX declares).
    ``insert=False`` only lists the sites (of a delayed build's PTX: the sleeps it holds are not sites)."""
    lines = ptx.splitlines()
    files = dict(m.groups() for m in map(_FILE.match, lines) if m)  # declared at the end of Triton's PTX
    ours = {i for i, name in files.items() if name == filename} if filename else set(sorted(files, key=int)[:1])
    out: list[str] = []
    line: int | None = None
    mask = (1 << max(plan.max_ns.bit_length(), 1)) - 1
    for n, text in enumerate(lines, 1):
        m = _LOC.match(text)
        if m and m.group(1) in ours:
            line = int(m.group(2))
        if _ENTRY.match(text):
            line = None
        kind = next((k for k, rx in KINDS if rx.match(text)), None)
        if kind is not None and (site := _site(plan, kind, line, n)).delayed and insert:
            out.extend(_sleep(site, mask, plan.max_ns))
        out.append(text)
        if kind in AFTER and (site := _site(plan, AFTER[kind], line, n)).delayed and insert:
            out.extend(_sleep(site, mask, plan.max_ns))
    return "\n".join(out) + ("\n" if ptx.endswith("\n") else "")


def _site(plan: DelayPlan, kind: str, line: int | None, ptx_line: int) -> Site:
    """The plan's next site (whether the seed delays it, and its salt, drawn from the seed and its index)."""
    rng = random.Random(plan.seed * 1_000_003 + len(plan.sites))
    site = Site(len(plan.sites), kind, line, ptx_line, rng.random() < plan.share, rng.getrandbits(31) | 1)
    plan.sites.append(site)
    return site


_TTGIR_KINDS = {"ttng.wait_barrier": "wait", "ttng.barrier_expect": "arrive", "ttng.arrive_barrier": "arrive",
                "ttng.async_tma_copy_global_to_local": "tma", "ttng.async_tma_copy_local_to_global": "tma",
                "ttng.warp_group_dot_wait": "dot-wait"}


def _ttgir_lines(sites: list[Site], ttgir: str, filename: str | None) -> None:
    """Name each site by the line of its TTGIR op. The PTX's ``.loc`` before an inline-asm wait loop is often a
    neighbour's (measured: the ring's first wait at the consumer's ``with`` line), but the ops keep their order
    from TTGIR (default region, then each partition) to PTX: where a kind has as many sites as TTGIR ops, the
    n-th site is the n-th op; where LLVM unrolled a loop into more sites, the nearest op line at or before the
    site's own."""
    from workbench.ir.mlir import parse_ttgir, walk

    ops: dict[str, list[int | None]] = {}
    for op in walk(parse_ttgir(ttgir).regions[0]):
        kind = _TTGIR_KINDS.get(op.name)
        if kind:
            own = [loc.line for loc in op.locs if filename is None or loc.file == filename]
            ops.setdefault(kind, []).append(own[0] if own else None)
    for kind, after in AFTER.items():
        if kind in ops:
            ops[after] = ops[kind]
    for kind, lines in ops.items():
        mine = [s for s in sites if s.kind == kind]
        if len(mine) == len(lines):
            for s, line in zip(mine, lines, strict=True):
                s.line = line if line is not None else s.line
            continue
        # LLVM unrolled a loop (more sites than ops): a site whose line is no op's of its kind takes the nearest
        # such op's line at or before it (the neighbour's line it carries is after its own: the next statement,
        # the next task's `with`, the loop's last line)
        known = sorted({ln for ln in lines if ln is not None})
        for s in mine:
            if s.line is not None and s.line not in known:
                s.line = max((ln for ln in known if ln <= s.line), default=s.line)


def _sleep(site: Site, mask: int, max_ns: int) -> list[str]:
    """A sleep of a per-thread pseudo-random length below ``max_ns``: the SM clock times a per-site salt."""
    return [
        f"\t{{ // workbench delay: site {site.index} ({site.kind}, line {site.line})",
        "\t.reg .b32 %wbdly<2>;",
        "\tmov.u32 \t%wbdly0, %clock;",
        f"\tmul.lo.u32 \t%wbdly0, %wbdly0, {site.salt};",
        "\tshr.u32 \t%wbdly1, %wbdly0, 7;",
        f"\tand.b32 \t%wbdly1, %wbdly1, {mask};",
        f"\tmin.u32 \t%wbdly1, %wbdly1, {max_ns};",
        "\tnanosleep.u32 \t%wbdly1;",
        "\t}",
    ]


@contextlib.contextmanager
def delayed(seed: int, max_ns: int = 2000, share: float = 0.5, filename: str | None = None) -> Iterator[DelayPlan]:
    """Compiles inside the block are delayed builds (see the module's docstring); ``plan.read(artifact's PTX)``
    lists a build's sites."""
    plan = DelayPlan(seed, int(max_ns), float(share))

    def rewrite(ptx: str, metadata: object) -> str:
        plan.sites.clear()
        return insert_delays(ptx, plan, filename)

    with chained(plan.key(), {"ptx": rewrite}):
        yield plan
