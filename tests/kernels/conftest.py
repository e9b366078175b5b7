from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="session")
def bench_module():
    """Loads ``bench/<name>.py`` as a module (bench/ on sys.path: the scripts import their siblings)."""

    def load(name: str):
        if str(BENCH) not in sys.path:
            sys.path.insert(0, str(BENCH))
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
        return module

    return load
