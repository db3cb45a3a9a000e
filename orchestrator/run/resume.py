"""Finding a sweep to resume: same recipe text, build and variables; what it already has stored ok."""

from __future__ import annotations

import json

from orchestrator.errors import OrchError
from orchestrator.recipe.plan import Plan


def resumable(con, plan: Plan, build: dict, ref: str) -> int | None:
    """The sweep to continue: `ref` is a sweep id or "latest" (the newest matching one; None if there is none)."""
    variables = json.dumps(plan.variables, sort_keys=True)
    rows = con.execute("SELECT id, recipe_hash, build_id, variables FROM sweeps ORDER BY id DESC").fetchall()
    matching = [r[0] for r in rows if r[1] == plan.recipe_hash and r[2] == build["id"]
                and json.dumps(json.loads(r[3]), sort_keys=True) == variables]
    if ref == "latest":
        return matching[0] if matching else None
    try:
        wanted = int(ref)
    except ValueError:
        raise OrchError(f"--resume {ref!r} is not a sweep id; give one from `orch summary` or no value") from None
    if wanted not in {r[0] for r in rows}:
        raise OrchError(f"no sweep {wanted} to resume; list sweeps with `orch query 'SELECT * FROM sweeps'`")
    if wanted not in matching:
        raise OrchError(f"sweep {wanted} ran another recipe text, build or variables; resume needs all three equal")
    return wanted


def done_slots(con, sweep_id: int) -> set[tuple[str, int]]:
    """Measured (arm, repeat) pairs already stored ok (or skipped: the build cannot run those anyway)."""
    con.execute("UPDATE runs SET status = 'interrupted' WHERE sweep_id = ? AND status = 'running'", [sweep_id])
    rows = con.execute("SELECT arm, repeat_index FROM runs WHERE sweep_id = ? AND NOT coalesce(warmup, false) "
                       "AND status IN ('ok', 'skipped')", [sweep_id]).fetchall()
    return {(arm, rep) for arm, rep in rows}
