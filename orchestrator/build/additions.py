"""Adding a target orch now needs (llama-quantize, llama-perplexity, ...) to a cached build that lacks it.

The configured tree is compiled for the missing targets only: no reconfigure, no other object rebuilt, the
build keeps its id (stored runs still point at it) and the existing binaries are untouched. What was added,
when, and how long it took is appended to build.json ("additions") and the stamp lists the new targets.
A dry run first: if ninja would recompile anything besides the new tools (a re-run of CMake, the library),
orch refuses instead of silently rebuilding, and names the --force command that does it openly.
"""

from __future__ import annotations

import fcntl
import os
import sys
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from orchestrator import proc
from orchestrator.build import options
from orchestrator.errors import BuildFailed

LOCK = "orch-add.lock"


def missing_targets(bdir: Path, built: list[str]) -> list[str]:
    """WANTED_TARGETS the configured tree defines but this build has not made (cheap: reads build.ninja)."""
    if not set(options.WANTED_TARGETS) - set(built):
        return []
    listing = proc.run(["ninja", "-C", str(bdir), "-t", "targets", "all"], capture=True, timeout=120)
    if not listing.ok:
        return []
    return [t for t in options.available_targets(listing.stdout) if t not in built]


def foreign_steps(dry_run: str, targets: list[str]) -> list[str]:
    """Lines of `ninja -n` that build something other than the given tools: what a silent rebuild would be."""

    def ours(line: str) -> bool:
        return any(t in line or f"/{t.removeprefix('llama-')}/" in line for t in targets)

    steps = [ln.split("] ", 1)[-1] for ln in dry_run.splitlines() if ln.startswith("[")]
    return [s for s in steps if not ours(s)]


@contextmanager
def _locked(bdir: Path):
    """One process adds targets to a build at a time (tests of several people share one build cache)."""
    with open(bdir / LOCK, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def add_targets(bdir: Path, targets: list[str], log: Path, rebuild: str, env: dict, compile_step, probe) -> dict:
    """Compile and probe `targets` in bdir; the addition record. compile_step/probe are the builder's."""
    with _locked(bdir):
        plan = proc.run(["ninja", "-C", str(bdir), "-n", *targets], capture=True, timeout=120)
        if not plan.ok:
            raise BuildFailed(
                f"ninja cannot plan {', '.join(targets)} in {bdir} ({plan.describe()}); rebuild it with `{rebuild}`"
            )
        foreign = foreign_steps(plan.stdout, targets)
        if foreign:
            raise BuildFailed(
                f"adding {', '.join(targets)} to {bdir.name} would also rebuild {len(foreign)} "
                f"other step(s) (first: {foreign[0][:120]}); the build was left as it is; "
                f"rebuild it openly with `{rebuild}`"
            )
        started = datetime.now(UTC)
        print(f"orch: adding {', '.join(targets)} to build {bdir.name} (no other file is rebuilt)", file=sys.stderr)
        with open(log, "a") as f:
            f.write(f"\n# {started.isoformat()}: orch adds {', '.join(targets)}\n")
        compile_step("compile (added targets)", options.build_argv(bdir, targets, os.cpu_count() or 1), log, env, bdir)
        binaries = [probe(bdir, t) for t in targets]
        finished = datetime.now(UTC)
        return {
            "targets": targets,
            "started_at": started.isoformat(),
            "finished_at": finished.isoformat(),
            "duration_s": (finished - started).total_seconds(),
            "binaries": binaries,
        }
