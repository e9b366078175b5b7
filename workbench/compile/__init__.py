"""Compilation layer: any Triton, Gluon or TLX kernel plus example arguments -> Artifact."""

from __future__ import annotations

from workbench.compile.artifact import Artifact, Layouts, Metadata, SourceInfo

__all__ = ["Artifact", "Layouts", "Metadata", "SourceInfo", "compile"]


def compile(kernel, *args, target: str = "sm_90", signature=None, **options) -> Artifact:  # noqa: A001
    from workbench.compile.driver import compile_kernel

    return compile_kernel(kernel, *args, target=target, signature=signature, **options)
