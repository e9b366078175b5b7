"""The import rule of the layers (the README's design section), kept true: imports only go down, no module is part of
an import cycle, and no layer looks another up by name. And the code cites no design file outside the repository.

- the layers contract in pyproject.toml (import-linter, what ``make lint`` runs) holds, and names every
  subpackage of ``workbench`` (a new one outside it would be outside the rule);
- grimp (import-linter's graph) of ``workbench`` and ``tlx_kernels`` has no cycle between modules: every
  ``import`` counts, those inside functions and under ``TYPE_CHECKING`` too;
- no module of ``workbench`` imports one of its own by a string (``importlib.import_module("workbench...")``);
- outside ``compile/triton_reach.py`` and ``compile/plugin_reach.py`` (each reach there pinned by a test in
  ``tests/compile/``), no module imports a private module of Triton, uTLX or torch (``triton._C``,
  ``triton.runtime._allocation``, ``gluon._runtime``) or calls ``torch._...``.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("workbench", "tlx_kernels")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def _contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return layers


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every set of modules that import each other around (strongly connected components of two or more,
    and a module that imports itself), each sorted, biggest first."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            nxt = next(todo, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(edges[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    members.append(m)
                    if m == node:
                        break
                if len(members) > 1 or node in edges[node]:
                    found.append(sorted(members))
    return sorted(found, key=lambda c: (-len(c), c))


def _describe(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    lines = [" <-> ".join(cycle)]
    for a in cycle:
        for b in sorted(graph.find_modules_directly_imported_by(a)):
            if b in cycle:
                at = ", ".join(str(d["line_number"]) for d in graph.get_import_details(importer=a, imported=b))
                lines.append(f"    {a} imports {b} (line {at})")
    return "\n".join(lines)


def test_no_module_is_part_of_an_import_cycle(graph):
    found = cycles(graph)
    assert not found, "import cycles (move the shared code down to where both can import it):\n" + "\n".join(
        _describe(graph, c) for c in found)


def test_cycles_finds_a_cycle_of_three_and_a_module_importing_itself():
    g = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c", "p.d", "p.e"):
        g.add_module(m)
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d"), ("p.e", "p.e")):
        g.add_import(importer=a, imported=b)
    assert cycles(g) == [["p.a", "p.b", "p.c"], ["p.e"]]


def test_layers_contract_holds():
    from importlinter.cli import lint_imports

    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, "an import goes up the layers: `lint-imports` says which (output above)"


def test_every_subpackage_is_a_layer(graph):
    layers = _contract()["layers"]
    subpackages = {m for m in graph.find_children("workbench") if (ROOT / m.replace(".", "/")).is_dir()}
    assert subpackages == set(layers), "each subpackage of workbench/ is one layer of the contract in pyproject.toml"


def test_no_layer_is_imported_by_name():
    """``importlib.import_module("workbench.check")`` in a try/except hides a broken import as a missing layer;
    a plain import fails where it breaks (and the graph above sees it)."""
    found = []
    for path in sorted((ROOT / "workbench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in
                    ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)
                    and str(node.args[0].value).startswith("workbench")):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "\n".join(found)


REACH_MODULES = {"workbench/compile/triton_reach.py", "workbench/compile/plugin_reach.py"}
_THIRD_PARTY = ("triton", "torch")


def _private_reaches(tree: ast.AST) -> list[tuple[int, str]]:
    def private(dotted: str) -> bool:
        parts = dotted.split(".")
        return parts[0] in _THIRD_PARTY and any(p.startswith("_") and not p.startswith("__") for p in parts[1:])

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            hit = next((n for n in [node.module, *(f"{node.module}.{a.name}" for a in node.names)] if private(n)), None)
            found += [(node.lineno, hit)] if hit else []
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if private(a.name)]
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in _THIRD_PARTY
              and private(f"{node.value.id}.{node.attr}")):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return found


def test_private_reaches_find_what_they_should():
    code = ("from triton._C.libtriton import ir\nfrom triton.runtime import _allocation\nimport torch._dynamo\n"
            "x = torch._scaled_mm(a, b)\nfrom triton.runtime.jit import JITFunction\ny = torch.__version__\n")
    assert [n for _, n in _private_reaches(ast.parse(code))] == [
        "triton._C.libtriton", "triton.runtime._allocation", "torch._dynamo", "torch._scaled_mm"]


def test_private_reaches_only_in_the_reach_modules():
    found = []
    for path in sorted((ROOT / "workbench").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel not in REACH_MODULES:
            found += [f"{rel}:{line}: {name}" for line, name in _private_reaches(ast.parse(path.read_text(), rel))]
    assert not found, ("reaches into private internals belong in workbench/compile/triton_reach.py (Triton, torch) "
                       "or plugin_reach.py (uTLX), each with a pinning test in tests/compile/:\n" + "\n".join(found))


def test_nothing_cites_a_document_outside_the_repository():
    """The design and the TLX facts are the README's sections: a docstring naming DESIGN.md or TLX.md (the team's
    shared notes, not in the repository) points a reader nowhere."""
    cited = []
    for folder in ("workbench", "kernels", "tests", "bench", "testbed", "extension/src"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".ts", ".toml") and "node_modules" not in path.parts and path != Path(__file__):
                text = path.read_text(errors="replace")
                cited += [f"{path.relative_to(ROOT)}: {w}" for w in ("DESIGN.md", "TLX.md", "../shared") if w in text]
    cited += [f"pyproject.toml: {w}" for w in ("DESIGN.md", "TLX.md") if w in (ROOT / "pyproject.toml").read_text()]
    assert not cited, cited


def test_test_files_have_unique_names():
    """pytest imports test modules by their basename (no __init__.py in tests/): two of one name fail collection."""
    from collections import Counter
    from pathlib import Path

    names = Counter(p.name for p in Path(__file__).parent.rglob("test_*.py"))
    assert not [n for n, c in names.items() if c > 1]


def test_no_test_imports_a_bench_script():
    """What the benches and the tests share lives in testbed/ (cases, op sets, where results are kept); a test that
    loads a script of bench/ (by import with bench/ on sys.path, or from its file, or through a fixture that loads
    bench/ files by path) is new coupling to remove: the logic a bench needs lives in the package (the family runner,
    ``workbench.measure.family``) or the kernel library (the families) and is tested there."""
    import re

    scripts = {p.stem for p in (ROOT / "bench").glob("*.py")}
    loaded: dict[str, set[str]] = {}
    for path in (ROOT / "tests").rglob("*.py"):
        text = path.read_text(errors="replace")
        names = set(re.findall(r"^\s*(?:from|import)\s+(\w+)", text, re.M))
        names |= set(re.findall(r'"bench"\s*/\s*"(\w+)\.py"', text))
        if path.name != Path(__file__).name and re.search(r'/ "bench"\s*($|\))', text, re.M):
            names |= scripts  # a path to bench/ itself: a loader of its scripts (a fixture, a sys.path entry)
        for name in names & scripts:
            loaded.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    assert not loaded, loaded


def test_every_file_a_bench_script_names_exists():
    """A bench script's ``ROOT / "dir" / "file.py"`` (cases, notebooks) names a file of this tree: the move of the
    shared cases to testbed/ left bench/evaluate.py pointing at bench/judge_cases.py, found on the GPU only."""
    import re

    missing = []
    for path in (ROOT / "bench").glob("*.py"):
        for parts in re.findall(r'ROOT((?:\s*/\s*"[\w.-]+")+)', path.read_text()):
            rel = Path(*re.findall(r'"([\w.-]+)"', parts))
            if rel.suffix in (".py", ".ipynb") and not (ROOT / rel).exists():
                missing.append(f"{path.name}: {rel}")
    assert not missing, missing


def test_every_report_is_built_in_one_place():
    """The magic, the corpus, a search's candidates and the walkthroughs build their Reports through
    ``workbench.report.build`` (the sections the options ask for, the findings, a search's rows in one call):
    nothing else in the package or the kernel library calls ``Report.from_artifact``."""
    found = []
    for path in sorted([*(ROOT / "workbench").rglob("*.py"), *(ROOT / "kernels").rglob("*.py")]):
        if path == ROOT / "workbench" / "report" / "build.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "from_artifact" and isinstance(node.ctx, ast.Load) \
                    and isinstance(node.value, ast.Name) and node.value.id == "Report":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, "\n".join(found)
