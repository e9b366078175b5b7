"""The tests' one stand-in for Triton's active driver on a machine without a GPU (``triton_reach.active_driver``
makes it active for a block): it answers what the JIT and Triton's compile path ask of the driver.

``StandInDriver()`` targets sm_90 as the "cuda" backend (``JITFunction.warmup`` compiles for it); with
``backend="standin"``, code that asks ``is_cuda()`` of the target is told no, so it calls nothing of ``torch.cuda``.
"""

from __future__ import annotations

import torch
from triton.backends.compiler import GPUTarget


class StandInDriver:
    def __init__(self, backend: str = "cuda", arch: int = 90) -> None:
        self.target = GPUTarget(backend, arch, 32)

    def get_current_target(self) -> GPUTarget:
        return self.target

    def get_active_torch_device(self) -> torch.device:
        return torch.device("cpu")

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0
