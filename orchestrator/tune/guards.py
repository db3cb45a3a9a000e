"""Who may not win, whatever its speed: read from a race's stored runs before any score is compared.

- A candidate that failed or timed out, or whose speed could not be read, leaves the race with that reason.
- One that speculates and drafted nothing is no speculation result (its ratio is the program's, never a win).
- One whose greedy output differs from its control's (the same program drafting nothing) changed the answer, not
  only the speed: disqualified, unless the user allows output changes (then it is said beside it).
- One whose text loops where plain decoding's does not is copying its own loop: out.
- Plain decoding's own text looping (the baseline) refuses the whole race: an n-gram method wins on a loop by
  copying it, which says nothing about real text (`looping_baseline`).
Pure functions over the rows of store/tune_queries.race_runs.
"""

from __future__ import annotations

FAILED = ("failed", "timeout")


def disqualified(runs: list[dict], candidates: set[str], speculating: set[str], *,
                 allow_output_change: bool) -> dict[str, str]:
    """candidate -> why it leaves the race (the first reason its runs give, in run order)."""
    out: dict[str, str] = {}
    for r in runs:
        name = r["arm"]
        if name not in candidates or name in out:
            continue
        where = f"sweep {r['sweep_id']}, repeat {r['repeat_index'] + 1}"
        if r["status"] in FAILED:
            out[name] = f"{r['status']} ({r.get('failure_class') or 'no class'}) in {where}"
        elif r["status"] != "ok":
            continue  # interrupted: run again after a resume; skipped arms are infeasible before the race
        elif not r.get("decode_tps"):
            out[name] = f"no decode speed could be read in {where}"
        elif name in speculating and r.get("n_drafted") == 0:
            out[name] = f"drafted nothing in {where}: no speculation result"
        elif r.get("outputs_differ") and not allow_output_change:
            token = r.get("first_diff_token")
            out[name] = (f"its output at temperature 0 differs from its control's ({where}"
                         f"{f', first at token {token}' if token is not None else ''}); --allow-output-change keeps it")
        elif r.get("degenerate_loop"):
            out[name] = f"its output loops ({where}) where plain decoding's does not"
    return out


def output_changes(runs: list[dict], candidates: set[str]) -> set[str]:
    """The candidates with an output differing from their control's (kept with --allow-output-change, said so)."""
    return {r["arm"] for r in runs if r["arm"] in candidates and r["status"] == "ok" and r.get("outputs_differ")}


def looping_baseline(runs: list[dict], baseline: str) -> str | None:
    """Why the race is refused, where plain decoding's own text loops."""
    looped = [r for r in runs if r["arm"] == baseline and r["status"] == "ok" and r.get("degenerate_loop")]
    if not looped:
        return None
    r = looped[0]
    return (f"plain decoding's text loops on this workload (sweep {r['sweep_id']}, repeat {r['repeat_index'] + 1}): "
            f"an n-gram draft wins there by copying the loop, which says nothing about real text; give a prompt "
            f"whose continuation does not loop")
