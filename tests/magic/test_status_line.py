"""A %%tlx cell says what it is doing while it works (issue 25: a cell sat 46 s with no output): in a real
Jupyter kernel, a status line appears under the cell (compiling, which stage); at the end it becomes the cell's
Report in place, or, when the cell failed, says what it was doing when it stopped."""

from __future__ import annotations

import pytest

jupyter_client = pytest.importorskip("jupyter_client")

MIME = "application/vnd.tlx-workbench.report+json"

CELL = '''%%tlx --compile-only
import torch
@triton.jit
def status_k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

import time
time.sleep(0.8)  # busy past the status line's half second before the compile starts
status_k[(4,)](torch.empty(4096), torch.empty(4096), 4096, BLOCK=1024)
'''


@pytest.mark.slow
def test_a_busy_cell_shows_what_it_does_then_clears_it(tmp_path, monkeypatch):
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path))  # a real compile, not a cache hit
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        kc.execute_interactive("%load_ext workbench", timeout=120)
        msgs: list[dict] = []
        reply = kc.execute_interactive(CELL, timeout=300, output_hook=msgs.append)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    shown = [m for m in msgs if m["msg_type"] == "display_data" and "tlx-status-line" in
             m["content"]["data"].get("text/html", "")]
    assert shown, [m["msg_type"] for m in msgs]
    did = shown[0]["content"]["transient"]["display_id"]
    said = [m["content"]["data"]["text/html"] for m in msgs
            if m["msg_type"] in ("display_data", "update_display_data")
            and m["content"].get("transient", {}).get("display_id") == did]
    assert any("compiling" in s for s in said), said
    # when the cell is done the line becomes its Report, in place: no empty output is left behind
    [last] = [m for m in msgs if m["msg_type"] == "update_display_data"
              and m["content"]["transient"]["display_id"] == did][-1:]
    assert MIME in last["content"]["data"] and "status_k" in last["content"]["data"]["text/plain"]
    assert not [m for m in msgs if m["msg_type"] == "display_data" and MIME in m["content"]["data"]], \
        "the Report was shown a second time"


@pytest.mark.slow
def test_a_failing_cell_says_what_it_was_doing_when_it_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path))
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        kc.execute_interactive("%load_ext workbench", timeout=120)
        msgs: list[dict] = []
        bad = CELL + "raise RuntimeError('boom')  # after the compile, which the line was showing\n"
        reply = kc.execute_interactive(bad, timeout=300, output_hook=msgs.append)
        assert reply["content"]["status"] == "error" and "boom" in reply["content"]["evalue"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    lines = [m["content"]["data"].get("text/html", "") for m in msgs
             if m["msg_type"] in ("display_data", "update_display_data")]
    assert lines and "stopped after" in lines[-1] and "(the error is below)" in lines[-1], lines

