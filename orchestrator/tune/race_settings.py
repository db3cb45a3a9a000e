"""What one workload's race is given (RaceSettings: the prepared candidates, the rule, the budget, fixed from its
start or resume to its answer) and what it has done (RaceState: rounds and decisions, as the store holds them), with
what follows from them alone: the candidates that can run, what the grid would spend, the default budget.
tune/driver.py races with them; tune/preview.py and tune/session.py build them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator import store
from orchestrator.run.recipe_run import PreparedRecipe
from orchestrator.tune import answer
from orchestrator.tune.decisions import Decision, Exit
from orchestrator.tune.rules import Rules

MOST_BUDGET = 2**31 - 1  # runs or seconds: what tunes.budget holds, and more than any race spends


@dataclass(frozen=True)
class Budget:
    """The most one workload's race may spend: runs (the planned runs of its sweeps: candidates, baseline and
    controls, as a grid's are counted; the count-matched references a drafting run adds are not) and seconds (the
    wall time of every run, those references included)."""

    runs: int | None = None
    seconds: float | None = None

    def to_dict(self) -> dict:
        return {"runs": self.runs, "seconds": self.seconds}

    def check(self) -> Budget:
        """Itself where it is a budget `--budget` could give (a stored one is data: an import brought it); else
        ValueError saying which part is not."""
        if self.runs is not None and (type(self.runs) is not int or not 0 < self.runs <= MOST_BUDGET):
            raise ValueError(f"budget runs {self.runs!r} is no count of runs from 1 to {MOST_BUDGET:,}")
        if self.seconds is not None and (type(self.seconds) not in (int, float) or not 0 < self.seconds <= MOST_BUDGET):
            raise ValueError(f"budget seconds {self.seconds!r} is no time from 0 to {MOST_BUDGET:,} seconds")
        return self


@dataclass(frozen=True)
class RaceSettings:
    """What one workload's race is given, the same from its start (or resume) to its answer: the prepared
    candidates, the rule, the budget and the run options."""

    tune_id: int
    workload: str
    prepared: PreparedRecipe
    rules: Rules
    budget: Budget
    timeout: float
    argv: list[str]
    say: object = print
    measure: bool = False  # race the candidates predicted slower than plain decoding too

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
    def planned(self) -> dict[str, str]:
        return plan_references(self.prepared)

    @property
    def controls(self) -> dict[str, str]:
        """candidate -> the control its like-for-like figure is against."""
        return {
            p.arm.name: p.arm.reference
            for p in self.prepared.arms
            if not p.arm.is_control and p.arm.reference and p.arm.reference != self.baseline
        }


@dataclass
class RaceState:
    """What the store holds of one workload's race so far: it grows with every round and decision."""

    rounds: list[dict] = field(default_factory=list)  # stored tune_rounds of this workload
    left: dict[str, Decision] = field(default_factory=dict)  # candidate -> why it left
    ended: bool = False  # its end (winner, tied, refused) is stored: a resume only reads the answer back

    @classmethod
    def stored(cls, rounds: list[dict], decided: list[Decision]) -> RaceState:
        """A resumed race's state: its stored rounds and decisions (decisions.from_row), in the order made."""
        return cls(
            rounds=list(rounds),
            left={d.candidate: d for d in decided if d.kind.leaves},
            ended=any(d.kind.ends for d in decided),
        )


def feasible(settings: RaceSettings, state: RaceState) -> list[str]:
    """The candidates but plain decoding that this build can run (the grid would run them)."""
    return [
        c
        for c in settings.candidates
        if c != settings.baseline and not (c in state.left and state.left[c].kind is Exit.INFEASIBLE)
    ]


def grid_cost(settings: RaceSettings, state: RaceState, seconds_per_run: float | None = None) -> tuple[int, float]:
    """What the grid would spend on this race's candidates: answer.grid_cost of the feasible ones."""
    return answer.grid_cost(
        len(feasible(settings, state)),
        len(set(settings.controls.values())),
        seconds_per_run,
        settings.rules.grid_repeats,
    )


def with_default(budget: Budget, *, grid_runs: int) -> Budget:
    """No --budget: the race may spend what the grid would (every candidate, plain decoding and the controls at the
    rule's grid repeats), never more; a budget given in runs or time stands as given."""
    return Budget(runs=grid_runs) if budget.runs is None and budget.seconds is None else budget


def plan_references(prepared: PreparedRecipe) -> dict[str, str]:
    """arm -> its reference in the plan (its control, or the baseline): what a count-matched rerun stands for."""
    return {p.arm.name: p.arm.reference for p in prepared.arms if p.arm.reference}
