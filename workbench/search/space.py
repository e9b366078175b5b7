"""The candidates of a search: a space of configs made concrete for one launch.

A space is a list of configs (dicts or ``triton.Config``s), a dict of lists (their cartesian product), a string
``"BM=[64,128] BN=[128,256]"`` (the ``%%tlx --search`` form), or ``None`` for a ``triton.autotune``-wrapped
kernel, which brings its own configs, ``prune_configs_by`` and ``pre_hook``: those are applied as Triton's
autotuner would (early prune with the launch's named arguments, then the perf model's top k). Each config's
keys must be the kernel's parameters or launch options (``num_warps``, ``num_stages``, ...).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import ArgumentError

__all__ = ["LAUNCH_OPTIONS", "Candidate", "SearchSpaceError", "config_dict", "configs_of", "parse_space", "tuner_parts"]

# what a launch takes besides the kernel's parameters (Triton's and uTLX's options)
LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg", "ir_override", "ctas_per_cga",
                            "enable_fp_fusion", "launch_cooperative_grid", "launch_pdl", "debug",
                            "minRegAutoWS", "maxRegAutoWS", "pingpongAutoWS"})


class SearchSpaceError(ArgumentError):
    """The space cannot be searched as given (empty, malformed, or naming what the kernel does not take)."""


@dataclass
class Candidate:
    """One config of the space, made concrete: ``options`` are what a launch passes besides the arguments."""

    index: int
    config: dict[str, Any]  # as the user wrote it (a triton.Config: its kwargs and launch options)
    options: dict[str, Any] = field(default_factory=dict)
    pre_hook: Callable[..., Any] | None = None
    blocks: dict[str, tuple[int, ...]] = field(default_factory=dict)  # descriptor block shapes after the pre_hook
    grid: tuple[int, ...] | None = None
    error: str | None = None  # what went wrong making it concrete (its row says so; nothing else is lost)
    delay: tuple[int, int, float] | None = None  # a stress run's delayed build: (seed, max_ns, share)

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.config.items())


def parse_space(text: str) -> dict[str, list[Any]]:
    """``"BM=[64,128] BN=[128,256] NUM_STAGES=[3,4] EPI=True"`` -> a dict of lists."""
    out: dict[str, list[Any]] = {}
    pos = 0
    pattern = re.compile(r"([A-Za-z_]\w*)\s*=\s*")
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        m = pattern.match(text, pos)
        if m is None:
            raise SearchSpaceError(f"--search {text!r}: expected NAME=[values] at {text[pos:pos + 20]!r}",
                                   hint='write e.g. --search "BM=[64,128] BN=[128,256] NUM_STAGES=[3,4]"')
        name, pos = m.group(1), m.end()
        value, pos = _value_at(text, pos, name)
        out[name] = value if isinstance(value, list) else [value]
    if not out:
        raise SearchSpaceError("--search: the space is empty", hint='write e.g. --search "BM=[64,128] BN=[128,256]"')
    return out


def _value_at(text: str, pos: int, name: str) -> tuple[Any, int]:
    depth, end, quote = 0, pos, ""
    while end < len(text) and (depth or quote or not text[end].isspace()):
        c = text[end]
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        else:
            depth += 1 if c in "[(" else -1 if c in "])" else 0
        end += 1
    src = text[pos:end]
    try:
        return ast.literal_eval(src), end
    except (ValueError, SyntaxError):
        raise SearchSpaceError(f"--search: the values of {name} ({src!r}) are not a Python literal",
                               hint=f"write {name}=[v1,v2] with numbers, True/False or quoted strings") from None


def _expand(space: Mapping[str, Iterable[Any]] | Iterable[Any]) -> list[Any]:
    import itertools

    if isinstance(space, Mapping):
        keys = list(space)
        values = [[v] if isinstance(v, str | bytes) or not isinstance(v, Iterable) else list(v)
                  for v in space.values()]
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]
    return list(space)


def config_dict(cfg: Any) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """(config as shown, launch options, pre_hook) of a dict or a triton.Config."""
    if isinstance(cfg, Mapping):
        return dict(cfg), dict(cfg), None
    if hasattr(cfg, "all_kwargs") and hasattr(cfg, "kwargs"):
        opts = dict(cfg.all_kwargs())
        shown = dict(cfg.kwargs) | {k: v for k, v in opts.items() if k not in cfg.kwargs and k != "ir_override"}
        return shown, opts, getattr(cfg, "pre_hook", None)
    raise SearchSpaceError(f"a config must be a dict or a triton.Config, not {type(cfg).__name__}: {cfg!r}")


def tuner_parts(kernel: Any) -> dict[str, Any] | None:
    """An autotuner's configs, pruning and hooks (None for a kernel that is not autotuned)."""
    from triton.runtime.autotuner import Autotuner

    k = kernel
    for _ in range(8):
        if isinstance(k, Autotuner):
            return {"tuner": k, "configs": list(k.configs), "early_prune": k.early_config_prune,
                    "perf_model": k.perf_model, "top_k": k.configs_top_k,
                    "pre_hook": k.pre_hook if k.user_defined_pre_hook else None}
        k = getattr(k, "fn", None)
        if k is None:
            return None
    return None


def _prune(parts: dict[str, Any], configs: list[Any], named: dict[str, Any], kwargs: dict[str, Any]) -> list[Any]:
    """What ``Autotuner.prune_configs`` keeps for this launch."""
    if parts["early_prune"] is not None:
        configs = list(parts["early_prune"](configs, named, **kwargs))
        if not configs:
            raise SearchSpaceError("the autotuner's early_config_prune kept no config for this launch")
    model, top_k = parts["perf_model"], parts["top_k"]
    if model is not None:
        if isinstance(top_k, float) and top_k <= 1.0:
            top_k = int(len(parts["configs"]) * top_k)
        if len(configs) > top_k:
            est = {i: model(**named, **kwargs, **c.all_kwargs()) for i, c in enumerate(configs)}
            configs = [configs[i] for i in sorted(est, key=est.get)[:top_k]]
    return configs


def configs_of(kernel: Any, space: Any, params: list[str], named: dict[str, Any],
               kwargs: dict[str, Any]) -> list[Candidate]:
    """The candidates, in order; raises ``SearchSpaceError`` for an empty space or a key the kernel lacks."""
    parts = tuner_parts(kernel)
    if isinstance(space, str):
        space = parse_space(space)
    if space is None:
        if parts is None:
            raise SearchSpaceError("no space given and the kernel is not autotuned",
                                   hint="pass a list of configs or a dict of lists, e.g. {'BM': [64, 128]}")
        configs = _prune(parts, parts["configs"], named, kwargs)
    else:
        configs = _expand(space)
    if not configs:
        raise SearchSpaceError("the search space is empty", hint="give at least one config")
    out = []
    for i, cfg in enumerate(configs):
        shown, opts, hook = config_dict(cfg)
        unknown = [k for k in opts if k not in params and k not in LAUNCH_OPTIONS]
        if unknown:
            raise SearchSpaceError(f"config {i} ({shown}) sets {', '.join(map(repr, unknown))}, which the kernel "
                                   f"does not take", hint=f"its parameters: {', '.join(params)}; launch options: "
                                   "num_warps, num_stages, num_ctas, maxnreg")
        clash = sorted(set(opts) & set(kwargs))
        if clash:
            raise SearchSpaceError(f"config {i} sets {', '.join(clash)}, which the call also passes",
                                   hint="leave searched parameters out of the call's keyword arguments")
        out.append(Candidate(i, shown, opts, hook))
    return out
