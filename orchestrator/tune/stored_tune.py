"""A stored tune as `orch tune --resume` takes it up: checked resumable (its recipe unchanged, no live orch on it),
its stored rule read back, and taken over by this orch in one write (tune/session.py races it on).
"""

from __future__ import annotations

from pathlib import Path

from orchestrator import resumable, store
from orchestrator.errors import RecipeError, TuneResumeError
from orchestrator.hashing import sha256_text
from orchestrator.proc import Owner, this_process
from orchestrator.recipe.plan import parse_set, read_recipe, read_vars
from orchestrator.recipe.set_lists import refuse_lists
from orchestrator.store import tune_queries, tunes
from orchestrator.tune import space
from orchestrator.tune.race_settings import Budget
from orchestrator.tune.request import LISTS_INSTEAD, TuneRequest, as_overrides, workload_key
from orchestrator.tune.rules import Rules


def check_recipe(row: dict) -> None:
    """A resume races what was started: the recipe must be the one the tune stored (its sha256)."""
    path = Path(row["recipe_path"])
    try:
        now = sha256_text(read_recipe(path))
    except RecipeError:
        now = None
    if now != row["recipe_hash"]:
        what = "is gone" if now is None else "changed"
        raise TuneResumeError(
            f"tune {row['id']}: its recipe {path} {what} since the tune started; a resume races "
            f"what was started: restore the recipe, or start a new tune"
        )


def check_space(row: dict) -> None:
    """The stored space as a fresh tune checks one (tune/space.check_settings, its size): a resumed tune may have
    been imported, and its space made by anyone."""
    grids = row["space"]
    if grids is None:
        return
    where = f"tune {row['id']}: its stored space"
    if not isinstance(grids, list) or not grids:
        raise TuneResumeError(f"{where} is no list of grids; it cannot be resumed: start a new tune")
    # the "off" grid is plain decoding as the recipe's baseline has it (space.combine), not a setting raced
    space.check_settings(
        [g for g in grids if not (isinstance(g, dict) and g.get("_label") == "off")], where, TuneResumeError
    )
    if (total := sum(space.grid_size(g) for g in grids)) > space.MAX_RACED:
        raise TuneResumeError(
            f"{where} holds {total:,} candidates, more than a race takes ({space.MAX_RACED:,}); "
            f"it cannot be resumed: start a new tune"
        )


def stored_rules(row: dict) -> Rules:
    """The rule a tune was started with: what its resume races by (a tune stored before a rule existed takes its
    default; one that names no rule this orch knows raises TypeError)."""
    rules = dict(row["rules"])
    rules.pop("measure", None)  # read by the resume itself (a tune stored before it: False)
    return Rules(**{**rules, "allow_output_change": bool(rules.get("allow_output_change", False))})


def stored(database: store.Database, ref: str) -> dict:
    """The tune --resume names (a number, or the newest unfinished), checked to be resumable: also that no live
    orch runs it still."""
    row = resumable.stored_row(
        database,
        ref,
        resumable.Session(
            "tune",
            TuneResumeError,
            "orch tune RECIPE",
            lambda con: tune_queries.latest_tune(con, unfinished=True),
            tune_queries.tune_row,
            lambda row: f" (its answer: `orch tune --show {row['id']}`)",
        ),
    )
    owner = _owner(row)
    alive = owner.alive() if owner and row["state"] == "running" else False
    if alive:
        raise TuneResumeError(
            f"tune {row['id']} is still running (orch pid {owner.pid}); wait for it, or stop it "
            f"(Ctrl-C there, or `kill {owner.pid}`) and resume then"
        )
    if alive is None:
        raise TuneResumeError(
            f"tune {row['id']} is stored running by orch pid {owner.pid} on {owner.host}, which "
            f"cannot be checked from here; resume it on {owner.host}"
        )
    return row


def take_over(database: store.Database, row: dict) -> None:
    """Make this orch the owner of the tune `stored` checked, unless another orch took it over since (two
    --resume at once): the check and the take-over are one write, which one process holds at a time."""
    with database.write() as con:
        now = tune_queries.tune_row(con, row["id"])
        if _owner(now) != _owner(row) or now["state"] != row["state"]:
            raise TuneResumeError(
                f"tune {row['id']} was resumed by another orch (pid {now['owner_pid']}) a "
                f"moment ago; let it finish, or stop it and resume then"
            )
        tunes.set_tune_state(con, row["id"], "running")
        own(con, row["id"])


def _owner(row: dict) -> Owner | None:
    return Owner(row["owner_host"], row["owner_pid"], row["owner_started"]) if row.get("owner_pid") else None


def own(con, tune_id: int) -> None:
    me = this_process()
    tunes.set_owner(con, tune_id, host=me.host, pid=me.pid, started=me.started)


def stored_request(row: dict, db: Path) -> tuple[TuneRequest, list[Path | None], dict[str, dict]]:
    """A stored tune's request, its workload files and each one's values (by str(file)), as it started; a row that
    does not read is one line, never a traceback (a stored row is data)."""
    try:
        given = row["variables"] or {}
        kept = "vars_values" in given  # the files' values as the tune started (tunes stored before: their paths)
        request = TuneRequest(
            recipe=Path(row["recipe_path"]),
            build_ref=row["build_name"],
            vars_file=None if kept or not given.get("vars_file") else Path(given["vars_file"]),
            overrides=(*(as_overrides(given["vars_values"]) if kept else ()), *(given.get("overrides") or ())),
            arms=tuple(given.get("arms") or ()),
            models=Path(given["models"]) if given.get("models") else None,
            budget=Budget(**row["budget"]).check(),
            rules=stored_rules(row).check(),
            timeout=float(given.get("timeout", 600.0)),
            db=db,
            measure=bool(row["rules"].get("measure", False)),
        )
        if not 0 < request.timeout < float("inf"):
            raise ValueError(f"timeout {request.timeout!r} is no time limit")
        if not all(isinstance(o, str) for o in request.overrides):
            raise ValueError(f"overrides {request.overrides!r} are not --set items")
        refuse_lists(request.overrides, "orch tune", LISTS_INSTEAD)  # as a fresh tune's
        parse_set(request.overrides)
        files = [Path(w) if w else None for w in row["workloads"]]
        values = given["workload_values"] if kept else {workload_key(f): read_vars(f) if f else {} for f in files}
        return request, files, {str(f): values[workload_key(f)] for f in files}
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise TuneResumeError(
            f"tune {row['id']}: its stored settings do not read ({type(exc).__name__}: {exc}); "
            f"it cannot be resumed: start a new tune"
        ) from None
