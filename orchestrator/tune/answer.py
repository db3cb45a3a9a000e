"""A race's answer: the finalists' table, the winner's command lines (the leader's when none won), what it cost against
the grid, one verdict.

Speedups are against plain decoding (the baseline, "speculation off"), paired by block, with the 95% t-interval of
the mean log ratio (analyze/stats.paired_ratio); beside them, where a candidate has a control, its speedup against
that control (the same program drafting nothing: the like-for-like figure). The table never shows a speedup of a
candidate that was disqualified as a result: its row says why it left.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field, fields
from pathlib import Path

from orchestrator.analyze import stats
from orchestrator.recipe import argv as flags
from orchestrator.tune import decisions, race
from orchestrator.tune.decisions import Decision
from orchestrator.tune.rules import Rules, percent

# What only a one-shot CLI run takes: the prompt, the conversation switch. The rest is common to llama-server.
CLI_ONLY = {
    "-p": 1,
    "--prompt": 1,
    "-f": 1,
    "--file": 1,
    "-no-cnv": 0,
    "--no-conversation": 0,
    "-cnv": 0,
    "-lv": 1,
    "--verbosity": 1,
    "--log-verbosity": 1,
}
SHOWN_DROPPED = 4  # the best candidates that left the race, shown under the finalists


@dataclass
class Answer:
    workload: str
    state: str  # race.WINNER, EQUIVALENT, UNSEPARATED, "refused", or "predicted" (no speculation, before a run)
    winner: str | None = None
    tied: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    # the winner's argv as one line to paste (display only: orch never runs a shell); with no winner (tied, not
    # separated), the leader's, shown as the leader's
    command: str | None = None
    server: str | None = None  # the same candidate on llama-server, or why there is none
    runs: int = 0  # runs started, those run again included (retried)
    retried: int = 0  # of them, runs again of a slot whose log lost its tail
    seconds: float = 0.0
    grid_runs: int = 0
    grid_seconds: float = 0.0
    rounds: int = 0
    candidates: int = 0
    reason: str | None = None  # refused, predicted: why
    left: dict[str, Decision] = field(default_factory=dict)  # candidate -> why it left the race
    noise: float | None = None  # the pooled spread of one score (log scale) when it ended
    # plain decoding leads: the fastest candidate that speculates (candidate, vs_plain, command), never a winner
    best_speculating: dict | None = None
    rules: Rules = field(default_factory=Rules)  # the rule it was raced by: the verdict's tie margin, the grid's cost
    # candidates kept by --allow-output-change whose text differs from their control's: the verdict says so
    output_changed: list[str] = field(default_factory=list)
    verdict: str = ""

    def to_dict(self) -> dict:
        """As `--json` prints it and the tune's stored result holds it."""
        return {**self.__dict__, "left": {n: d.to_dict() for n, d in self.left.items()}, "rules": self.rules.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> Answer:
        """An answer back from its JSON (`orch tune --show`); one stored before rules and typed decisions were
        (its `left` in words) reads too. KeyError, TypeError or ValueError where it does not read."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["left"] = {n: Decision.from_dict(n, d) for n, d in (data.get("left") or {}).items()}
        values["rules"] = Rules(**(data.get("rules") or {}))
        return cls(**values)


def speedup(scores: race.Scores, name: str, noise: race.Noise) -> stats.Speedup | None:
    """name's speed over plain decoding's: exp of its mean score, with the 95% interval the race's own noise
    model gives (the pooled spread, its degrees of freedom and the program term's uncertainty: race.py), so the
    table says what the race judged."""
    values = list(scores.get(name, {}).values())
    if not values:
        return None
    centre = race.mean(values)
    if not noise.sd or not noise.df:
        return stats.Speedup(math.exp(centre), None, None, len(values))
    half = stats.t975(noise.df) * math.sqrt(race.variance_of_mean(scores, name, "", noise))
    return stats.Speedup(math.exp(centre), math.exp(centre - half), math.exp(centre + half), len(values))


def against_control(like_for_like: race.Scores, name: str) -> stats.Speedup | None:
    """name's speed over its control's (the same program drafting nothing, on the same tokens), its own interval."""
    return stats.paired_ratio([(1.0, math.exp(s)) for s in like_for_like.get(name, {}).values()])


def figure(value: stats.Speedup | None) -> str | None:
    if value is None:
        return None
    interval = f" [{value.ci_low:.2f}, {value.ci_high:.2f}]" if value.ci_low is not None else ""
    return f"{value.ratio:.2f}x{interval}"


def table(
    scores: race.Scores,
    noise: race.Noise,
    *,
    reference: str,
    survivors: list[str],
    left: dict[str, Decision],
    like_for_like: race.Scores,
    acceptance: dict[str, float | None],
    outcome: str,
    winner: str | None,
) -> list[dict]:
    """The finalists (the survivors and plain decoding), then the fastest candidates that left, with why."""

    def row(name: str, state: str) -> dict:
        disqualified = name in left and left[name].kind.not_a_result
        return {
            "candidate": "off (plain decoding)" if name == reference else name,
            "state": state,
            "runs": len(scores.get(name, {})),
            "vs_plain": None if disqualified or name == reference else figure(speedup(scores, name, noise)),
            "vs_control": None if disqualified else figure(against_control(like_for_like, name)),
            "acceptance": None if acceptance.get(name) is None else f"{100 * acceptance[name]:.0f}%",
            "why": decisions.words(left[name]) if name in left else None,
        }

    def state_of(name: str) -> str:
        if name == winner:
            return "winner"
        return {race.EQUIVALENT: "tied", race.UNSEPARATED: "not separated"}.get(outcome, "finalist")

    finalists = sorted(survivors, key=lambda n: -_mean(scores, n))
    rows = [row(n, state_of(n)) for n in finalists]
    if reference not in survivors:
        rows.append(row(reference, "dropped"))
    others = sorted(
        (n for n in left if n != reference),  # unmeasured (predicted slower): by their prediction
        key=lambda n: (-_mean(scores, n), -(left[n].speedup or 0.0)),
    )
    rows += [row(n, left[n].kind.event if left[n].kind.not_a_result else "dropped") for n in others[:SHOWN_DROPPED]]
    return rows


def best_speculating(
    scores: race.Scores, noise: race.Noise, candidates: list[str], reference: str, left: dict[str, Decision]
) -> dict | None:
    """Where plain decoding leads, the fastest candidate that ran as raced (not disqualified, not infeasible): what
    the best setting of the space costs here, shown with its figure so it is never read as a recommendation."""
    measured = [
        n for n in candidates if n != reference and scores.get(n) and not (n in left and left[n].kind.not_a_result)
    ]
    if not measured:
        return None
    name = max(measured, key=lambda n: _mean(scores, n))
    return {"candidate": name, "vs_plain": figure(speedup(scores, name, noise))}


def _mean(scores: race.Scores, name: str) -> float:
    values = list(scores.get(name, {}).values())
    return race.mean(values) if values else -math.inf


def server_line(argv: list[str], server_path: str | None, server_help: str | None) -> str:
    """The winner's flags on this build's llama-server, or why it has none."""
    if not server_path or not server_help:
        return "no llama-server equivalent: this build has no llama-server"
    out, skip = [server_path], 0
    for arg in argv[1:]:
        if skip:
            skip -= 1
            continue
        name = arg.split("=", 1)[0]
        if name in CLI_ONLY:
            skip = CLI_ONLY[name] if "=" not in arg else 0
            continue
        out.append(arg)
    missing = sorted(f for f in flags.flags_in(out[1:]) if f not in server_help and not _is_number(f))
    if missing:
        return f"no llama-server equivalent: llama-server at this build lacks {', '.join(missing)}"
    return shlex.join([*out, "--host", "127.0.0.1", "--port", "8080"])


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def verdict(answer: Answer) -> str:
    """One sentence: what to run for this workload, or why there is no single answer; and where the candidate it
    names produced other text than its control (kept by --allow-output-change), that it did."""
    said = _verdict(answer)
    named = answer.winner or next(
        (r["candidate"] for r in answer.rows if r["state"] in ("tied", "not separated")), None
    )
    if named in answer.output_changed:
        said += f"; note: {named}'s text differs from its control's (kept by --allow-output-change)"
    return said


def _verdict(answer: Answer) -> str:
    w = answer.workload
    cost = f"{answer.runs} runs against {answer.grid_runs} for the grid at {answer.rules.grid_repeats} repeats"
    margin = percent(answer.rules.tie_margin)
    if answer.state == "refused":
        return f"{w}: refused: {answer.reason}"
    if answer.state == "predicted":
        return f"{w}: no speculation predicted: {answer.reason} ({answer.runs} runs raced, the probes aside)"
    first = answer.rows[0] if answer.rows else {}
    if answer.state == race.WINNER and answer.winner and not first.get("candidate", "").startswith("off"):
        return (
            f"{w}: {answer.winner} wins at {first.get('vs_plain')} plain decoding's speed "
            f"({answer.candidates} candidates raced, {cost})"
        )
    if answer.state == race.WINNER:
        return f"{w}: no speculation: {_why_none(answer.left)} ({cost})"
    tied = [r["candidate"] for r in answer.rows if r["state"] in ("tied", "not separated")]
    names = _summarised(tied)
    if answer.state == race.EQUIVALENT and any(n.startswith("off") for n in tied):
        return (
            f"{w}: no speculation: no candidate is measurably faster than plain decoding (within {margin}: "
            f"{names}; {cost})"
        )
    if answer.state == race.EQUIVALENT:
        return f"{w}: tied within {margin}, any of them: {names} ({cost})"
    noise = f" (run-to-run noise {100 * answer.noise:.1f}% per score)" if answer.noise else ""
    runs = answer.rows[0].get("runs") if tied and not tied[0].startswith("off") else None
    measured = f" ({runs} run{'s' if runs != 1 else ''})" if runs else ""
    lead = f"{tied[0]} leads at {answer.rows[0].get('vs_plain') or '1x'}{measured}" if tied else "no leader"
    others = f", not told apart from {_summarised(tied[1:])}" if len(tied) > 1 else ""
    return (
        f"{w}: not separated within the budget{noise}: {lead}{others}; no winner, raise --budget to separate "
        f"them ({cost})"
    )


NAMED = 4  # finalists a verdict names; more are counted ("and 21 others"), the table lists them


def _summarised(names: list[str]) -> str:
    return (
        ", ".join(names)
        if len(names) <= NAMED
        else f"{', '.join(names[: NAMED - 1])} and {len(names) - NAMED + 1} others"
    )


def _why_none(left: dict[str, Decision]) -> str:
    """Why plain decoding won: how many candidates were slower, drafted nothing, changed the output, failed (counted
    by kind: the words of a decision never change a verdict)."""
    said = decisions.counted(left)
    return f"no candidate beat plain decoding ({said})" if said else "no candidate beat plain decoding"


def grid_cost(candidates: int, controls: int, seconds_per_run: float | None, repeats: int) -> tuple[int, float]:
    """The brute-force answer's cost: every candidate, the baseline and the controls at the grid's repeats (planned
    runs; the seconds at this race's wall time per planned run, its count-matched references included)."""
    runs = (candidates + 1 + controls) * repeats
    return runs, runs * (seconds_per_run or 0.0)


def workload_name(path: Path | None) -> str:
    return path.stem if path else "custom"
