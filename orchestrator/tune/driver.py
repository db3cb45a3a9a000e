"""One workload's race: the recipe prepared once with the space, then rounds, each an ordinary stored sweep.

A round runs every survivor once (the most promising that fit when the budget cannot: _next_round), in blocks
(race.plan_round): a block is one repeat of the round's sweep holding the baseline, the controls its candidates are
measured against, and the candidates, in shuffled order (seeded by the tune, the workload and the round: a rerun
shuffles alike). The round is recorded (tune_rounds) before it runs, so a killed tune finds its runs; after it, the
race reads every run of the workload's rounds back from the store (guards, scores, drops: race.py), records its
decisions (tune_events), and either ends or plans the next round.
A resume is the same loop entered with the stored rounds and decisions: what was decided stays, the runs already
started count against the budget (the one a stop cut short too), and the race goes on with its next round.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from orchestrator import store
from orchestrator.recipe import control
from orchestrator.recipe.schedule import Slot
from orchestrator.run import recipe_run
from orchestrator.run.recipe_run import PreparedRecipe, RunOptions
from orchestrator.store import tune_queries, tunes
from orchestrator.tune import answer, guards, race

LEFT_EVENTS = ("infeasible", "disqualified", "dropped")
ENDS = ("winner", "tied", "refused")


@dataclass(frozen=True)
class Budget:
    """The most one workload's race may spend: runs (the planned runs of its sweeps: candidates, baseline and
    controls, as a grid's are counted; the count-matched references a drafting run adds are not) and seconds (the
    wall time of every run, those references included)."""

    runs: int | None = None
    seconds: float | None = None

    def to_dict(self) -> dict:
        return {"runs": self.runs, "seconds": self.seconds}


@dataclass
class Race:
    """What one workload's race knows: the prepared candidates and what the store holds of it."""

    tune_id: int
    workload: str
    prepared: PreparedRecipe
    rules: race.Rules
    budget: Budget
    allow_output_change: bool
    timeout: float
    argv: list[str]
    say: object = print
    rounds: list[dict] = field(default_factory=list)  # stored tune_rounds of this workload
    left: dict[str, str] = field(default_factory=dict)  # candidate -> event: reason
    ended: bool = False  # its end (winner, tied, refused) is stored: a resume only reads the answer back

    @property
    def database(self) -> store.Database:
        return self.prepared.database

    @property
    def baseline(self) -> str:
        return next(p.arm.name for p in self.prepared.arms if p.arm.is_baseline)

    @property
    def candidates(self) -> list[str]:
        """Every arm but the controls: plain decoding (the baseline) is the candidate "speculation off"."""
        return [p.arm.name for p in self.prepared.arms if not p.arm.is_control]

    @property
    def feasible(self) -> list[str]:
        """The candidates but plain decoding that this build can run (the grid would run them)."""
        return [c for c in self.candidates if c != self.baseline
                and not self.left.get(c, "").startswith("infeasible")]

    def grid_cost(self, seconds_per_run: float | None = None) -> tuple[int, float]:
        """What the grid would spend on this race's candidates: answer.grid_cost of the feasible ones."""
        return answer.grid_cost(len(self.feasible), len(set(self.controls.values())), seconds_per_run)

    @property
    def planned(self) -> dict[str, str]:
        return plan_references(self.prepared)

    @property
    def controls(self) -> dict[str, str]:
        """candidate -> the control its like-for-like figure is against."""
        return {p.arm.name: p.arm.reference for p in self.prepared.arms
                if not p.arm.is_control and p.arm.reference and p.arm.reference != self.baseline}


def with_default(budget: Budget, *, grid_runs: int) -> Budget:
    """No --budget: the race may spend what the grid would (every candidate, plain decoding and the controls at 5
    repeats), never more; a budget given in runs or time stands as given."""
    return Budget(runs=grid_runs) if budget.runs is None and budget.seconds is None else budget


def plan_references(prepared: PreparedRecipe) -> dict[str, str]:
    """arm -> its reference in the plan (its control, or the baseline): what a count-matched rerun stands for."""
    return {p.arm.name: p.arm.reference for p in prepared.arms if p.arm.reference}


def run_race(r: Race) -> answer.Answer:
    """Race to an answer (storing every round and decision), from the start or from what the store holds."""
    baseline = r.baseline
    speculating = {p.arm.name for p in r.prepared.arms if control.speculates(p.executed or p.arm.argv)}
    if not r.rounds and not r.left:
        _record(r, 0, [{"candidate": p.arm.name, "event": "infeasible", "reason": _infeasible(p)}
                       for p in r.prepared.arms if not p.arm.is_control and _infeasible(p)])
    r.budget = with_default(r.budget, grid_runs=r.grid_cost()[0])
    while True:
        runs = _runs(r)
        number = max((x["round"] for x in r.rounds), default=0)
        refusal = guards.looping_baseline(runs, baseline)
        if refusal:
            _record(r, number, [{"candidate": baseline, "event": "refused", "reason": refusal}])
            return _answer(r, runs, "refused", None, [], reason=refusal)
        survivors = [c for c in r.candidates if c not in r.left]
        out = guards.disqualified(runs, set(survivors) - {baseline}, speculating,
                                  allow_output_change=r.allow_output_change)
        _record(r, number, [{"candidate": n, "event": "disqualified", "reason": why} for n, why in out.items()])
        survivors = [c for c in survivors if c not in out]
        scores = race.block_scores(runs, baseline, set(r.candidates) | set(r.controls.values()), r.planned)
        noise = race.pooled_noise(scores, [n for n in scores if n not in r.left and n != baseline],
                                  race.programs(scores, r.planned, baseline))
        drops = race.eliminate(scores, survivors, baseline, noise, r.rules)
        _record(r, number, [{"candidate": d.name, "event": "dropped", "reason": d.reason, "speedup": d.speedup}
                            for d in drops])
        survivors = [c for c in survivors if c not in r.left]
        rng = random.Random(f"{r.tune_id}:{r.workload}:{number + 1}")
        runners = race.needing_runs(scores, survivors, baseline, r.rules)
        blocks = _next_round(r, runs, race.by_promise(scores, runners), rng)
        outcome = race.decide(scores, survivors, baseline, noise, r.rules, budget_left=bool(blocks))
        if number and (drops or out):
            r.say(f"orch: tune {r.tune_id} ({r.workload}): after round {number}, {len(survivors)} left"
                  f"{_dropped_note(drops, out)}")
        if r.ended and outcome.state == race.RACING:  # decided before; the same data decide alike
            outcome = race.Outcome(race.UNSEPARATED, outcome.leader, outcome.survivors)
        if outcome.state != race.RACING:
            _record(r, number, [{"candidate": n, "event": "winner" if outcome.state == race.WINNER else "tied",
                                 "reason": outcome.state, "speedup": answer.speedup(scores, n, noise).ratio
                                 if scores.get(n) else None}
                                for n in outcome.survivors])
            return _answer(r, runs, outcome.state, outcome.leader if outcome.state == race.WINNER else None,
                           list(outcome.survivors), scores=scores, noise=noise)
        _run_round(r, number + 1, blocks, rng, of=len(runners))


def first_round_runs(prepared: PreparedRecipe, rules: race.Rules) -> int:
    """The planned runs of round 1 (every feasible candidate once, with plain decoding and the controls per block):
    the least budget a race can start with."""
    r = Race(tune_id=0, workload="", prepared=prepared, rules=rules, budget=Budget(), allow_output_change=False,
             timeout=0, argv=[])
    feasible = [p.arm.name for p in prepared.arms if not p.arm.is_control and not p.arm.is_baseline
                and not _infeasible(p)]
    return _round_size(r, race.plan_round(feasible, rules, random.Random(0)))


def _infeasible(prepared) -> str | None:
    if prepared.stop_status:
        return f"infeasible: {prepared.stop_status} before launch: {prepared.stop_reason}"
    if prepared.draft_warning:
        return f"infeasible: {prepared.draft_warning}"
    return None


def _runs(r: Race) -> list[dict]:
    with r.database.read() as con:
        return tune_queries.race_runs(con, [x["sweep_id"] for x in r.rounds])


def _record(r: Race, number: int, events: list[dict]) -> None:
    events = [e for e in events if (e["candidate"] not in r.left or e["event"] in ENDS)
              and not (r.ended and e["event"] in ENDS)]
    if not events:
        return
    with r.database.write() as con:
        tunes.insert_events(con, [{"tune_id": r.tune_id, "workload": r.workload, "round": number, **e}
                                  for e in events])
    for e in events:
        if e["event"] in LEFT_EVENTS:
            reason = e["reason"] or ""
            r.left[e["candidate"]] = reason if reason.startswith(e["event"]) else f"{e['event']}: {reason}"


def _dropped_note(drops: list[race.Drop], out: dict[str, str]) -> str:
    parts = []
    if drops:
        parts.append(f"dropped {len(drops)} as slower ({', '.join(d.name for d in drops[:3])}"
                     f"{', ...' if len(drops) > 3 else ''})")
    if out:
        parts.append(f"disqualified {len(out)} ({', '.join(f'{n}: {why}' for n, why in list(out.items())[:2])}"
                     f"{'; ...' if len(out) > 2 else ''})")
    return "; " + "; ".join(parts)


def _spent(runs: list[dict]) -> tuple[int, float]:
    """(planned runs started, wall seconds of every run started). A run stopped by Ctrl-C or a kill counts: it was
    spent, and a tune stopped and resumed three times would otherwise overspend its budget by three runs."""
    started = [x for x in runs if x["status"] != "skipped"]
    return sum(1 for x in started if x["planned"]), sum(x["wall_s"] or 0.0 for x in started)


def _round_size(r: Race, blocks: list[list[str]]) -> int:
    return sum(len(_block_arms(r, b)) for b in blocks)


def _next_round(r: Race, runs: list[dict], ranked: list[str], rng: random.Random) -> list[list[str]]:
    """The next round's blocks: every runner once if the budget allows it, else the most promising that it does
    (successive halving); none when not even the leader's next run fits. rng is drawn once, whatever was tried."""
    seed = rng.random()
    for count in range(len(ranked), 0, -1):
        blocks = race.plan_round(ranked[:count], r.rules, random.Random(seed))
        if _affordable(r, runs, blocks):
            return blocks
    return []


def _affordable(r: Race, runs: list[dict], blocks: list[list[str]]) -> bool:
    if not blocks:
        return False
    count, seconds = _spent(runs)
    size = _round_size(r, blocks)
    if r.budget.runs is not None and count + size > r.budget.runs:
        return False
    if r.budget.seconds is not None and count:
        return seconds + size * seconds / count <= r.budget.seconds
    return True


def _block_arms(r: Race, block: list[str]) -> list[str]:
    """A block's arms: the baseline, the controls of its candidates, the candidates."""
    controls = sorted({r.controls[c] for c in block if c in r.controls})
    return [r.baseline, *controls, *block]


def _run_round(r: Race, number: int, blocks: list[list[str]], rng: random.Random, *, of: int) -> None:
    slots = []
    for index, block in enumerate(blocks):
        arms = _block_arms(r, block)
        rng.shuffle(arms)
        slots += [Slot(arm, index) for arm in arms]
    used = {s.arm for s in slots}
    arms = [p for p in r.prepared.arms if p.arm.name in used]
    prepared = replace(r.prepared, plan=replace(r.prepared.plan, arms=[p.arm for p in arms], repeat=len(blocks)),
                       arms=arms)
    running = sum(len(b) for b in blocks)
    halved = f" (the {running} most promising of {of}: the budget does not run them all)" if running < of else ""
    r.say(f"orch: tune {r.tune_id} ({r.workload}): round {number}: {running} candidate(s) in "
          f"{len(blocks)} block(s), {len(slots)} runs{halved}")
    options = RunOptions(timeout=r.timeout, only=slots, orch_argv=r.argv)
    opened = recipe_run.open_sweep(prepared, options)
    with r.database.write() as con:
        tunes.insert_round(con, r.tune_id, r.workload, number, opened.id, blocks, r.planned)
    r.rounds.append({"workload": r.workload, "round": number, "sweep_id": opened.id, "blocks": blocks,
                     "references": r.planned})
    result = recipe_run.execute(prepared, opened, options)
    if result.status == "interrupted":
        raise KeyboardInterrupt


def _answer(r: Race, runs: list[dict], state: str, winner: str | None, survivors: list[str], *,
            scores: race.Scores | None = None, noise: race.Noise | None = None, reason: str | None = None
            ) -> answer.Answer:
    scores = scores if scores is not None else race.block_scores(runs, r.baseline, set(r.candidates), r.planned)
    count, seconds = _spent(runs)
    grid_runs, grid_seconds = r.grid_cost(seconds / count if count else None)
    acceptance = {}
    for name in r.candidates:
        values = [x["acceptance"] for x in runs if x["arm"] == name and x["status"] == "ok"
                  and x["acceptance"] is not None]
        acceptance[name] = race.mean(values)
    out = answer.Answer(workload=r.workload, state=state, winner=winner, tied=[] if winner else survivors,
                        runs=count, seconds=seconds, grid_runs=grid_runs, grid_seconds=grid_seconds,
                        rounds=max((x["round"] for x in r.rounds), default=0), candidates=len(r.feasible) + 1,
                        reason=reason, left=dict(r.left), noise=noise.sd if noise else None)
    out.rows = answer.table(scores, noise or race.Noise(None, 0), reference=r.baseline, survivors=survivors,
                            left=r.left,
                            like_for_like=race.control_scores(runs, set(r.candidates), r.baseline, r.planned),
                            acceptance=acceptance, outcome=state, winner=winner)
    shown = winner or race.leader(scores, survivors)  # tied or not separated: the leader's, labelled as such
    if shown:
        argv = _argv(r, shown)
        out.command = answer.command_line(argv)
        build = r.prepared.build  # plain decoding too: "no speculation" is served without a draft
        out.server = answer.server_line(argv, build.tool("llama-server"), build.help_texts().get("llama-server"))
    if state != "refused" and shown in (None, r.baseline):  # plain decoding leads: the fastest setting that speculates, for what it cost
        out.best_speculating = answer.best_speculating(scores, noise or race.Noise(None, 0), r.candidates,
                                                       r.baseline, r.left)
        if out.best_speculating:
            out.best_speculating["command"] = answer.command_line(_argv(r, out.best_speculating["candidate"]))
    out.verdict = answer.verdict(out)
    return out


def _argv(r: Race, name: str) -> list[str]:
    prepared = next(p for p in r.prepared.arms if p.arm.name == name)
    return prepared.executed or prepared.arm.argv
