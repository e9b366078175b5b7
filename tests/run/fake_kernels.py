"""Stand-in "kernels" for a real worker process on a machine without a GPU.

The worker calls a ``callable`` kernel as ``fn(grid, *args)`` with the arguments rebuilt in the worker,
so these exercise the real process, socket, protocol and watchdog: one sleeps (a hang), one kills its
own process (a crash), one raises, one checks that the tensors arrived with the right values.
"""

from __future__ import annotations

import os
import signal
import time


def sleep_kernel(grid, seconds):
    time.sleep(seconds)


def crash_kernel(grid):
    os.kill(os.getpid(), signal.SIGSEGV)


def raise_kernel(grid, message):
    raise ValueError(message)


def fatal_kernel(grid):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


def check_kernel(grid, x, desc, scale, expected_sum, expected_block):
    """Raise unless the rebuilt tensor, descriptor and scalar are what the notebook sent."""
    got = float(x.double().sum())
    if abs(got - expected_sum) > 1e-6 * max(1.0, abs(expected_sum)):
        raise AssertionError(f"sum {got} != {expected_sum}")
    if list(desc.block_shape) != list(expected_block) or desc.base.data_ptr() == 0:
        raise AssertionError(f"descriptor {desc}")
    if float(desc.base.double().sum()) != float(desc.base.double().sum()):
        raise AssertionError("NaN in descriptor base")
    if not isinstance(scale, float):
        raise AssertionError(f"scale {scale!r}")
