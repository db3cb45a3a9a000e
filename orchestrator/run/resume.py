"""Resuming a sweep: which stored sweep matches (same recipe text, build and variables) and what it still lacks.

A speedup pairs an arm's repeat r with the baseline's repeat r, and pairing cancels drift only when the two ran
close in time. So a resume re-runs whole rounds: every repeat that lacks any slot runs again for every arm (but
arms the build skips), and the newest row of a slot is the measurement (view `measured_runs`, migration m006).
"""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator import store
from orchestrator.build.finished import Build
from orchestrator.errors import InvalidOption, NoSuchSweep, NothingToResume, ResumeMismatch
from orchestrator.recipe import schedule
from orchestrator.recipe.plan import Plan
from orchestrator.store import queries

MAX_CANDIDATES = 5  # sweeps of the same recipe named when none matches
MAX_VALUE_CHARS = 40
UNSET = object()


def resumable(con, plan: Plan, build: Build, ref: str, arms: list[str]) -> int:
    """The sweep to continue: `ref` is a sweep id or "latest" (the newest matching one).

    A resume never starts a new sweep: when nothing matches, the error names what was looked for and the stored
    sweeps of the same recipe, each with what differs (build, recipe text, which variables).
    """
    sweeps = queries.sweep_keys(con)
    differing = {s["id"]: differences(s, plan, build, arms) for s in sweeps}
    if ref == "latest":
        match = next((s["id"] for s in sweeps if not differing[s["id"]]), None)
        if match is None:
            raise NothingToResume(_nothing_matches(plan, build, sweeps, differing))
        return match
    try:
        wanted = int(ref)
    except ValueError:
        raise InvalidOption(f"--resume {ref!r} is not a sweep id; give one from `orch summary` or no value") from None
    if wanted not in differing:
        raise NoSuchSweep(f"no sweep {wanted} to resume; list them with `orch sweeps`")
    if differing[wanted]:
        raise ResumeMismatch(
            f"sweep {wanted} cannot be resumed by this run: it differs in "
            f"{'; '.join(differing[wanted])}; resume needs the same recipe text, builds, variables "
            f"and arms (--build, --arms as the sweep was run)"
        )
    return wanted


def differences(sweep: dict, plan: Plan, build: Build, arms: list[str]) -> list[str]:
    """What keeps a stored sweep from being the one this run continues, in words ([] when it is that sweep): its
    recipe text, build, variables, and the arms it planned (a crossed sweep's name both builds)."""
    out = []
    if sweep["recipe_hash"] != plan.recipe_hash:
        out.append(f"recipe text (it ran another text of {sweep['recipe_path']})")
    if sweep["build_id"] != build.id:
        out.append(f"build ({sweep['build_name']} there, {build.name} here)")
    theirs = json.loads(sweep["variables"]) if sweep["variables"] else {}
    for key in sorted(set(theirs) | set(plan.variables)):
        there, here = theirs.get(key, UNSET), plan.variables.get(key, UNSET)
        if _json(there) != _json(here):
            out.append(f"{key} ({_shown(there)} there, {_shown(here)} here)")
    planned = json.loads(sweep["arm_names"]) if sweep.get("arm_names") else None
    if planned is not None and set(planned) != set(arms):
        only_there, only_here = sorted(set(planned) - set(arms)), sorted(set(arms) - set(planned))
        out.append(
            "arms ("
            + "; ".join(
                part
                for part in (
                    f"{_listed(only_there)} there only" if only_there else "",
                    f"{_listed(only_here)} here only" if only_here else "",
                )
                if part
            )
            + ")"
        )
    return out


def _listed(names: list[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def _json(value) -> str | None:
    """A variable's value as the sweep row stores it (JSON), None when unset: what resume compares."""
    return None if value is UNSET else json.dumps(value, sort_keys=True)


def _shown(value) -> str:
    text = _json(value) or "unset"
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


def _nothing_matches(plan: Plan, build: Build, sweeps: list[dict], differing: dict[int, list[str]]) -> str:
    name = Path(plan.recipe_path).name
    wanted = (
        f"--resume found no sweep to continue: none is of recipe {plan.recipe_path} (this text, sha256 "
        f"{plan.recipe_hash[:12]}) on build {build.name} with variables "
        f"{', '.join(f'{k}={_shown(v)}' for k, v in sorted(plan.variables.items()))}"
    )
    same_recipe = [s for s in sweeps if s["recipe_hash"] == plan.recipe_hash or Path(s["recipe_path"]).name == name]
    if not same_recipe:
        return f"{wanted}; no sweep of {name} is stored; start one without --resume"
    shown = [f"sweep {s['id']} differs in {'; '.join(differing[s['id']])}" for s in same_recipe[:MAX_CANDIDATES]]
    more = f" (and {len(same_recipe) - MAX_CANDIDATES} older)" if len(same_recipe) > MAX_CANDIDATES else ""
    return (
        f"{wanted}; sweeps of {name}: {' | '.join(shown)}{more}; to continue one, run with its build and "
        f"variables; to start a new sweep, leave out --resume"
    )


def reopen(con, sweep_id: int, repeat: int, slots: list[schedule.Slot]) -> list[schedule.Slot]:
    """Mark the sweep running again at `repeat` measurements per arm; the slots of `slots` to run.

    Rows a dead orch left `running` become `interrupted` first, so their slots run again. A sweep with nothing left
    to run is refused (NothingToResume) and left as it was.
    """
    remaining = schedule.remaining(slots, keep_rounds_whole(slots, queries.done_slots(con, sweep_id)))
    if not any(not s.warmup for s in remaining):  # a finished sweep stays as it was (its planned runs included)
        raise NothingToResume(
            f"sweep {sweep_id} holds every run its {repeat} repeat(s) plan: nothing to resume (--repeat N with more "
            f"repeats adds them)"
        )
    store.reopen_sweep(con, sweep_id, repeat)
    store.interrupt_running_runs(con, sweep_id)
    return remaining


def keep_rounds_whole(slots: list[schedule.Slot], done: dict[tuple[str, int], str]) -> set[tuple[str, int]]:
    """The done slots a resume may keep: those of repeats in which every measured slot is done. In a repeat that
    lacks any, only skipped slots stay done; the rest runs again beside what is missing."""
    measured = [s for s in slots if not s.warmup]
    incomplete = {s.repeat_index for s in measured if (s.arm, s.repeat_index) not in done}
    return {key for key, status in done.items() if key[1] not in incomplete or status == "skipped"}
