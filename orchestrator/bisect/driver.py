"""A real bisect: search.search with a `measure` that builds the commit (only the recipe's tools, cached, ccache)
and runs the recipe on it as a stored sweep, every probe a `bisect_probes` row of its `bisects` row.

Interrupted (Ctrl-C, SIGTERM), the bisect is stored `interrupted`; `--resume` reads its probes back as the search's
prior measurements and goes on from there (the probe in flight is measured again).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator import store
from orchestrator.analyze import metric_samples
from orchestrator.bisect import search
from orchestrator.bisect.search import Measurement
from orchestrator.build.builder import build as build_commit
from orchestrator.build.finished import Build
from orchestrator.errors import (
    BisectRangeError,
    BuildFailed,
    Interrupted,
    ProbeFailed,
    SourceImportError,
    UnknownCommit,
)
from orchestrator.recipe.plan import Plan, load
from orchestrator.run import recipe_run
from orchestrator.run.recipe_run import RecipeRequest, RunOptions
from orchestrator.store import bisect_queries, bisects

# Tools one spelling of the recipe may be translated to on another build (the December 2025 split).
SAME_TOOL = {"llama-cli": ("llama-completion",), "llama-completion": ("llama-cli",)}


@dataclass
class Setup:
    """Everything a probe needs besides the commit: the recipe as `orch run` takes it, and what to read."""

    recipe: Path
    arm: str
    metric: str
    vars_file: Path | None = None
    overrides: tuple[str, ...] = ()
    models: Path | None = None
    timeout: float = 600.0
    backend: str = "cpu"
    tools: tuple[str, ...] = field(default_factory=tuple)
    say: object = print  # progress lines (stderr in the CLI)


UNBUILT_BIN = "/BIN"  # where the programs of a recipe rendered before any build exists are said to lie


def unbuilt_plan(setup: Setup) -> Plan:
    """The recipe rendered before any of the bisect's builds exists, for its arms and the programs they run: `bin`
    a placeholder folder and `build` with every key a build gives (build.finished.Build.described) but no commit,
    so a recipe that reads them renders as it will; each measurement renders it again with its commit's build."""
    unbuilt = {"commit": None, "upstream_commit": None, "backend": setup.backend, "name": None}
    return load(
        setup.recipe,
        builtins={"bin": UNBUILT_BIN, "build": unbuilt},
        vars_file=setup.vars_file,
        overrides=setup.overrides,
        models=setup.models,
    )


def recipe_tools(setup: Setup) -> tuple[str, ...]:
    """The programs the recipe's arms run (unbuilt_plan): all a probe needs built."""
    plan = unbuilt_plan(setup)
    names = {Path(a.argv[0]).name for a in plan.arms if a.argv}
    arms = [a.name for a in plan.arms]
    if setup.arm not in arms:
        raise BisectRangeError(f"--arm {setup.arm} is not an arm of {setup.recipe} (its arms: {', '.join(arms)})")
    return tuple(sorted(names | {alt for n in names for alt in SAME_TOOL.get(n, ())}))


def measurer(setup: Setup, database: store.Database, bisect_id: int):
    """measure(commit, repeats) for search.search, storing each attempt."""

    def measure(commit: str, repeats: int) -> Measurement:
        started = time.monotonic()
        try:
            built = build_commit(commit, backend=setup.backend, only_targets=setup.tools, db=database.path)
        except (BuildFailed, ProbeFailed, UnknownCommit, SourceImportError) as exc:
            took = time.monotonic() - started
            _probe_row(database, bisect_id, commit, None, None, "build_failed", str(exc), took, 0.0)
            return Measurement(commit, problem=search.BUILD_FAILED, detail=_short(str(exc)), build_s=took)
        build_s = time.monotonic() - started
        setup.say(
            f"orch: bisect {bisect_id}: {commit[:9]} built in {build_s:.1f}s ({built.name}); measuring "
            f"{repeats} repeat(s)"
        )
        started = time.monotonic()
        sweep_id, status = _run_sweep(setup, database, built, repeats)
        measure_s = time.monotonic() - started
        if status == "interrupted":
            _probe_row(database, bisect_id, commit, built, sweep_id, "interrupted", None, build_s, measure_s)
            raise KeyboardInterrupt
        samples, runs, failed = read_samples(database, [sweep_id], setup.arm, setup.metric)
        state = "measured" if samples else "runs_failed"
        detail = None if samples else f"no ok run of arm {setup.arm} with {setup.metric} (sweep {sweep_id})"
        _probe_row(database, bisect_id, commit, built, sweep_id, state, detail, build_s, measure_s)
        return Measurement(
            commit, samples, runs, failed, None if samples else search.RUNS_FAILED, detail, build_s, measure_s
        )

    return measure


def _run_sweep(setup: Setup, database: store.Database, built: dict, repeats: int) -> tuple[int, str]:
    """The recipe on the probe's build, as `orch run` runs it (recipe_run: the same pre-steps and rules)."""
    request = RecipeRequest(
        recipe=setup.recipe,
        vars_file=setup.vars_file,
        overrides=setup.overrides,
        models=setup.models,
        repeat=repeats,
        db=database.path,
    )
    prepared = recipe_run.prepare_recipe(request, build=built)
    opened = recipe_run.open_sweep(prepared, RunOptions(timeout=setup.timeout))
    result = recipe_run.execute(prepared, opened, RunOptions(timeout=setup.timeout))
    return opened.id, result.status


def read_samples(database: store.Database, sweep_ids: list[int], arm: str, metric: str) -> tuple[list[float], int, int]:
    with database.read() as con:
        return metric_samples.arm_samples(con, sweep_ids, arm, metric)


def prior(database: store.Database, bisect_id: int, arm: str, metric: str) -> dict[str, Measurement]:
    """What a stored bisect already measured, per commit (interrupted probes are measured again)."""
    with database.read() as con:
        rows = bisect_queries.probes(con, bisect_id)
    out: dict[str, Measurement] = {}
    for row in rows:
        if row["state"] == "interrupted":
            continue
        if row["state"] == "build_failed":
            m = Measurement(
                row["commit"],
                problem=search.BUILD_FAILED,
                detail=_short(row["detail"] or ""),
                build_s=row["build_s"] or 0.0,
            )
        else:
            samples, runs, failed = read_samples(database, [row["sweep_id"]], arm, metric)
            m = Measurement(
                row["commit"],
                samples,
                runs,
                failed,
                None if samples else search.RUNS_FAILED,
                row["detail"],
                row["build_s"] or 0.0,
                row["measure_s"] or 0.0,
            )
        out[row["commit"]] = out[row["commit"]].merged(m) if row["commit"] in out else m
    return out


def _probe_row(
    database: store.Database,
    bisect_id: int,
    commit: str,
    built: Build | None,
    sweep_id: int | None,
    state: str,
    detail: str | None,
    build_s: float,
    measure_s: float,
) -> None:
    with database.write() as con:
        bisects.insert_probe(
            con,
            {
                "bisect_id": bisect_id,
                "commit": commit,
                "upstream_commit": built.upstream_commit if built else None,
                "build_name": built.name if built else None,
                "sweep_id": sweep_id,
                "state": state,
                "detail": detail,
                "build_s": build_s,
                "measure_s": measure_s,
            },
        )


def _short(text: str) -> str:
    return text if len(text) <= 240 else text[:237] + "..."


def interrupted_message(bisect_id: int) -> Interrupted:
    return Interrupted(
        f"bisect {bisect_id} interrupted; every finished probe is stored: continue it with "
        f"`orch bisect --resume {bisect_id}` (the same recipe and options)"
    )
