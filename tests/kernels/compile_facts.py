"""What the compile-only tests of the kernel library read off a compiled kernel, one reader for all of them."""

from __future__ import annotations

import re


def facts(art) -> dict:
    """Spills, local-memory instructions, shared memory, HGMMA count, the wgmma waits' pending counts, the
    register budgets set per warp group (``setmaxnreg``) and the global-scratch allocations (device-built TMA
    descriptors) of a compiled ``Artifact``."""
    ptx, sass = art.stages["ptx"], art.stages.get("sass", "")
    return dict(
        spills=(art.metadata.spill_stores or 0) + (art.metadata.spill_loads or 0),
        local=len(re.findall(r"\b(?:LDL|STL)\b", sass)),
        smem=art.metadata.shared_bytes,
        hgmma=sass.count("HGMMA"),
        waits=re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", ptx),
        maxnreg=[int(x) for x in re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx)],
        scratch=art.stages["ttgir"].count("ttg.global_scratch_alloc"),
    )
