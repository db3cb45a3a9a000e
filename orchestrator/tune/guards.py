"""Who may not win, whatever its speed: read from a race's stored runs before any score is compared.

- A candidate that failed or timed out, or whose speed could not be read, leaves the race with that reason.
- One that speculates and drafted nothing is no speculation result (its ratio is the program's, never a win).
- One whose greedy output differs from its control's (the same program drafting nothing) changed the answer, not
  only the speed: disqualified, unless the user allows output changes (then it is said beside it).
- One whose text loops where plain decoding's does not is copying its own loop: out.
- Plain decoding's own text looping (the baseline) refuses the whole race: an n-gram method wins on a loop by
  copying it, which says nothing about real text (`looping_baseline`).
Pure functions over the rows of store/tune_queries.race_runs; each reason a decisions.Decision (worded there).
"""

from __future__ import annotations

from orchestrator.tune.decisions import Decision, Exit

FAILED = ("failed", "timeout")


def disqualified(
    runs: list[dict], candidates: set[str], speculating: set[str], *, allow_output_change: bool
) -> dict[str, Decision]:
    """candidate -> why it leaves the race (the first reason its runs give, in run order), with the run that gave it."""
    out: dict[str, Decision] = {}
    for r in runs:
        name = r["arm"]
        if name not in candidates or name in out:
            continue
        where = {"sweep_id": r["sweep_id"], "repeat": r["repeat_index"] + 1}
        if r["status"] in FAILED:
            out[name] = Decision(name, Exit.FAILED, status=r["status"], failure_class=r.get("failure_class"), **where)
        elif r["status"] != "ok":
            continue  # interrupted: run again after a resume; skipped arms are infeasible before the race
        elif not r.get("decode_tps"):
            out[name] = Decision(name, Exit.NO_SPEED, **where)
        elif name in speculating and r.get("n_drafted") == 0:
            out[name] = Decision(name, Exit.DRAFTED_NOTHING, **where)
        elif r.get("outputs_differ") and not allow_output_change:
            out[name] = Decision(name, Exit.OUTPUT_CHANGED, first_diff_token=r.get("first_diff_token"), **where)
        elif r.get("degenerate_loop"):
            out[name] = Decision(name, Exit.LOOPS, **where)
    return out


def output_changes(runs: list[dict], candidates: set[str]) -> set[str]:
    """The candidates with an output differing from their control's (kept with --allow-output-change, said so)."""
    return {r["arm"] for r in runs if r["arm"] in candidates and r["status"] == "ok" and r.get("outputs_differ")}


def looping_baseline(runs: list[dict], baseline: str) -> Decision | None:
    """The race refused, where plain decoding's own text loops (the first run that shows it)."""
    looped = [r for r in runs if r["arm"] == baseline and r["status"] == "ok" and r.get("degenerate_loop")]
    if not looped:
        return None
    return Decision(baseline, Exit.REFUSED, sweep_id=looped[0]["sweep_id"], repeat=looped[0]["repeat_index"] + 1)
