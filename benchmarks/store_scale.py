"""How `orch summary` and `orch compare` scale: a real results database grown to N stored runs by copying its sweeps.

Copies every sweep (runs, metrics, requests) with fresh ids until the runs table holds --runs rows; every
second copy is relabelled as another build ("<name>+head") so compare has two builds with the same tests.
Then it runs the real commands, `orch summary` over every sweep and `orch compare` of the two builds, and
prints each one's wall time, CPU time (user + sys) and peak RSS (os.wait4 of that process). A benchmark: it prints figures.
--orch times another orch executable on the same grown file (an older checkout's, for before/after).

    make demo   # any results.duckdb with real sweeps will do
    .venv/bin/python benchmarks/store_scale.py --seed results.duckdb --runs 100000
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import duckdb


def grow(db: Path, target_runs: int) -> tuple[int, int, str]:
    con = duckdb.connect(str(db))
    build = con.execute("SELECT build_name FROM sweeps ORDER BY id LIMIT 1").fetchone()[0]
    copy = 0
    while (runs := con.execute("SELECT count(*) FROM runs").fetchone()[0]) < target_runs:
        copy += 1
        sweep_off = con.execute("SELECT max(id) FROM sweeps").fetchone()[0]
        run_off = con.execute("SELECT max(id) FROM runs").fetchone()[0]
        label = f"{build}+head" if copy % 2 else build
        con.execute("BEGIN")
        con.execute("CREATE TEMP TABLE s AS SELECT * FROM sweeps")
        con.execute("UPDATE s SET id = id + ?, build_name = CASE WHEN build_name = ? THEN ? ELSE build_name END",
                    [sweep_off, build, label])
        con.execute("INSERT INTO sweeps SELECT * FROM s")
        for table, key in (("runs", "id"), ("metrics", "run_id"), ("requests", "run_id")):
            con.execute(f"CREATE TEMP TABLE t AS SELECT * FROM {table}")
            extra = ", sweep_id = sweep_id + ?" if table == "runs" else ""
            con.execute(f"UPDATE t SET {key} = {key} + ?{extra}", [run_off, sweep_off] if extra else [run_off])
            con.execute(f"INSERT INTO {table} SELECT * FROM t")
            con.execute("DROP TABLE t")
        con.execute("DROP TABLE s")
        con.execute("COMMIT")
    sweeps = con.execute("SELECT count(*) FROM sweeps").fetchone()[0]
    # The relabelled build must exist for `orch compare --head` to resolve it.
    con.execute("CREATE TEMP TABLE b AS SELECT * FROM builds WHERE name = ?", [build])
    con.execute("UPDATE b SET id = id || '+head', name = name || '+head'")
    con.execute("INSERT INTO builds SELECT * FROM b")
    con.close()
    return runs, sweeps, build


def measure(argv: list[str]) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MiB, CPU seconds: user + sys, DuckDB's threads included) of one command, which must
    succeed. On a shared machine the wall time waits for other work; the CPU time much less."""
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: 8,192 verdict lines would fill a pipe and stall it
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status):
            err.seek(0)
            sys.exit(f"{' '.join(argv)} failed: {err.read().decode()[-500:]}")
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=Path, default=Path("results.duckdb"), help="a results database with sweeps")
    parser.add_argument("--runs", type=int, default=100_000, help="grow the runs table to this many rows")
    parser.add_argument("--repeat", type=int, default=3, help="timings per command")
    parser.add_argument("--orch", default=str(Path(sys.executable).parent / "orch"), help="orch executable to time")
    args = parser.parse_args()
    if not args.seed.exists():
        sys.exit(f"no seed database {args.seed}: run `make demo` (or any orch run) first, or pass --seed")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "grown.duckdb"
        shutil.copy(args.seed, db)
        from orchestrator import store

        store.connect(db).close()  # migrate the copy first
        start = time.perf_counter()
        # Grown in a child: a child inherits its parent's peak RSS, so the timed commands start from a small one.
        with ProcessPoolExecutor(max_workers=1) as pool:
            runs, sweeps, build = pool.submit(grow, db, args.runs).result()
        print(f"grew {args.seed} to {runs} runs in {sweeps} sweeps ({time.perf_counter() - start:.0f}s, "
              f"{db.stat().st_size >> 20} MiB)")
        commands = {"summary": [args.orch, "summary", "--last", str(sweeps), "--format", "json", "--db", str(db)],
                    "summary-table": [args.orch, "summary", "--last", str(sweeps), "--db", str(db)],
                    "summary-1": [args.orch, "summary", "--db", str(db)],  # the newest sweep: the everyday call
                    "compare": [args.orch, "compare", "--base", build, "--head", f"{build}+head", "--format", "json",
                                "--db", str(db)],
                    "startup": [args.orch, "--version"]}  # interpreter and imports alone, for scale
        for what, argv in commands.items():
            results = [measure(argv) for _ in range(args.repeat)]
            secs, cpu = sorted(r[0] for r in results), sorted(r[2] for r in results)
            print(f"{what:>13}: {secs[0]:.2f}s best, {secs[len(secs) // 2]:.2f}s median of {len(secs)}, "
                  f"CPU {cpu[0]:.2f}s best, {cpu[len(cpu) // 2]:.2f}s median, peak RSS {max(r[1] for r in results):.0f} MiB")


if __name__ == "__main__":
    main()
