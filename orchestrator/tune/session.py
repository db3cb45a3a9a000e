"""One `orch tune` from start (or resume) to answer: its `tunes` row, one race per workload, the answers.

A workload is a TOML file of recipe variables (recipes/workloads/NAME.toml: the prompt, n_predict, its name), layered
between --vars and --set; each gets its own race, so the answer can differ per workload ("code edit: ngram-mod ...;
prose: no speculation"). Interrupted, the tune is stored `interrupted` with every round and decision so far, and
`orch tune --resume` goes on with the same recipe, space, budget and rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator import store
from orchestrator.build.finished import Build
from orchestrator.build.on_disk import runnable_build
from orchestrator.errors import Interrupted, InvalidOption, OrchError, TuneResumeError
from orchestrator.hashing import sha256_text
from orchestrator.parse.modes import mode_of, names_where
from orchestrator.recipe.plan import parse_set, read_vars, recipe_meta
from orchestrator.recipe.set_lists import refuse_lists
from orchestrator.run import recipe_run
from orchestrator.run.recipe_run import RecipeRequest
from orchestrator.store import tune_queries, tunes
from orchestrator.tune import answer, decisions, driver, race_settings, space, stored_tune
from orchestrator.tune.decisions import Decision
from orchestrator.tune.request import LISTS_INSTEAD, TuneRequest, TuneResult, as_overrides, workload_files, workload_key


@dataclass
class Checked:
    """A tune as a start checks it, before anything is stored: its build, space and every workload's candidates."""

    build: Build
    files: list[Path | None]
    grids: list[dict] | None
    source: str | None
    notes: list[str]
    workloads: dict[str, dict]  # each workload file's values (its key: _key), what a resume races again
    prepared: dict[str, recipe_run.PreparedRecipe]  # by str(file)


def check(request: TuneRequest) -> Checked:
    """Everything a tune needs, checked (build, space, candidates, the budget against one round); nothing stored."""
    refuse_lists(request.overrides, "orch tune", LISTS_INSTEAD)
    build = runnable_build(request.build_ref)
    files = workload_files(request.workloads, request.recipe)
    grids, source, notes = _space(request, build)
    workloads = {workload_key(f): read_vars(f) if f else {} for f in files}
    prepared = {str(f): _prepare(request, build, workloads[workload_key(f)], grids) for f in files}
    if request.budget.runs is not None:  # refused before the tune exists: a race needs its first round whole
        least = max(driver.first_round_runs(p, request.rules) for p in prepared.values())
        if request.budget.runs < least:
            raise InvalidOption(
                f"--budget {request.budget.runs}runs is less than one round (about {least} runs: "
                f"every candidate once, with plain decoding and the controls); give at least that, "
                f"or fewer candidates (--arms, --space)"
            )
    return Checked(build, files, grids, source, notes, workloads, prepared)


def start(request: TuneRequest, *, argv: list[str], say=print) -> TuneResult:
    """Check everything (build, space, every workload's candidates) before the tune row exists, then race."""
    found = check(request)
    build, files, grids, source, notes, workloads, prepared = (
        found.build,
        found.files,
        found.grids,
        found.source,
        found.notes,
        found.workloads,
        found.prepared,
    )
    database = store.Database(request.db or _db())
    given = {
        "vars_file": str(request.vars_file.absolute()) if request.vars_file else None,
        "vars_values": read_vars(request.vars_file),
        "workload_values": workloads,
        "overrides": list(request.overrides),
        "arms": list(request.arms),
        "models": str(request.models.absolute()) if request.models else None,
        "timeout": request.timeout,
    }
    with database.write() as con:
        tune_id = tunes.create_tune(
            con,
            {
                "recipe_path": str(request.recipe.absolute()),
                "recipe_hash": sha256_text(request.recipe.read_text()),
                "build_name": build.name,
                "variables": given,
                "space": grids,
                "space_source": source,
                "workloads": [str(f.absolute()) if f else None for f in files],
                "budget": request.budget.to_dict(),
                "rules": {**request.rules.to_dict(), "measure": request.measure},
                "argv": argv,
            },
        )
        stored_tune.own(con, tune_id)
    for note in notes:
        say(f"orch: tune {tune_id}: {note}")
    return _execute(database, tune_id, request, build, prepared, files, argv=argv, say=say, rounds=[], decided=[])


def resume(ref: str, db: Path | None, *, argv: list[str], say=print) -> TuneResult:
    database = store.Database(db or _db())
    row = stored_tune.stored(database, ref)
    stored_tune.check_recipe(row)
    request, files, values = stored_tune.stored_request(row, database.path)
    with database.read() as con:
        rounds, events = tune_queries.rounds(con, row["id"]), tune_queries.events(con, row["id"])
    try:  # decisions are read back typed; a row whose kind m025 could not tell refuses the resume in one line
        decided = [(e["workload"], decisions.from_row(e)) for e in events]
    except ValueError as exc:
        raise TuneResumeError(
            f"tune {row['id']}: a stored decision does not read ({exc}); it cannot be resumed: "
            f"start a new tune (`orch report --tune {row['id']}` shows what it decided)"
        ) from None
    stored_tune.check_space(row)  # an imported tune's space is data someone else made: checked as a fresh one's
    build = runnable_build(row["build_name"])
    prepared = {str(f): _prepare(request, build, values[str(f)], row["space"]) for f in files}
    stored_tune.take_over(database, row)
    say(f"orch: tune {row['id']}: resuming with {len(rounds)} round(s) already run")
    return _execute(
        database, row["id"], request, build, prepared, files, argv=argv, say=say, rounds=rounds, decided=decided
    )


def _db() -> Path:
    from orchestrator import config

    return config.db_path()


def _space(request: TuneRequest, build: Build) -> tuple[list[dict] | None, str | None, list[str]]:
    if not request.space:
        return None, None, []
    meta = recipe_meta(request.recipe)
    baseline = meta.get("baseline") if isinstance(meta.get("baseline"), dict) else {}
    variables = {**meta.get("defaults", {}), **read_vars(request.vars_file), **parse_set(request.overrides)}
    found = space.resolve(request.space, baseline=baseline, backend=build.backend, variables=variables)
    return found.grids, found.source, found.notes


def _prepare(request: TuneRequest, build: Build, workload: dict, grids: list[dict] | None):
    recipe = RecipeRequest(
        recipe=request.recipe,
        build_ref=build.name,
        vars_file=request.vars_file,
        overrides=as_overrides(workload) + tuple(request.overrides),
        models=request.models,
        arms=request.arms,
        db=request.db,
        space=None if grids is None else tuple(grids),
    )
    prepared = recipe_run.prepare_recipe(recipe, build)
    if not mode_of(prepared.plan.mode).races:
        raise InvalidOption(
            f"orch tune races {' and '.join(names_where('races'))} recipes; {request.recipe} is a "
            f"{prepared.plan.mode} recipe (recipes/tune.j2 is one made for it)"
        )
    if prepared.plan.baseline is None:
        raise InvalidOption(
            f"{request.recipe} has no baseline arm: tune measures every candidate against plain "
            f'decoding; give the recipe a baseline (`"baseline": {{...}}` in its meta)'
        )
    return prepared


def _execute(
    database,
    tune_id: int,
    request: TuneRequest,
    build: Build,
    prepared: dict,
    files: list,
    *,
    argv: list[str],
    say,
    rounds: list[dict],
    decided: list[tuple[str, Decision]],
) -> TuneResult:
    answers = []
    try:
        for f in files:
            name = answer.workload_name(f)
            settings = race_settings.RaceSettings(
                tune_id=tune_id,
                workload=name,
                prepared=prepared[str(f)],
                rules=request.rules,
                budget=request.budget,
                timeout=request.timeout,
                argv=argv,
                say=say,
                measure=request.measure,
            )
            state = race_settings.RaceState.stored(
                [x for x in rounds if x["workload"] == name], [d for w, d in decided if w == name]
            )
            found = driver.run_race(settings, state)
            say(f"orch: tune {tune_id}: {found.verdict}")
            answers.append(found)
    except (KeyboardInterrupt, Interrupted):
        _state(database, tune_id, "interrupted")
        raise Interrupted(
            f"tune {tune_id} interrupted; every finished run and decision is stored: continue it with "
            f"`orch tune --resume {tune_id}`"
        ) from None
    except OrchError as exc:
        _state(database, tune_id, "failed", {"error": str(exc)})
        raise
    result = TuneResult(tune_id, answers)
    _state(
        database,
        tune_id,
        "done",
        {"answers": [a.to_dict() for a in answers], "verdict": result.verdict, "build": build.name},
    )
    return result


def _state(database, tune_id: int, state: str, result: dict | None = None) -> None:
    with database.write() as con:
        tunes.set_tune_state(con, tune_id, state, result)
