"""Before launch: does each arm's context depth fit the machine? (the modes that fit depth, quality and bench,
where depth is the point of the recipe and a run that cannot allocate its KV cache measures nothing.)

The estimate is memfit's (weights plus KV cache at the arm's context: -c, or for llama-bench -p + -n + -d). On a
CUDA build it is weighed against free GPU memory (memfit's own verdict), on a CPU build against available RAM.
Arms that do not fit are all named at once and nothing starts (exit 37).
"""

from __future__ import annotations

import psutil

from orchestrator.build.finished import Build
from orchestrator.errors import ContextDoesNotFit
from orchestrator.models import memfit
from orchestrator.parse.modes import Mode
from orchestrator.recipe.argv import flag_value
from orchestrator.run.prepare import PreparedArm

GIB = 2**30


def bench_context(argv: list[str]) -> int:
    """The context one llama-bench test fills: its prompt, generated tokens and depth (largest of each list)."""

    def largest(flags: tuple[str, ...]) -> int:
        value = flag_value(argv, flags)
        return max((int(v) for v in str(value).split(",") if v.strip().isdigit()), default=0) if value else 0

    return largest(("-p", "--n-prompt")) + largest(("-n", "--n-gen")) + largest(("-d", "--n-depth"))


def estimate(p: PreparedArm, mode: Mode) -> memfit.MemFit | None:
    if not p.models or not p.models.target or p.stop_reason:
        return None
    argv = list(p.executed)
    if mode.bench_tests:  # its context is what its tests fill
        argv += ["-c", str(bench_context(argv))]
    try:
        return memfit.from_argv(
            argv, p.models.target, p.models.draft, free_bytes=p.memfit.free_bytes if p.memfit else None
        )
    except ValueError:  # a cache type memfit cannot read: no estimate rather than no run
        return None


def check(prepared: list[PreparedArm], build: Build, mode: Mode, available: int | None = None) -> None:
    """ContextDoesNotFit naming every arm whose weights and KV cache exceed the memory it would run in."""
    cpu = not build.cuda
    available = available if available is not None else psutil.virtual_memory().available
    refused = []
    for p in prepared:
        fit = estimate(p, mode)
        if fit is None:
            continue
        need = sum(m.weight_bytes + m.kv_bytes for m in fit.models)
        if cpu and need > available:
            refused.append(
                f"{p.arm.name} needs {need / GIB:.1f} GiB (KV cache {fit.models[0].kv_bytes / GIB:.1f} "
                f"GiB) but {available / GIB:.1f} GiB of RAM is available"
            )
        elif not cpu and fit.fits is False:
            refused.append(f"{p.arm.name}: {fit.warning}")
    if refused:
        raise ContextDoesNotFit(
            f"{len(refused)} arm(s) do not fit this machine at their context depth, so nothing "
            f"was started: {'; '.join(refused)}; lower the depth, quantize the KV cache "
            f"(-ctk/-ctv q8_0) or drop those arms"
        )
