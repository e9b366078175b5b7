"""Write extension/test/fixtures/tutorial_layouts.json, the layouts tests' data: every layout of the tutorials'
recorded Reports (bench/results/notebooks) and a few known cases, each with the linear layout Triton's C++
computes for it (workbench.analyse.layouts.linear_layouts, as a compile does).

    .venv/bin/python extension/scripts/layout_fixture.py
"""

from __future__ import annotations

import base64
import glob
import gzip
import json
from pathlib import Path

from triton.backends.compiler import GPUTarget

from workbench.analyse.layouts import linear_layouts, parse_layouts
from workbench.compile.triton_reach import linear_layouts as triton_linear

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "extension" / "test" / "fixtures" / "tutorial_layouts.json"
MIME = "application/vnd.tlx-workbench.report+json"
SM90 = GPUTarget("cuda", 90, 32)


def _nvmma(swizzle: int, transposed: bool = False) -> str:
    return (f"#ttg.nvmma_shared<{{swizzlingByteWidth = {swizzle}, transposed = {str(transposed).lower()}, "
            "elementBitWidth = 16}>")


def _swizzled(vec: int, max_phase: int) -> str:
    return f"#ttg.swizzled_shared<{{vec = {vec}, perPhase = 1, maxPhase = {max_phase}, order = [1, 0]}}>"


# name: (attribute, shapes, tensor or memdesc, dtype)
CASES = {
    "blocked": ("#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], "
                "order = [1, 0]}>", [[16, 64], [32, 64], [8, 64]], "tensor", "f16"),
    "blocked_col": ("#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 2], "
                    "order = [0, 1]}>", [[32, 8]], "tensor", "f16"),
    "mma_v3": ("#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], "
               "instrShape = [16, 64, 16]}>", [[64, 64], [128, 128]], "tensor", "f32"),
    "nvmma_128": (_nvmma(128), [[64, 64]], "memdesc", "f16"),
    "nvmma_64": (_nvmma(64), [[16, 64]], "memdesc", "f16"),
    "nvmma_0": (_nvmma(0), [[64, 64]], "memdesc", "f16"),
    "nvmma_128_t": (_nvmma(128, transposed=True), [[64, 64]], "memdesc", "f16"),
    "swizzled_8": (_swizzled(8, 8), [[64, 64]], "memdesc", "f16"),
    "swizzled_1": (_swizzled(1, 1), [[64, 64]], "memdesc", "f16"),
}


def _of(decls: str, types: list) -> list[dict]:
    return triton_linear(decls, types, SM90)


def _ttgir(report: dict) -> str | None:
    st = next((s for s in report["stages"] if s["name"] == "ttgir"), None)
    if st is None:
        return None
    return st.get("text") or gzip.decompress(base64.b64decode(st["text_gz"])).decode()


def tutorial_layouts() -> list[dict]:
    out, seen = [], set()
    for f in sorted(glob.glob(str(ROOT / "bench/results/notebooks/*.ipynb"))):
        if "isolation" in f:
            continue
        for c in json.loads(Path(f).read_text())["cells"]:
            for o in c.get("outputs", []):
                report = o.get("data", {}).get(MIME)
                text = _ttgir(report) if report else None
                if not text:
                    continue
                lay = parse_layouts(text)
                attr = {d.alias: d.attr for d in lay.declared}
                for e in linear_layouts(text, lay, _of):
                    key = (attr[e["alias"]], tuple(e["value_shape"]), e["dtype"])
                    if key not in seen:
                        seen.add(key)
                        out.append({"kernel": report["kernel"]["name"], "attr": attr[e["alias"]], **e})
    return out


def _dims(shape: list[int]) -> str:
    return "x".join(map(str, shape))


def cases() -> dict[str, dict]:
    out = {}
    for name, (attr, shapes, kind, dtype) in CASES.items():
        types = [(f"tensor<{_dims(s)}x{dtype}, #l>" if kind == "tensor"
                  else f"!ttg.memdesc<{_dims(s)}x{dtype}, #l, #smem, mutable>", s) for s in shapes]
        got = _of(f"#l = {attr}\n#smem = #ttg.shared_memory", types)
        for s, data in zip(shapes, got, strict=True):
            assert "reason" not in data, (name, data)
            bits = {"element_bits": 16} if kind == "memdesc" else {}
            out[f"{name} {_dims(s)}"] = {"attr": attr, "alias": "#l", "value_shape": s,
                                                      "dtype": dtype, **data, **bits}
    return out


if __name__ == "__main__":
    layouts = tutorial_layouts()
    OUT.write_text(json.dumps({"source": __doc__.splitlines()[0], "layouts": layouts, "cases": cases()},
                              separators=(",", ":")))
    print(f"{OUT.relative_to(ROOT)}: {len(layouts)} tutorial layouts")
