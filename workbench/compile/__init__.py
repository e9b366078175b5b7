"""Compilation layer: any Triton, Gluon or TLX kernel plus example arguments -> Artifact, no GPU needed."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.ir.artifact import Artifact

__all__ = ["compile"]


def compile(kernel, *args, target: str = "sm_90", signature=None, config=None, **options) -> Artifact:  # noqa: A001
    """Compile ``kernel`` (``@triton.jit`` TLX or Triton, ``@gluon.jit``, or an autotuned/heuristics
    wrapper: ``config=`` picks the config, default the first) for ``target`` from launch-style
    ``args`` (CPU tensors and TensorDescriptors over them are enough) or a ``signature=``."""
    from workbench.compile.driver import compile_kernel

    return compile_kernel(kernel, *args, target=target, signature=signature, config=config, **options)
