"""How fast `orch export` and `orch import` move results: a synthetic database of sweeps with telemetry-heavy runs.

Builds (in a temporary folder) a results file of S sweeps x R runs, each run with metrics, two logs, Q requests and
T telemetry samples, exports it, imports the export into an empty file, imports it again (every row present: the
idempotent path), and imports the results file itself. Prints rows, sizes and seconds.

    .venv/bin/python benchmarks/exchange_speed.py [--sweeps 20] [--runs 30] [--requests 8] [--telemetry 500] [--quick]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from orchestrator import store
from orchestrator.store import exchange


def make(path: Path, sweeps: int, runs: int, requests: int, telemetry: int) -> int:
    rows = 0
    with store.opened(path) as con:
        for s in range(sweeps):
            sweep_id = store.create_sweep(
                con,
                {
                    "recipe_path": f"r{s}.j2",
                    "recipe_hash": str(s),
                    "recipe_text": "t",
                    "status": "done",
                    "host_name": "box",
                    "started_at": store.utcnow(),
                },
            )
            for r in range(runs):
                run_id = store.insert_run(
                    con,
                    {
                        "sweep_id": sweep_id,
                        "arm": f"arm{r % 5}",
                        "repeat_index": r // 5,
                        "status": "ok",
                        "params": {"r": r},
                    },
                )
                con.execute(
                    "INSERT INTO metrics (run_id, decode_tps, acceptance) VALUES (?, ?, ?)", [run_id, 100.0 + r, 0.5]
                )
                store.save_logs(con, run_id, {"stdout": b"x" * 2000, "stderr": b"y" * 20000})
                # In bulk (executemany is row by row): what the sweep's writes would have stored.
                con.execute(
                    "INSERT INTO requests (run_id, seq, status, predicted_n) SELECT ?, range, 'ok', 64 FROM range(?)",
                    [run_id, requests],
                )
                con.execute(
                    "INSERT INTO telemetry (run_id, t, rss_bytes, cpu_pct) SELECT ?, 0.2 * range, range, 99.0 "
                    "FROM range(?)",
                    [run_id, telemetry],
                )
                rows += 1 + 1 + 2 + requests + telemetry
            rows += 1
    return rows


def timed(label: str, fn, rows: int) -> None:
    start = time.perf_counter()
    fn()
    took = time.perf_counter() - start
    print(f"{label:<44} {took:7.2f}s  {rows / took:>10,.0f} rows/s")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sweeps", type=int, default=20)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--requests", type=int, default=8)
    p.add_argument("--telemetry", type=int, default=500)
    p.add_argument("--quick", action="store_true", help="the smallest inputs, seconds: a check that it works")
    a = p.parse_args()
    if a.quick:
        a.sweeps, a.runs, a.requests, a.telemetry = 2, 3, 2, 10
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rows = make(tmp / "a.duckdb", a.sweeps, a.runs, a.requests, a.telemetry)
        print(
            f"{a.sweeps} sweeps x {a.runs} runs, {a.requests} requests and {a.telemetry} telemetry samples per run: "
            f"{rows:,} rows, results file {(tmp / 'a.duckdb').stat().st_size / 2**20:.1f} MiB"
        )

        def export():
            with store.opened(tmp / "a.duckdb", read_only=True) as con:
                exchange.export(con, tmp / "out")

        def into(db: str, source: Path):
            def go():
                with store.opened(tmp / db) as con:
                    exchange.import_source(con, source)

            return go

        timed("export", export, rows)
        size = sum(f.stat().st_size for f in (tmp / "out").iterdir()) / 2**20
        print(f"{'':<44} export {size:.1f} MiB")
        timed("import into an empty file", into("c.duckdb", tmp / "out"), rows)
        timed("import again (every row present)", into("c.duckdb", tmp / "out"), rows)
        timed("import the results file into another", into("d.duckdb", tmp / "a.duckdb"), rows)


if __name__ == "__main__":
    main()
