"""What a tune is asked (TuneRequest: the recipe, space, workloads, budget and rules) and what it answers
(TuneResult); a workload named as a file, and its values as --set items."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import InvalidOption, TuneResumeError
from orchestrator.tune import answer
from orchestrator.tune.race_settings import Budget
from orchestrator.tune.rules import Rules


@dataclass
class TuneRequest:
    recipe: Path
    build_ref: str | None = None
    vars_file: Path | None = None
    overrides: tuple[str, ...] = ()
    models: Path | None = None
    arms: tuple[str, ...] = ()
    space: str | None = None  # --space as given: a file or built-in names; None: the recipe's own arms
    workloads: tuple[str, ...] = ()  # names (recipes/workloads/NAME.toml) or files; none: the recipe's own prompt
    budget: Budget = field(default_factory=Budget)
    rules: Rules = field(default_factory=Rules)
    timeout: float = 600.0
    db: Path | None = None
    measure: bool = False  # race the candidates predicted slower than plain decoding too


@dataclass
class TuneResult:
    tune_id: int
    answers: list[answer.Answer]
    notes: list[str] = field(default_factory=list)
    build: str | None = None  # the build raced on, as the stored result names it (`--show`)

    @property
    def verdict(self) -> str:
        return f"tune {self.tune_id}: " + "; ".join(a.verdict for a in self.answers)

    def to_dict(self) -> dict:
        """As `orch tune --json` prints it: the stored result (answers, verdict, build) with the tune's id."""
        out = {"tune_id": self.tune_id, "answers": [a.to_dict() for a in self.answers], "verdict": self.verdict}
        return {**out, "build": self.build} if self.build else out

    @classmethod
    def stored(cls, row: dict) -> TuneResult:
        """A finished tune's answers read back from its row (`--show`); one line where they do not read."""
        try:
            return cls(
                row["id"],
                [answer.Answer.from_dict(a) for a in row["result"]["answers"]],
                build=row["result"].get("build"),
            )
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise TuneResumeError(
                f"tune {row['id']}: its stored answer does not read ({type(exc).__name__}: "
                f"{exc}); `orch report --tune {row['id']}` shows its decisions"
            ) from None


LISTS_INSTEAD = "race values with --space, or run them with orch run --set"  # a tune's --set takes one value


def workload_files(names: tuple[str, ...], recipe: Path) -> list[Path | None]:
    """Each --workload as a file: a path as given, else NAME.toml in the recipe's workloads/ folder."""
    if not names:
        return [None]
    out = []
    for name in names:
        path = Path(name).expanduser()
        if path.suffix != ".toml":
            path = Path(recipe).parent / "workloads" / f"{name}.toml"
        if not path.is_file():
            there = sorted(p.stem for p in (Path(recipe).parent / "workloads").glob("*.toml"))
            raise InvalidOption(
                f"--workload {name}: no file {path}; give a TOML file of variables (prompt, "
                f"n_predict) or one of {', '.join(there) or 'none found'}"
            )
        out.append(path)
    return out


def as_overrides(values: dict) -> tuple[str, ...]:
    """A workload's (or a stored vars file's) variables as --set items (TOML literals), so --vars stays the user's."""
    return tuple(f"{k}={json.dumps(v)}" for k, v in values.items())


def workload_key(workload: Path | None) -> str:
    """How a workload's stored values are found again: its absolute path, as the tune row lists it."""
    return str(workload.absolute()) if workload else "None"
