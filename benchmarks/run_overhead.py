"""orch's own time between runs: sweep wall minus the sum of its runs' wall, per run, and where it goes.

Runs one sweep of N short runs (recipe B's one arm on the tiny target: 8 tokens, one thread, telemetry on) through
the code `orch run` uses, in this process, with a timer around each piece of orch's own work between one child's
exit and the next child's start: the results file's writes (open, write, close), parsing and classifying the logs,
the telemetry sampler, progress lines, and the sweep's end (output parity, the kept summary). Prints the sweep's
wall, the sum of the runs' wall (each child's own, from launch to exit), the difference per run, and the split.
A benchmark: it prints figures.

    make build    # the build in ./builds; tiny models made in ./models if missing ($ORCH_BUILDS_DIR, $ORCH_MODELS)
    .venv/bin/python benchmarks/run_overhead.py [--runs 200] [--build 0c1e570] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
import _where  # noqa: E402  (benchmarks/_where.py: the build and models a benchmark uses)

SPENT: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)


def timed(owner, name: str, label: str) -> None:
    """Wrap owner.name so its calls add to SPENT[label] (context managers: the whole `with` block)."""
    original = getattr(owner, name)

    if name == "write":

        @contextmanager
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                with original(*args, **kwargs) as con:
                    yield con
            finally:
                SPENT[label] += time.perf_counter() - start
                CALLS[label] += 1
    else:

        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                SPENT[label] += time.perf_counter() - start
                CALLS[label] += 1

    setattr(owner, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="runs in the sweep")
    parser.add_argument("--build", default="0c1e570")
    parser.add_argument("--quick", action="store_true", help="10 runs: a check that the benchmark works")
    args = parser.parse_args()
    args.build = _where.project(args.build)
    runs = 10 if args.quick else args.runs

    from orchestrator import parse, proc, store
    from orchestrator.analyze import summaries
    from orchestrator.run import measuring, one_run, sweep, sweep_open
    from orchestrator.run.progress import Progress
    from orchestrator.run.recipe_run import RecipeRequest, prepare_recipe

    timed(store.Database, "write", "results file writes (open, write, close)")
    timed(parse, "parse_run", "parsing logs")
    timed(parse, "run_failure", "classifying failures")
    timed(measuring.MeasurementSettings, "sampler", "telemetry sampler start")
    timed(one_run, "_stop", "telemetry sampler stop")
    timed(Progress, "advance", "progress lines")
    timed(store, "mark_output_differences", "sweep end: output parity")
    timed(summaries, "keep", "sweep end: kept summary")
    child = defaultdict(float)
    run = proc.run

    def child_run(*a, **k):
        res = run(*a, **k)
        child["wall"] += res.wall_s
        return res

    proc.run = child_run
    with tempfile.TemporaryDirectory() as tmp:
        request = RecipeRequest(
            recipe=ROOT / "recipes" / "recipe_b.j2",
            build_ref=args.build,
            vars_file=ROOT / "recipes" / "tiny_single.toml",
            overrides=("n_predict=8",),
            repeat=runs,
            db=Path(tmp) / "overhead.duckdb",
        )
        prepared = prepare_recipe(request)
        opened = sweep_open.open_sweep(
            prepared.database, prepared.plan, prepared.build, prepared.arms, orch_argv=sys.argv
        )
        SPENT.clear(), CALLS.clear()  # only what the sweep's execution spends
        start = time.perf_counter()
        result = sweep.execute(
            prepared.database,
            opened,
            timeout=60,
            telemetry_interval=0.2,
            progress=Progress(len(opened.slots), stream=open(os.devnull, "w"), tty=False),
        )
        wall = time.perf_counter() - start
    assert result.done == runs, result
    between = wall - child["wall"]
    print(
        f"sweep of {runs} runs: wall {wall:.2f} s, the runs' own wall {child['wall']:.2f} s "
        f"({child['wall'] / runs * 1000:.0f} ms each)"
    )
    print(f"orch between runs: {between * 1000 / runs:.1f} ms per run ({between:.2f} s in all)")
    for label, seconds in sorted(SPENT.items(), key=lambda kv: -kv[1]):
        print(f"  {label:45s} {seconds * 1000 / runs:7.1f} ms per run ({CALLS[label]} calls, {seconds:.2f} s)")


if __name__ == "__main__":
    main()
