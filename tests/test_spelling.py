"""Every message a user reads is written in the code (errors, findings, hints, diagnostics, the viewer's
labels): codespell over it, with the project's few domain words allowed (pyproject.toml [tool.codespell])."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["workbench", "kernels/tlx_kernels", "bench", "testbed", "extension/src", "tests", "README.md", "Makefile"]


def test_no_misspelled_words_in_the_code_and_its_messages():
    exe = shutil.which("codespell", path=str(Path(sys.executable).parent)) or shutil.which("codespell")
    if exe is None:
        pytest.fail("codespell is not installed: it is a dev dependency (pip install -e '.[dev]')")
    out = subprocess.run([exe, *PATHS], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"codespell found:\n{out.stdout}{out.stderr}"
