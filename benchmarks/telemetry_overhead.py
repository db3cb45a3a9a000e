"""What the telemetry sampler costs: decode tok/s of recipe A's draft arm with and without it.

Runs `orch run` on the tiny models, alternating telemetry on (default 200 ms) and off, so drift hits both
alike, and prints each side's mean, 95% interval and the ratio. A benchmark, not a test: it prints figures.

    .venv/bin/python benchmarks/telemetry_overhead.py [--pairs 10] [--build 0c1e570] [--interval 0.2] [--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from orchestrator.analyze import rank_test, stats

ROOT = Path(__file__).resolve().parents[1]
import _where  # noqa: E402  (benchmarks/_where.py: the build and models a benchmark uses)


def one_sweep(orch: str, build: str, interval: float, db: Path, repeat: int) -> list[float]:
    subprocess.run(
        [
            orch,
            "run",
            str(ROOT / "recipes" / "recipe_a.j2"),
            "--vars",
            str(ROOT / "recipes" / "tiny.toml"),
            "--build",
            build,
            "--repeat",
            str(repeat),
            "--telemetry-interval",
            str(interval),
            "--db",
            str(db),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    out = subprocess.run(
        [
            orch,
            "query",
            "SELECT m.decode_tps FROM runs r JOIN metrics m ON m.run_id = r.id "
            "WHERE r.sweep_id = (SELECT max(id) FROM sweeps) AND r.arm = 'draft' AND r.status = 'ok'",
            "--format",
            "json",
            "--db",
            str(db),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [row["decode_tps"] for row in json.loads(out)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10, help="on/off sweep pairs")
    parser.add_argument("--repeat", type=int, default=3, help="runs per sweep")
    parser.add_argument("--build", default="0c1e570")
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--quick", action="store_true", help="the smallest inputs, seconds: a check that it works")
    args = parser.parse_args()
    args.build = _where.project(args.build)
    if args.quick:
        args.pairs, args.repeat = 2, 1
    orch = str(Path(sys.executable).parent / "orch")
    on, off = [], []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "overhead.duckdb"
        for i in range(args.pairs):
            for interval, sink in ((args.interval, on), (0, off)) if i % 2 == 0 else ((0, off), (args.interval, on)):
                sink += one_sweep(orch, args.build, interval, db, args.repeat)
    for label, xs in (("telemetry on ", on), ("telemetry off", off)):
        d = stats.describe(xs)
        print(f"{label}: n={d.n} mean {d.mean:.1f} tok/s, 95% CI {d.ci_low:.1f}-{d.ci_high:.1f}, CV {d.cv:.1%}")
    ratio = stats.ratio_of_means(off, on)
    print(
        f"on/off: {ratio.ratio:.3f} (95% CI {ratio.ci_low:.3f}-{ratio.ci_high:.3f}), "
        f"Mann-Whitney p = {rank_test.mann_whitney_u(on, off):.3f}"
    )


if __name__ == "__main__":
    main()
