"""Resuming a sweep: which stored sweep matches (same recipe text, build and variables) and what it still lacks.

A speedup pairs an arm's repeat r with the baseline's repeat r, and pairing cancels drift only when the two ran
close in time. So a resume re-runs whole rounds: every repeat that lacks any slot runs again for every arm (but
arms the build skips), and the newest row of a slot is the measurement (view `measured_runs`, migration m006).
"""

from __future__ import annotations

import json

from orchestrator import store
from orchestrator.errors import InvalidOption, NoSuchSweep, ResumeMismatch
from orchestrator.recipe import schedule
from orchestrator.recipe.plan import Plan
from orchestrator.store import queries


def resumable(con, plan: Plan, build: dict, ref: str) -> int | None:
    """The sweep to continue: `ref` is a sweep id or "latest" (the newest matching one; None if there is none)."""
    variables = json.dumps(plan.variables, sort_keys=True)
    sweeps = queries.sweep_keys(con)
    matching = [s["id"] for s in sweeps if s["recipe_hash"] == plan.recipe_hash and s["build_id"] == build["id"]
                and json.dumps(json.loads(s["variables"]), sort_keys=True) == variables]
    if ref == "latest":
        return matching[0] if matching else None
    try:
        wanted = int(ref)
    except ValueError:
        raise InvalidOption(f"--resume {ref!r} is not a sweep id; give one from `orch summary` or no value") from None
    if wanted not in {s["id"] for s in sweeps}:
        raise NoSuchSweep(f"no sweep {wanted} to resume; list sweeps with `orch query 'SELECT * FROM sweeps'`")
    if wanted not in matching:
        raise ResumeMismatch(f"sweep {wanted} ran another recipe text, build or variables; resume needs all three equal")
    return wanted


def reopen(con, sweep_id: int, repeat: int, slots: list[schedule.Slot]) -> list[schedule.Slot]:
    """Mark the sweep running again at `repeat` measurements per arm; the slots of `slots` to run.

    Rows a dead orch left `running` become `interrupted` first, so their slots run again.
    """
    store.reopen_sweep(con, sweep_id, repeat)
    store.interrupt_running_runs(con, sweep_id)
    return schedule.remaining(slots, keep_rounds_whole(slots, queries.done_slots(con, sweep_id)))


def keep_rounds_whole(slots: list[schedule.Slot], done: dict[tuple[str, int], str]) -> set[tuple[str, int]]:
    """The done slots a resume may keep: those of repeats in which every measured slot is done. In a repeat that
    lacks any, only skipped slots stay done; the rest runs again beside what is missing."""
    measured = [s for s in slots if not s.warmup]
    incomplete = {s.repeat_index for s in measured if (s.arm, s.repeat_index) not in done}
    return {key for key, status in done.items() if key[1] not in incomplete or status == "skipped"}
