"""The tutorials as committed are valid nbformat (a kernelspec without ``display_name`` made Jupyter log "Notebook
JSON is invalid" and open them modified and untrusted), and the checkout's nbstripout filter keeps them so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((ROOT / "tutorials").glob("*.ipynb"))


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_every_tutorial_is_valid_nbformat(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3" and nb.metadata.kernelspec.display_name


def test_the_strip_filter_keeps_a_valid_notebook(tmp_path):
    nbstrip = next(line.split(":=", 1)[1].strip() for line in (ROOT / "Makefile").read_text().splitlines()
                   if line.startswith("NBSTRIP :="))
    src = TUTORIALS[0].read_text()
    cmd = f"{sys.executable} -m nbstripout {nbstrip}"
    out = subprocess.run(cmd, shell=True, input=src, capture_output=True, text=True, timeout=120, check=True).stdout
    nbformat.validate(nbformat.reads(out, as_version=4))
