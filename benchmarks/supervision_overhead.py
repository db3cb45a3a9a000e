"""What supervision costs: the decode tok/s orch stores for recipe A's draft arm against the same argv run bare.

Renders the arm's executed argv with `orch run --dry-run`, then alternates (in both orders, so drift hits both
sides alike) a bare run of that argv, parsed with orch's own parser, and `orch run --repeat 1` (telemetry sampler
on), reading the draft run's stored decode tok/s. Prints each side's mean with a 95% interval, the paired ratio
(orch / bare, geometric mean of per-pair ratios, t-interval on logs) and the ratio of means. A benchmark: it
prints figures.

    .venv/bin/python benchmarks/supervision_overhead.py [--pairs 8] [--build 0c1e570] [--interval 0.2] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

from orchestrator import parse
from orchestrator.analyze import stats

ROOT = Path(__file__).resolve().parents[1]
import _where  # noqa: E402  (benchmarks/_where.py: the build and models a benchmark uses)

RECIPE = ["run", str(ROOT / "recipes" / "recipe_a.j2"), "--vars", str(ROOT / "recipes" / "tiny.toml")]


def executed_argv(orch: str, build: str) -> list[str]:
    out = subprocess.run(
        [orch, *RECIPE, "--build", build, "--dry-run", "--json"], check=True, capture_output=True, text=True
    ).stdout
    return next(arm["executed"] for arm in json.loads(out)["arms"] if arm["arm"] == "draft")


def bare(argv: list[str], attempts: int = 3) -> float:
    """The bare run's decode tok/s. A log that lost its last lines (llama.cpp's asynchronous logger at exit on a busy
    machine: run/sweep.lost_its_tail) has no speed: run again, as orch does."""
    for _ in range(attempts):
        res = subprocess.run(argv, capture_output=True, text=True, errors="replace", check=True)
        speed = parse.parse_run(res.stdout, res.stderr).metrics.get("decode_tps")
        if speed:
            return speed
    raise SystemExit(f"the bare run printed no decode speed in {attempts} attempts: {' '.join(argv)}")


def supervised(orch: str, build: str, db: Path, interval: float) -> float:
    subprocess.run(
        [orch, *RECIPE, "--build", build, "--repeat", "1", "--telemetry-interval", str(interval), "--db", str(db)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    out = subprocess.run(
        [
            orch,
            "query",
            "SELECT m.decode_tps FROM runs r JOIN metrics m ON m.run_id = r.id WHERE "
            "r.sweep_id = (SELECT max(id) FROM sweeps) AND r.arm = 'draft' AND r.status = 'ok'",
            "--format",
            "json",
            "--db",
            str(db),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)[0]["decode_tps"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--build", default="0c1e570")
    parser.add_argument("--interval", type=float, default=0.2, help="telemetry interval of the orch side")
    parser.add_argument("--quick", action="store_true", help="the smallest inputs, seconds: a check that it works")
    args = parser.parse_args()
    args.build = _where.project(args.build)
    if args.quick:
        args.pairs = 2
    orch = str(Path(sys.executable).parent / "orch")
    argv = executed_argv(orch, args.build)
    bare_tps, orch_tps = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "supervision.duckdb"
        for i in range(args.pairs):
            sides = [("bare", lambda: bare(argv)), ("orch", lambda: supervised(orch, args.build, db, args.interval))]
            for name, measure in sides if i % 2 == 0 else sides[::-1]:
                (bare_tps if name == "bare" else orch_tps)[i] = measure()
    for label, xs in (("bare", bare_tps), ("orch", orch_tps)):
        d = stats.describe(list(xs.values()))
        print(f"{label}: n={d.n} mean {d.mean:.1f} tok/s [{d.ci_low:.1f}, {d.ci_high:.1f}], CV {d.cv:.1%}")
    # paired by pair index: the t-interval of the log ratios, exponentiated (as store/figures defines a speedup)
    logs = stats.describe([math.log(orch_tps[i] / bare_tps[i]) for i in bare_tps])
    means = stats.ratio_of_means(list(bare_tps.values()), list(orch_tps.values()))
    print(
        f"orch/bare paired: {math.exp(logs.mean):.3f} [{math.exp(logs.ci_low):.3f}, {math.exp(logs.ci_high):.3f}] "
        f"over {logs.n} pairs; "
        f"ratio of means {means.ratio:.3f} [{means.ci_low:.3f}, {means.ci_high:.3f}]"
    )


if __name__ == "__main__":
    main()
