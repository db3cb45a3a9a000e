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

    def check(self) -> Rules:
        """Itself where every value is one the options could give (a stored rule is data: an import brought it);
        else ValueError naming the value."""
        if type(self.alpha) not in (int, float) or not 0 < self.alpha <= 0.5:
            raise ValueError(f"alpha {self.alpha!r} is not within (0, 0.5]")
        if type(self.tie_margin) not in (int, float) or not 0 <= self.tie_margin < 1:
            raise ValueError(f"tie_margin {self.tie_margin!r} is not within [0, 1)")
        for name in ("min_runs", "max_runs", "group", "grid_repeats"):
            value = getattr(self, name)
            if type(value) is not int or not 1 <= value <= 10_000:
                raise ValueError(f"{name} {value!r} is no whole number from 1 to 10,000")
        if self.max_runs < self.min_runs:
            raise ValueError(f"max_runs {self.max_runs} is below min_runs {self.min_runs}")
        return self


def percent(fraction: float) -> str:
    """0.02 -> "2%", 0.025 -> "2.5%": a margin as the verdict and the report say it."""
    return f"{100 * fraction:g}%"
