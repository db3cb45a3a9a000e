"""One workload's race: the recipe prepared once with the space, then rounds, each an ordinary stored sweep.

A round runs every survivor once (the most promising that fit when the budget cannot: _next_round), in blocks
(race.plan_round): a block is one repeat of the round's sweep holding the baseline, the controls its candidates are
measured against, and the candidates, in shuffled order (seeded by the tune, the workload and the round: a rerun
shuffles alike). The round is recorded (tune_rounds) before it runs, so a killed tune finds its runs; after it, the
race reads every run of the workload's rounds back from the store (guards, scores, drops: race.py), records its
decisions (tune_events, typed: decisions.py), and either ends or plans the next round.
A race is what it is given (RaceSettings, fixed) and what it has done (RaceState: rounds and decisions). A resume
is the same loop entered with the stored state: what was decided stays, the runs already started count against the
budget (the one a stop cut short too), and the race goes on with its next round.
"""

from __future__ import annotations

import random
from dataclasses import replace

from orchestrator.recipe import control
from orchestrator.recipe.schedule import Slot
from orchestrator.run import predictions, recipe_run
from orchestrator.run.recipe_run import PreparedRecipe, RunOptions
from orchestrator.store import tune_queries, tunes
from orchestrator.tune import answer, decisions, guards, race
from orchestrator.tune.decisions import Decision, Exit
from orchestrator.tune.race_answer import race_answer, spent
from orchestrator.tune.race_settings import Budget, RaceSettings, RaceState, feasible, grid_cost, with_default
from orchestrator.tune.rules import Rules


def run_race(settings: RaceSettings, state: RaceState) -> answer.Answer:
    """Race to an answer (storing every round and decision), from the start or from what the store holds."""
    baseline = settings.baseline
    speculating = {p.arm.name for p in settings.prepared.arms if control.speculates(p.executed or p.arm.argv)}
    if not state.rounds and not state.left:
        _record(settings, state, 0, infeasible(settings.prepared))
        if not settings.measure:
            _record(settings, state, 0, predicted_slower(settings, state))
    if not state.rounds and (best := _all_predicted_slower(settings, state)):
        return race_answer(settings, state, [], "predicted", None, [baseline], reason=_predicted_reason(best))
    settings = replace(settings, budget=with_default(settings.budget, grid_runs=grid_cost(settings, state)[0]))
    while True:
        runs = _runs(settings, state)
        number = max((x["round"] for x in state.rounds), default=0)
        refusal = guards.looping_baseline(runs, baseline)
        if refusal:
            _record(settings, state, number, [refusal])
            return race_answer(settings, state, runs, "refused", None, [], reason=decisions.words(refusal, event=False))
        survivors = [c for c in settings.candidates if c not in state.left]
        out = guards.disqualified(
            runs, set(survivors) - {baseline}, speculating, allow_output_change=settings.rules.allow_output_change
        )
        _record(settings, state, number, list(out.values()))
        survivors = [c for c in survivors if c not in out]
        scores = race.block_scores(
            runs, baseline, set(settings.candidates) | set(settings.controls.values()), settings.planned
        )
        noise = race.pooled_noise(
            scores,
            [n for n in scores if n not in state.left and n != baseline],
            race.programs(scores, settings.planned, baseline),
        )
        drops = race.eliminate(scores, survivors, baseline, noise, settings.rules)
        _record(settings, state, number, drops)
        survivors = [c for c in survivors if c not in state.left]
        rng = random.Random(f"{settings.tune_id}:{settings.workload}:{number + 1}")
        runners = race.needing_runs(scores, survivors, baseline, settings.rules)
        blocks = _next_round(settings, runs, race.by_promise(scores, runners), rng)
        outcome = race.decide(scores, survivors, baseline, noise, settings.rules, budget_left=bool(blocks))
        if number and (drops or out):
            settings.say(
                f"orch: tune {settings.tune_id} ({settings.workload}): after round {number}, {len(survivors)} left"
                f"{_dropped_note(drops, out)}"
            )
        if state.ended and outcome.state == race.RACING:  # decided before; the same data decide alike
            outcome = race.Outcome(race.UNSEPARATED, outcome.leader, outcome.survivors)
        if outcome.state != race.RACING:
            end = Exit.WINNER if outcome.state == race.WINNER else Exit.TIED
            _record(
                settings,
                state,
                number,
                [
                    Decision(
                        n,
                        end,
                        outcome=outcome.state,
                        speedup=answer.speedup(scores, n, noise).ratio if scores.get(n) else None,
                    )
                    for n in outcome.survivors
                ],
            )
            return race_answer(
                settings,
                state,
                runs,
                outcome.state,
                outcome.leader if outcome.state == race.WINNER else None,
                list(outcome.survivors),
                scores=scores,
                noise=noise,
            )
        _run_round(settings, state, number + 1, blocks, rng, of=len(runners))


def first_round_runs(prepared: PreparedRecipe, rules: Rules) -> int:
    """The planned runs of round 1 (every feasible candidate once, with plain decoding and the controls per block):
    the least budget a race can start with."""
    s = RaceSettings(tune_id=0, workload="", prepared=prepared, rules=rules, budget=Budget(), timeout=0, argv=[])
    out = {d.candidate for d in infeasible(prepared)}
    ready = [
        p.arm.name for p in prepared.arms if not p.arm.is_control and not p.arm.is_baseline and p.arm.name not in out
    ]
    return _round_size(s, race.plan_round(ready, rules, random.Random(0)))


def infeasible(prepared: PreparedRecipe) -> list[Decision]:
    """The candidates this build or machine cannot run (stopped before launch, or a draft no acceptance can pay):
    out of the race before it starts."""
    out = []
    for p in prepared.arms:
        if p.arm.is_control:
            continue
        if p.stop_status:
            out.append(Decision(p.arm.name, Exit.INFEASIBLE, status=p.stop_status, note=p.stop_reason))
        elif p.draft_warning:
            out.append(Decision(p.arm.name, Exit.INFEASIBLE, note=p.draft_warning))
    return out


def predicted_slower(settings: RaceSettings, state: RaceState) -> list[Decision]:
    """Before round 1: each candidate's speedup predicted from this machine's probe and the pair's acceptance
    (run/predictions, probing where nothing current is stored); those whose interval lies wholly below plain
    decoding leave (Exit.PREDICTED_SLOWER), and the rest are raced in the order of their predictions, the most
    promising first (unpredicted ones first of all: only a run can say). An n-gram setting is predicted from one probe
    run of its own (run/lookup_probe), so a space of them costs a run each before round 1."""
    prepared = settings.prepared
    found = predictions.before_sweep(settings.database, prepared.build, prepared.arms, prepared.plan.mode)
    by_name = {a.arm: a.prediction for a in found}
    order = {name: -(p.high if p else float("inf")) for name, p in by_name.items()}
    prepared.arms.sort(key=lambda p: order.get(p.arm.name, 0.0))  # stable: controls and the baseline keep theirs
    return [
        Decision(name, Exit.PREDICTED_SLOWER, speedup=p.speedup, note=f"[{p.low:.2f}, {p.high:.2f}]")
        for name, p in by_name.items()
        if p is not None and p.high < 1 and name not in state.left
    ]


def _all_predicted_slower(settings: RaceSettings, state: RaceState) -> Decision | None:
    """The best prediction where every candidate that could run was predicted slower (nothing to race); None
    where one is left to race."""
    left = [state.left.get(c) for c in feasible(settings, state)]
    if not left or any(d is None or d.kind is not Exit.PREDICTED_SLOWER for d in left):
        return None
    return max(left, key=lambda d: d.speedup or 0.0)


def _predicted_reason(best: Decision) -> str:
    return (
        f"every setting that can run here is predicted below plain decoding's speed, interval and all (the "
        f"best, {best.candidate}, at {best.speedup:.2f}x {best.note}), from this machine's probe and the pair's "
        f"acceptance on this workload; add --measure to race them anyway"
    )


def _runs(settings: RaceSettings, state: RaceState) -> list[dict]:
    with settings.database.read() as con:
        return tune_queries.race_runs(con, [x["sweep_id"] for x in state.rounds])


def _record(settings: RaceSettings, state: RaceState, number: int, decided: list[Decision]) -> None:
    """Store the round's decisions (a candidate leaves once; an end is stored once) and apply them to the state."""
    decided = [
        d.at(number)
        for d in decided
        if (d.candidate not in state.left or d.kind.ends) and not (state.ended and d.kind.ends)
    ]
    if not decided:
        return
    with settings.database.write() as con:
        tunes.insert_events(
            con, [{"tune_id": settings.tune_id, "workload": settings.workload, **decisions.to_row(d)} for d in decided]
        )
    state.left.update({d.candidate: d for d in decided if d.kind.leaves})


def _dropped_note(drops: list[Decision], out: dict[str, Decision]) -> str:
    parts = []
    if drops:
        parts.append(
            f"dropped {len(drops)} as slower ({', '.join(d.candidate for d in drops[:3])}"
            f"{', ...' if len(drops) > 3 else ''})"
        )
    if out:
        said = "; ".join(f"{n}: {decisions.words(d, event=False)}" for n, d in list(out.items())[:2])
        parts.append(f"disqualified {len(out)} ({said}{'; ...' if len(out) > 2 else ''})")
    return "; " + "; ".join(parts)


def _round_size(settings: RaceSettings, blocks: list[list[str]]) -> int:
    return sum(len(_block_arms(settings, b)) for b in blocks)


def _next_round(settings: RaceSettings, runs: list[dict], ranked: list[str], rng: random.Random) -> list[list[str]]:
    """The next round's blocks: every runner once if the budget allows it, else the most promising that it does
    (successive halving); none when not even the leader's next run fits. rng is drawn once, whatever was tried."""
    seed = rng.random()
    for count in range(len(ranked), 0, -1):
        blocks = race.plan_round(ranked[:count], settings.rules, random.Random(seed))
        if _affordable(settings, runs, blocks):
            return blocks
    return []


def _affordable(settings: RaceSettings, runs: list[dict], blocks: list[list[str]]) -> bool:
    if not blocks:
        return False
    count, seconds = spent(runs)
    size = _round_size(settings, blocks)
    if settings.budget.runs is not None and count + size > settings.budget.runs:
        return False
    if settings.budget.seconds is not None and count:
        return seconds + size * seconds / count <= settings.budget.seconds
    return True


def _block_arms(settings: RaceSettings, block: list[str]) -> list[str]:
    """A block's arms: the baseline, the controls of its candidates, the candidates."""
    controls = sorted({settings.controls[c] for c in block if c in settings.controls})
    return [settings.baseline, *controls, *block]


def _run_round(
    settings: RaceSettings, state: RaceState, number: int, blocks: list[list[str]], rng: random.Random, *, of: int
) -> None:
    slots = []
    for index, block in enumerate(blocks):
        arms = _block_arms(settings, block)
        rng.shuffle(arms)
        slots += [Slot(arm, index) for arm in arms]
    used = {slot.arm for slot in slots}
    arms = [p for p in settings.prepared.arms if p.arm.name in used]
    prepared = replace(
        settings.prepared,
        plan=replace(settings.prepared.plan, arms=[p.arm for p in arms], repeat=len(blocks)),
        arms=arms,
    )
    running = sum(len(b) for b in blocks)
    halved = f" (the {running} most promising of {of}: the budget does not run them all)" if running < of else ""
    settings.say(
        f"orch: tune {settings.tune_id} ({settings.workload}): round {number}: {running} candidate(s) in "
        f"{len(blocks)} block(s), {len(slots)} runs{halved}"
    )
    options = RunOptions(timeout=settings.timeout, only=slots, orch_argv=settings.argv)
    opened = recipe_run.open_sweep(prepared, options)
    with settings.database.write() as con:
        tunes.insert_round(con, settings.tune_id, settings.workload, number, opened.id, blocks, settings.planned)
    state.rounds.append(
        {
            "workload": settings.workload,
            "round": number,
            "sweep_id": opened.id,
            "blocks": blocks,
            "references": settings.planned,
        }
    )
    result = recipe_run.execute(prepared, opened, options)
    if result.status == "interrupted":
        raise KeyboardInterrupt
