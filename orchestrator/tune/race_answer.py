"""A race's answer (tune/answer.Answer) from what it ran: its scores and table, the winner's command and llama-server
line, the best setting that speculates where plain decoding led, and what it cost beside the grid."""

from __future__ import annotations

from orchestrator.recipe import argv as flags
from orchestrator.tune import answer, guards, race
from orchestrator.tune.race_settings import RaceSettings, RaceState, feasible, grid_cost


def spent(runs: list[dict]) -> tuple[int, float]:
    """(planned runs started, wall seconds of every run started). A run stopped by Ctrl-C or a kill counts: it was
    spent, and a tune stopped and resumed three times would otherwise overspend its budget by three runs. So does a
    slot's earlier attempt (a log that lost its tail runs again): the budget bounds what the machine ran."""
    started = [x for x in runs if x["status"] != "skipped"]
    count = sum(1 + (x.get("retries") or 0) for x in started if x["planned"])
    return count, sum((x["wall_s"] or 0.0) + (x.get("retried_s") or 0.0) for x in started)


def retried(runs: list[dict]) -> int:
    """The planned runs that ran again (their log lost its tail): in the budget spent, and said under the answer."""
    return sum(x.get("retries") or 0 for x in runs if x["planned"] and x["status"] != "skipped")


def race_answer(
    settings: RaceSettings,
    state: RaceState,
    runs: list[dict],
    outcome: str,
    winner: str | None,
    survivors: list[str],
    *,
    scores: race.Scores | None = None,
    noise: race.Noise | None = None,
    reason: str | None = None,
) -> answer.Answer:
    scores = (
        scores
        if scores is not None
        else race.block_scores(runs, settings.baseline, set(settings.candidates), settings.planned)
    )
    count, seconds = spent(runs)
    grid_runs, grid_seconds = grid_cost(settings, state, seconds / count if count else None)
    acceptance = {}
    for name in settings.candidates:
        values = [
            x["acceptance"] for x in runs if x["arm"] == name and x["status"] == "ok" and x["acceptance"] is not None
        ]
        acceptance[name] = race.mean(values)
    out = answer.Answer(
        workload=settings.workload,
        state=outcome,
        winner=winner,
        tied=[] if winner else survivors,
        runs=count,
        retried=retried(runs),
        seconds=seconds,
        grid_runs=grid_runs,
        grid_seconds=grid_seconds,
        rounds=max((x["round"] for x in state.rounds), default=0),
        candidates=len(feasible(settings, state)) + 1,
        reason=reason,
        left=dict(state.left),
        noise=noise.sd if noise else None,
        rules=settings.rules,
        output_changed=sorted(guards.output_changes(runs, set(settings.candidates)))
        if settings.rules.allow_output_change
        else [],
    )
    out.rows = answer.table(
        scores,
        noise or race.Noise(None, 0),
        reference=settings.baseline,
        survivors=survivors,
        left=state.left,
        like_for_like=race.control_scores(runs, set(settings.candidates), settings.baseline, settings.planned),
        acceptance=acceptance,
        outcome=outcome,
        winner=winner,
    )
    # tied or not separated: the leader's, labelled as such; no speculation predicted: plain decoding's
    shown = winner or (settings.baseline if outcome == "predicted" else race.leader(scores, survivors))
    if shown:
        argv = _argv(settings, shown)
        out.command = flags.command_line(argv)
        build = settings.prepared.build  # plain decoding too: "no speculation" is served without a draft
        out.server = answer.server_line(argv, build.tool("llama-server"), build.help_texts().get("llama-server"))
    if outcome not in ("refused", "predicted") and shown in (None, settings.baseline):  # the best that speculates
        out.best_speculating = answer.best_speculating(
            scores, noise or race.Noise(None, 0), settings.candidates, settings.baseline, state.left
        )
        if out.best_speculating:
            out.best_speculating["command"] = flags.command_line(_argv(settings, out.best_speculating["candidate"]))
    out.verdict = answer.verdict(out)
    return out


def _argv(settings: RaceSettings, name: str) -> list[str]:
    prepared = next(p for p in settings.prepared.arms if p.arm.name == name)
    return prepared.executed or prepared.arm.argv
