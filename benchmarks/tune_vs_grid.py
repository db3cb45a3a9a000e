"""orch tune against the full grid: does racing find the grid's best setting for a fraction of its runs?

Per workload: the grid runs every candidate of the space (and plain decoding, and the controls) at 5 repeats, as
`orch run` would, and reads each candidate's speedup over plain decoding with its 95% interval (paired by repeat,
like for like in tokens: tune/race.block_scores); then `orch tune` races the same space with a budget of 30% of the
grid's planned runs. Printed per workload: candidates, the grid's best cell and its interval, tune's outcome, the
winner's speedup in the grid and whether it lies inside the best cell's interval, and the runs each spent. A
benchmark: it prints figures (a machine's noise decides them; nothing is asserted).

Real model (the README's table): Gemma 3 270M Q4_K_M on this CPU, a 49-candidate n-gram space, two workloads: a
literally repetitive continuation (some setting can win) and prose that does not loop (none should).

    .venv/bin/orch models get gemma-3-270m --out models
    ORCH_MODELS=models .venv/bin/python benchmarks/tune_vs_grid.py [--build 0c1e570]
    ORCH_MODELS=<tiny models> .venv/bin/python benchmarks/tune_vs_grid.py --tiny    # tiny models, 60 candidates
    ORCH_MODELS=<tiny models> .venv/bin/python benchmarks/tune_vs_grid.py --quick   # tiny models, seconds

Real draft model (docs/tune.md): the Qwen2.5-Coder 1.5B target with its 0.5B draft, a 24-candidate draft space
(draft_max x draft_min x p_min), the code completion workload, where a draft model should pay if the machine lets it.

    .venv/bin/orch models get qwen2.5-coder-pair --out models
    ORCH_MODELS=models .venv/bin/python benchmarks/tune_vs_grid.py --pair
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
import _where  # noqa: E402  (benchmarks/_where.py: the build and models a benchmark uses)

sys.path.insert(0, str(ROOT))

from orchestrator import store  # noqa: E402
from orchestrator.analyze import stats  # noqa: E402
from orchestrator.build.on_disk import runnable_build  # noqa: E402
from orchestrator.recipe import control  # noqa: E402
from orchestrator.recipe.plan import read_vars  # noqa: E402
from orchestrator.run import recipe_run  # noqa: E402
from orchestrator.store import tune_queries  # noqa: E402
from orchestrator.tune import guards, race, session  # noqa: E402
from orchestrator.tune.race_settings import Budget, plan_references  # noqa: E402
from orchestrator.tune.request import TuneRequest  # noqa: E402

RECIPE = ROOT / "recipes" / "tune.j2"
REAL_SPACE = "ngram-mod,ngram-simple,ngram-map-k,ngram-cache"
TINY_SPACE = "draft-simple,ngram-mod,ngram-simple"
GRID_REPEAT = 5
SHARE = 0.30
PAIR_SPACE = (
    '[[grid]]\n_label = "draft"\nspec = "draft"\ndraft_max = [1, 2, 4, 8]\ndraft_min = [0, 2]\n'
    "p_min = [0.0, 0.5, 0.9]\n"
)
PAIR_MODELS = ("target=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "draft=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")


def grid(request: TuneRequest, build, workload: Path, db: Path) -> dict:
    """Every candidate at GRID_REPEAT repeats in one interleaved sweep; each one's speedup and interval.

    A finished grid kept in `db` (--grids) is read instead of run again: the grid does not depend on tune's code,
    and it is most of the benchmark's hour."""
    grids, _, _ = session._space(request, build)
    prepared = session._prepare(request, build, read_vars(workload), grids)
    prepared.database = store.Database(db)
    prepared.plan.repeat = GRID_REPEAT
    timing = db.with_suffix(".json")
    if timing.exists():
        kept = json.loads(timing.read_text())
        sweep_id, seconds = kept["sweep"], kept["seconds"]
    else:
        started = time.monotonic()
        result = recipe_run.run_prepared(prepared, recipe_run.RunOptions(timeout=request.timeout, orch_argv=["grid"]))
        sweep_id, seconds = result.sweep_id, time.monotonic() - started
        timing.write_text(json.dumps({"sweep": sweep_id, "seconds": seconds}))
    with prepared.database.read() as con:
        runs = tune_queries.race_runs(con, [sweep_id])
    baseline = prepared.plan.baseline.name
    names = {p.arm.name for p in prepared.arms if not p.arm.is_control}
    speculating = {p.arm.name for p in prepared.arms if control.speculates(p.executed or p.arm.argv)}
    out = guards.disqualified(runs, names - {baseline}, speculating, allow_output_change=False)
    # each repeat self-contained: its own program term, the classic grid figure
    scores = race.block_scores(runs, baseline, names, plan_references(prepared), pool_programs=False)
    cells = {}
    for name in names - set(out):
        value = (
            stats.paired_ratio([(1.0, math.exp(s)) for s in scores[name].values()])
            if name != baseline
            else stats.Speedup(1.0, 1.0, 1.0, len(scores[baseline]))
        )
        if value:
            cells[name] = value
    best = max(cells, key=lambda n: cells[n].ratio)
    return {
        "cells": cells,
        "best": best,
        "baseline": baseline,
        "planned": sum(1 for r in runs if r["planned"]),
        "seconds": seconds,
        "candidates": len(names),
        "disqualified": len(out),
        "loops": guards.looping_baseline(runs, baseline),
    }


def tune(request: TuneRequest, workload: Path, budget_runs: int, db: Path) -> dict:
    started = time.monotonic()
    found = session.start(
        TuneRequest(
            **{**request.__dict__, "workloads": (str(workload),), "db": db, "budget": Budget(runs=budget_runs)}
        ),
        argv=["tune_vs_grid"],
        say=lambda line: None,
    )
    return {"answer": found.answers[0], "seconds": time.monotonic() - started}


def row(name: str, g: dict, t: dict) -> dict:
    a = t["answer"]
    best = g["cells"][g["best"]]
    picked = a.winner or next((r["candidate"] for r in a.rows), None)  # the winner, or the tied set's leader
    picked = g["baseline"] if picked and picked.startswith("off") else picked
    in_grid = g["cells"].get(picked)
    if g["best"] == g["baseline"]:  # plain decoding is exact (1x): the pick is as good if it is, or cannot be told
        inside = picked == g["baseline"] or (
            in_grid is not None and in_grid.ci_low is not None and in_grid.ci_low <= 1.0 <= in_grid.ci_high
        )
    else:
        inside = in_grid is not None and best.ci_low is not None and best.ci_low <= in_grid.ratio <= best.ci_high
    outcome = a.winner if a.state == race.WINNER else f"{a.state}: {', '.join(a.tied)}"
    speculating = max((n for n in g["cells"] if n != g["baseline"]), key=lambda n: g["cells"][n].ratio, default=None)
    best_text = f"{g['best']} {_fig(best)}"
    if g["best"] == g["baseline"] and speculating:
        best_text += f" (best setting {speculating} {_fig(g['cells'][speculating])})"
    return {
        "workload": name,
        "candidates": g["candidates"],
        "grid best": best_text,
        "tune": outcome,
        "tune pick in grid": f"{picked} {_fig(in_grid)} (rank {_rank(g['cells'], picked)} of "
        f"{len(g['cells'])}; {'inside' if inside else 'OUTSIDE'} best's interval, as are "
        f"{_inside(g['cells'], best, g['best'] == g['baseline'])})",
        "grid runs": g["planned"],
        "tune runs": a.runs,
        "share": f"{a.runs / g['planned']:.0%}",
        "grid s": f"{g['seconds']:.0f}",
        "tune s": f"{t['seconds']:.0f}",
    }


def _rank(cells: dict, name: str | None) -> str:
    return str(1 + sorted(cells, key=lambda n: -cells[n].ratio).index(name)) if name in cells else "-"


def _inside(cells: dict, best, baseline_best: bool) -> int:
    """How many cells' speedups lie inside the best cell's interval: how much the grid itself can tell apart (with
    plain decoding best, exact at 1x: the cells whose interval holds 1x)."""
    if baseline_best:
        return sum(1 for c in cells.values() if c.ci_low is not None and c.ci_low <= 1.0 <= c.ci_high) + 1
    return sum(1 for c in cells.values() if best.ci_low <= c.ratio <= best.ci_high)


def _fig(value) -> str:
    if value is None:
        return "-"
    if value.ci_low is None:
        return f"{value.ratio:.2f}x"
    return f"{value.ratio:.2f}x [{value.ci_low:.2f}, {value.ci_high:.2f}]"


def _workloads(names: str) -> list[Path]:
    return [ROOT / "recipes" / "workloads" / f"{w}.toml" for w in names.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="0c1e570")
    parser.add_argument("--quick", action="store_true", help="tiny models, a 4-candidate draft space: seconds")
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="tiny models (ORCH_MODELS), a 60-candidate space of draft and n-gram settings: minutes",
    )
    parser.add_argument(
        "--pair",
        action="store_true",
        help="the Qwen2.5-Coder 1.5B target and 0.5B draft "
        "(ORCH_MODELS), a 24-candidate draft space, the code completion workload: about 22 minutes",
    )
    parser.add_argument(
        "--workloads",
        help="comma-separated names in recipes/workloads/ (default: repeat_list,prose; code_complete with --pair)",
    )
    parser.add_argument(
        "--grids",
        type=Path,
        help="keep each workload's finished grid here and read it on the next "
        "call instead of running it again (tune against the same grid)",
    )
    parser.add_argument("--grid-only", action="store_true", help="run (or read) the grids, not tune")
    args = parser.parse_args()
    build = runnable_build(_where.project(args.build, tiny=args.quick or args.tiny))
    with tempfile.TemporaryDirectory(prefix="tune-vs-grid-") as tmp:
        if args.quick:
            space = Path(tmp) / "space.toml"
            space.write_text('[[grid]]\n_label = "draft"\nspec = "draft"\ndraft_max = [2, 8]\ndraft_min = [0, 2]\n')
            request = TuneRequest(
                recipe=RECIPE,
                build_ref=build.name,
                space=str(space),
                overrides=("target=tiny-target.gguf", "draft=tiny-draft.gguf", "threads=1", "n_predict=16"),
                db=Path(tmp) / "tune.duckdb",
                timeout=120,
            )
            workloads = [ROOT / "recipes" / "workloads" / "short_fact.toml"]
        elif args.pair:
            space = Path(tmp) / "space.toml"
            space.write_text(PAIR_SPACE)
            request = TuneRequest(
                recipe=RECIPE,
                build_ref=build.name,
                space=str(space),
                overrides=(*PAIR_MODELS, f"threads={os.cpu_count()}"),
                db=Path(tmp) / "tune.duckdb",
            )
            workloads = _workloads(args.workloads or "code_complete")
        elif args.tiny:
            request = TuneRequest(
                recipe=RECIPE,
                build_ref=build.name,
                space=TINY_SPACE,
                overrides=("target=tiny-target.gguf", "draft=tiny-draft.gguf", "threads=1"),
                db=Path(tmp) / "tune.duckdb",
                timeout=120,
            )
            workloads = _workloads(args.workloads or "repeat_list,prose")
        else:
            request = TuneRequest(
                recipe=RECIPE,
                build_ref=build.name,
                space=REAL_SPACE,
                overrides=(f"threads={os.cpu_count()}",),
                db=Path(tmp) / "tune.duckdb",
            )
            workloads = _workloads(args.workloads or "repeat_list,prose")
        rows = []
        grids = args.grids or Path(tmp)
        grids.mkdir(parents=True, exist_ok=True)
        for workload in workloads:
            g = grid(request, build, workload, grids / f"grid-{workload.stem}.duckdb")
            if g["loops"]:
                print(f"{workload.stem}: plain decoding loops, so tune refuses it; skipped")
                continue
            print(
                f"{workload.stem}: grid best {g['best']} {_fig(g['cells'][g['best']])}, {g['planned']} runs in "
                f"{g['seconds']:.0f}s",
                flush=True,
            )
            if args.grid_only:
                continue
            t = tune(request, workload, int(SHARE * g["planned"]), grids / f"tune-{workload.stem}.duckdb")
            rows.append(row(workload.stem, g, t))
            print(
                f"{workload.stem}: grid {g['planned']} runs in {g['seconds']:.0f}s; tune {t['answer'].verdict}",
                flush=True,
            )
    from orchestrator import tables

    print()
    models = (
        "tiny models"
        if args.quick or args.tiny
        else "Qwen2.5-Coder 1.5B Q4_K_M with its 0.5B draft"
        if args.pair
        else "Gemma 3 270M Q4_K_M"
    )
    print(
        f"tune vs grid on build {build.name}, {models}, grid at "
        f"{GRID_REPEAT} repeats, tune's budget {SHARE:.0%} of the grid's planned runs:"
    )
    print(tables.render(rows, "md" if not args.quick else "table"))


if __name__ == "__main__":
    main()
