"""One workload's tune answer as the terminal shows it: heading, table, why each candidate left, the command lines
to paste, and what the race cost beside the grid."""

from __future__ import annotations

from orchestrator import tables
from orchestrator.cli.output import shell_lines
from orchestrator.tune import race
from orchestrator.tune.answer import Answer

COLUMNS = ["candidate", "state", "runs", "vs_plain", "vs_control", "acceptance"]


SHOWN_FINALISTS = 8  # finalists the answer's table shows; --explain shows every one


def printed(a: Answer, explain: bool = False) -> str:
    """One workload's answer as the terminal shows it: heading, table, why each left, command lines, cost."""

    lines = [f"== {a.workload}: {a.candidates} candidates, {a.rounds} round(s): {a.state} =="]
    if a.rows:
        finalists = [r for r in a.rows if r["state"] in ("tied", "not separated", "finalist")]
        hidden = finalists[SHOWN_FINALISTS:] if not explain else []
        rows = [r for r in a.rows if r not in hidden]
        text, _ = tables.text_table(rows, COLUMNS, width=tables.TABLE_WIDTH, droppable=["vs_control", "acceptance"])
        lines.append(text)
        if hidden:
            lines.append(
                tables.fill(
                    f"  and {len(hidden)} more finalists within the noise (orch tune --show --explain lists every one)"
                )
            )
        said = {race.EQUIVALENT: "tied", race.UNSEPARATED: "not separated"}.get(a.state)
        if said:  # the intervals are each candidate's own; the decisions are not
            lines.append(
                tables.fill(
                    f"  vs_plain: each candidate's own 95% interval, not adjusted for the race's "
                    f"many comparisons; a candidate is dropped only by a one-sided test "
                    f"Holm-corrected over its round's (at {a.rules.alpha:g}), so an interval that "
                    f"excludes 1x can still be {said}"
                )
            )
        lines += [tables.fill(f"  {row['candidate']}: {row['why']}") for row in a.rows if row.get("why")]
        if any(row["state"] == "dropped" and row.get("why") for row in a.rows):  # a drop is shown: by which rule
            lines.append(tables.fill("  " + race.METHOD.format(alpha=a.rules.alpha)))
    # no winner: the leader's, said so; no speculation predicted: plain decoding's, what to run
    run_label = "run:" if a.state in (race.WINNER, "predicted") else "leader:"
    for label, line in ((run_label, a.command), ("server:", a.server)):
        if line and line.startswith("no llama-server"):
            lines.append(tables.fill(f"{label} {line}"))
        elif line:  # a command to paste: broken between words with a shell continuation, never inside one
            lines.append(shell_lines(label, line))
    best = a.best_speculating
    if best:  # plain decoding leads: what the space's best setting costs here, never as advice
        lines.append(
            tables.fill(
                f"best speculating setting: {best['candidate']} at {best['vs_plain'] or '?'} "
                f"plain decoding's speed, behind it here:"
            )
        )
        lines.append(shell_lines("  ", best["command"]))
    again = f" ({a.retried} of them run again: their log lost its tail)" if a.retried else ""
    grid_time = f" (about {tables.clock(a.grid_seconds)})" if a.grid_seconds else ""  # no run: no time a run
    lines.append(
        tables.fill(
            f"cost: {a.runs} runs{again} in {tables.clock(a.seconds)}, against {a.grid_runs} runs"
            f"{grid_time} for every candidate at {a.rules.grid_repeats} repeats"
        )
    )
    return "\n".join(lines) + "\n"
