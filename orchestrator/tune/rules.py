"""The racing rule a tune is started with and stored with (tunes.rules): a resume, the verdict and the answer's
cost line read these, never a number of their own. Light on purpose: `orch tune --help` says its defaults."""

from __future__ import annotations

from dataclasses import asdict, dataclass

GRID_REPEATS = 5  # the brute-force grid a race is measured against: every candidate at this many repeats


@dataclass(frozen=True)
class Rules:
    """The racing rule, stored with the tune (a resume races by the same rule)."""

    alpha: float = 0.05  # per round, over that round's comparisons with the leader (Holm)
    tie_margin: float = 0.02  # survivors whose 95% bounds sit within this of the leader: practically the same
    min_runs: int = 3  # scores a winner needs (its interval is reported)
    max_runs: int = 10  # a candidate's scores after which more runs are not spent on it
    group: int = 8  # candidates per block, beside the baseline and their controls
    grid_repeats: int = GRID_REPEATS  # the grid the default budget and the cost are against (tunes before: 5)
    # a candidate whose text differs from its control's stays in the race (--allow-output-change), said so
    allow_output_change: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def percent(fraction: float) -> str:
    """0.02 -> "2%", 0.025 -> "2.5%": a margin as the verdict and the report say it."""
    return f"{100 * fraction:g}%"
