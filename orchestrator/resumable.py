"""What `--resume` names, for the commands that resume a stored session (orch bisect, orch tune): its row, checked.

A number or "latest" (the newest unfinished); refused with one line when the results file, the session or its
recipe is not there, when it is done, or when its recipe changed since it started (its runs would not compare).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import OrchError
from orchestrator.hashing import sha256_text


@dataclass(frozen=True)
class Session:
    noun: str  # "bisect", "tune"
    error: type[OrchError]
    start: str  # the command that starts one, for the messages
    latest: Callable  # con -> the newest unfinished row, or None
    by_id: Callable  # (con, id) -> the row, or None
    done: Callable[[dict], str]  # a done row -> what to say of it
    units: str = "runs"  # what would no longer compare if the recipe changed


def stored_row(database, ref: str, session: Session) -> dict:
    noun, error = session.noun, session.error
    if not database.path.exists():
        raise error(f"no results file {database.path}, so no {noun} to resume; start one with `{session.start}`")
    with database.read() as con:
        if ref == "latest":
            row = session.latest(con)
        elif ref.isdigit():
            row = session.by_id(con, int(ref))
        else:
            raise error(f"--resume {ref}: give a {noun} number (the progress lines name it)")
    if row is None:
        what = f"unfinished {noun}" if ref == "latest" else f"{noun} {ref}"
        raise error(f"no {what} in {database.path}; start one with `{session.start}`")
    if row["state"] == "done":
        raise error(f"{noun} {row['id']} is done{session.done(row)}; nothing to resume")
    recipe = Path(row["recipe_path"])
    if not recipe.exists() or sha256_text(recipe.read_text()) != row["recipe_hash"]:
        raise error(
            f"{noun} {row['id']}'s recipe {recipe} is gone or has changed since it started, so its "
            f"{session.units} would not compare; start a new {noun}"
        )
    return row
