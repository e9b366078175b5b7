"""The public ``attention`` calls: the kernel and config (tuned once per problem), then the launch, cached per
call (:mod:`tlx_kernels.launch`): a repeated call with the same layouts costs a key, a lookup and Triton's C
launcher; ``graph=True`` replays a CUDA graph captured for the call's tensors.

A launch whose kernel writes a padded output (``S_q`` not a multiple of its query tile) and copies it out is not
cached (its plan would skip the copy): it takes the general path every time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tlx_kernels import launch as L
from tlx_kernels.attention import common as C
from tlx_kernels.hopper import require_sm90

# choose(q, k, v, causal, sm_scale) -> (prepare, config): the module's prepare and the config to launch with
Chooser = Callable[[Any, Any, Any, bool, "float | None"], tuple[Callable[..., C.Launch], dict[str, Any]]]


def call_key(q, k, v, causal: bool, sm_scale: float | None, out, lse, return_lse: bool) -> tuple:
    """What a cached launch depends on: the inputs' and outputs' layouts, the mask, the scale, the lse."""
    return (L.layout(q), L.layout(k), L.layout(v), bool(causal), sm_scale, L.layout(out), L.layout(lse),
            bool(return_lse))


class Attention:
    """``attention(q, k, v, causal, sm_scale, out=None, lse=None, return_lse=False, graph=False)`` over a chooser."""

    def __init__(self, choose: Chooser) -> None:
        self.choose = choose
        self.plans, self.graphs = L.Plans(), L.Graphs()

    def __call__(self, q, k, v, causal: bool = False, sm_scale: float | None = None, *, out=None, lse=None,
                 return_lse: bool = False, graph: bool = False):
        key = call_key(q, k, v, causal, sm_scale, out, lse, return_lse)
        if graph:
            L.need_outputs("attention", out=out, **({"lse": lse} if return_lse else {}))
            self.graphs.replay(key, (q, k, v, out, lse),
                               lambda: self(q, k, v, causal, sm_scale, out=out, lse=lse, return_lse=return_lse),
                               "attention")
            return (out, lse) if return_lse else out
        if self.plans.get(key) is not None:  # then the inputs were checked when it was made
            o, lse_, _ = C.outputs(q, out, lse, return_lse)
            if self.plans.launch(key, (q, k, v, o, lse_)):
                return (o, lse_) if return_lse else o
        require_sm90("attention", q, k, v)
        prepare, cfg = self.choose(q, k, v, causal, sm_scale)
        launch = prepare(q, k, v, causal, cfg, sm_scale, out, lse, want_lse=return_lse)
        launch.run()
        self.plans.offer(key, launch.kernel, launch.compiled, launch.args, launch.kwargs, launch.grid,
                         (q, k, v, launch.out, launch.lse))
        return (launch.out, launch.lse) if return_lse else launch.out


def module_calls(prepare: Callable[..., C.Launch], configs: list[dict[str, Any]],
                 tuner: C.Tuner) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``launch`` and ``attention`` of one kernel module: one launch of a config, and the public call tuned over the
    ``configs`` that fit the head dim, per problem."""

    def choose(q, k, v, causal, sm_scale):
        p = C.problem(q, k, v, causal, sm_scale)
        cands = [(C.config_name(c), c) for c in C.configs_for(configs, p.D)]
        return prepare, tuner.pick(p.key(), cands, lambda c: prepare(q, k, v, causal, c, sm_scale).run())

    tuned = Attention(choose)

    def launch(q, k, v, causal: bool = False, config: dict[str, Any] | None = None, sm_scale: float | None = None,
               out=None, lse=None):
        """One launch with ``config`` (default: the first of the module's ``CONFIGS`` that fits the head dim);
        returns ``out``."""
        return prepare(q, k, v, causal, config, sm_scale, out, lse).run()

    def attention(q, k, v, causal: bool = False, sm_scale: float | None = None, *, out=None, graph: bool = False):
        """Tuned over the module's ``CONFIGS`` that fit the head dim, on first use per problem size; repeated calls
        launch from a cache (:mod:`tlx_kernels.attention.calls`; ``graph=True`` with ``out``: a CUDA graph)."""
        return tuned(q, k, v, causal, sm_scale, out=out, graph=graph)

    attention.plans = tuned.plans  # type: ignore[attr-defined]  # the cached launches, for benches and tests
    return launch, attention


__all__ = ["Attention", "Chooser", "call_key", "module_calls"]
